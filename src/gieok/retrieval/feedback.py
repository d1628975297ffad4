"""Feedback terms: the words the best candidates of a Korean query share, searched as keywords beside it.

A Korean question over English memory shares almost no word with the rows that answer it: its lexical arm
finds little, and the bridge's translations only some of it. The rows the vector search ranks best, though,
are mostly about the question's subject, and the words several of them share (a name, "pottery", "adoption")
are the subject's words in the memory's own language. Searched as keywords at a fraction of the query words'
weight, they lift the other rows about the same subject that the vector search ranked lower: pseudo-relevance
feedback (RM3's idea, with counts in place of its term weights). Nothing is learnt or stored; it costs one
more full-text query.

Measured on dev (recall@5 / @10, base → feedback from the best 8 rows, words shared by 3 of them, 4 words,
weight 0.3, 30 rows from the feedback search): Korean questions over English memory 0.635 / 0.735 → 0.630 /
0.755; Korean memory (ko 30) 0.701 / 0.812 → 0.715 / 0.822. English questions over English memory gained
nothing (0.853 → 0.852 at @10; 0.849 from the best 5 rows), so it is on for Korean queries only, where the
query's own words meet least. Neighbouring settings (weight 0.2–0.5, 3–6 words, 8–10 rows, words shared by
2) all stayed above the base: xq recall@10 0.740–0.759, ko 30 0.817–0.822.
"""

from __future__ import annotations

from collections.abc import Iterable

from gieok.core.text import query_terms

# A word must be shared by this many of the best rows to count (two often share only a filler).
MIN_SHARED = 3
# At most this many words, the most shared first (ties in the rows' order).
MAX_TERMS = 4


def feedback_terms(contents: Iterable[str], have: Iterable[list[str]], *, min_shared: int = MIN_SHARED,
                   max_terms: int = MAX_TERMS) -> list[list[str]]:
    """The full-text terms (as `query_terms` makes them) that at least `min_shared` of `contents` hold and the
    query does not (`have`), the most shared first."""
    known = {tuple(t) for t in have}
    counts: dict[tuple[str, ...], int] = {}
    for text in contents:
        for t in dict.fromkeys(tuple(t) for t in query_terms(text)):
            if t not in known:
                counts[t] = counts.get(t, 0) + 1
    shared = [t for t, n in sorted(counts.items(), key=lambda kv: -kv[1]) if n >= min_shared]
    return [list(t) for t in shared[:max_terms]]

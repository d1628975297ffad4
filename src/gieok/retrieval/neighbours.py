"""A chat message's session neighbours in its score (ranking's `r_neighbour`): the answer to a question is often
the reply to, or the set-up of, the message closest to it."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from gieok.core.models import SearchFilters
from gieok.retrieval.language_direction import LanguageDirections
from gieok.retrieval.ranking import Candidate, own_relevance
from gieok.retrieval.recipes import Recipe
from gieok.retrieval.scripts import written_in_english
from gieok.store.base import Store, Vector


async def neighbour_cosines(store: Store, model: str, f: SearchFilters, cands: Mapping[str, Candidate],
                            qvec: Vector, rendered: list[Vector], recipe: Recipe,
                            lang: LanguageDirections | None = None) -> None:
    """Each chat candidate's best cosine among the messages just before and after it in its session (ranking's
    `r_neighbour`), compared as its own cosine is (an English row's: the mean with the bridge's rendering), and
    with `lang` how far it moves with the language set aside, as `search` sets it aside for the candidates
    (`Candidate.neighbour_shift`).
    The store leaves out neighbours `f` does not let the caller see."""
    ids = sorted(cands, key=lambda k: -own_relevance(cands[k], recipe))[:recipe.neighbour_candidates]
    near = await store.neighbour_vectors(f, ids, model)

    # How far each neighbour that is not a candidate moves with the language set aside: one product for all.
    outside = {nid: v for pairs in near.values() for nid, v in pairs
               if (n := cands.get(nid)) is None or n.cos is None}
    shifts: dict[str, float] = {}
    if lang is not None and outside:
        vecs = np.stack(list(outside.values()))
        shifts = dict(zip(outside, lang.shifts(qvec, vecs).tolist(), strict=True))

    def cosine(nid: str, v: Vector, english: bool) -> tuple[float, float]:
        """The neighbour's cosine, and with the language set aside."""
        # A neighbour that is itself a candidate counts with its own cosine: in a session mixing Korean and
        # English, an English reply seen from its Korean neighbour would otherwise be compared raw, above its own
        # bridged cosine, and lift the Korean message over the reply that answers the question.
        if (n := cands.get(nid)) is not None and n.cos is not None:
            return n.cos, n.cos + n.language_shift
        own = float(v @ qvec)
        shift = shifts.get(nid, 0.0)
        if english:
            mean = (own + float(v @ rendered[0])) / 2
            return mean, mean + shift / 2
        return own, own + shift

    aside: dict[str, float] = {}
    for mid, pairs in near.items():
        c = cands[mid]
        english = bool(rendered) and written_in_english(c.memory)
        found = [cosine(nid, v, english) for nid, v in pairs]
        c.neighbour_cos = max(raw for raw, _ in found)
        c.neighbour_ids = tuple(nid for nid, _v in pairs)
        aside[mid] = max(moved for _, moved in found)
    for mid, pairs in near.items():
        for nid, _v in pairs:
            if nid not in near and (n := cands.get(nid)) is not None:
                # Being neighbours goes both ways: a candidate whose own were not looked up (its own relevance
                # was below the best `neighbour_candidates`) has at least this one.
                m = cands[mid]
                n.neighbour_cos = max(n.neighbour_cos or 0.0, m.cos or 0.0)
                n.neighbour_ids = (*n.neighbour_ids, mid)
                aside[nid] = max(aside.get(nid, 0.0), (m.cos or 0.0) + m.language_shift)
    for mid, moved in aside.items():
        if (n := cands[mid]).neighbour_cos is not None:
            n.neighbour_shift = moved - n.neighbour_cos
    for mid in ids:
        if mid not in near and (c := cands[mid]).cos is not None and c.neighbour_cos is None:
            # Nothing beside it to read: a note someone saved, a message alone in its session (or whose
            # neighbours are not embedded yet, or not the caller's to see). Ranking takes it as its own context.
            c.alone = True

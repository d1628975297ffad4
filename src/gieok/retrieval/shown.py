"""Which candidates a search shows, beyond the verdict on whether it found anything (gieok.retrieval.verdict):
a row tied to the query by its cosine alone, and a keyword match that met the query's word by chance. Both
showed in a new user's few notes what a large memory hides (measured: `gieok bench notes`, docs/measurements.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

import numpy as np

from gieok.providers.embed.base import Embedder, Vector
from gieok.retrieval.hubs import Probes
from gieok.retrieval.model_cosines import model_chance_cosines, model_verdict_margin
from gieok.retrieval.ranking import Candidate
from gieok.retrieval.scripts import HANGUL, LATIN, text_script, written_in_english
from gieok.retrieval.verdict import pair_band


def _script(c: Candidate) -> str:
    """The script a candidate's memory is written in, as the per-pair tables key it."""
    return LATIN if written_in_english(c.memory) else HANGUL


def set_cosine_only_floors(cands: Iterable[Candidate], query: str,
                           pair_thresholds: Mapping[tuple[str, str], float], no_match: float,
                           probes: Probes | None = None) -> None:
    """A row tied to the query by its cosine alone (no shared word, date, tag, title or substring) is shown beside
    a match only if that cosine would count as a match itself: its (query script, memory script) pair's no-match
    threshold (`Candidate.cos_only_floor`, judged in `rank`). Over a few pinned notes, "when do we deploy?" listed
    the staging-server and the ruff notes (0.80) under the deploy note, and "recipe" four unrelated English notes
    under the kimchi stew's; the level of chance, the floor before, let through rows between it and the
    threshold. Dev recall is identical to three decimals (English, Korean, both cross-lingual sets): a chat row
    shares at least its speaker's name with most questions.

    With the model's `probes`, the floor is also the row's own reach (gieok.retrieval.hubs): a row near every
    question is not shown for being near this one. "staging DB 비밀번호는 … infra 볼트에 있음" stood under the
    answers to "부모님 생신", "보리 병원 어디야" and three other Korean questions at 0.80–0.82, against a reach of
    0.822. `gieok bench notes`, set b: unrelated notes beside an answer 62 → 54, notes shown for unanswerable
    questions 55 → 54 (set a 26 → 24, 30 → 30), no answer lost; every dev set identical to three decimals."""
    floors = pair_band(query, pair_thresholds, no_match)[0]
    with_vectors: list[tuple[Candidate, Vector]] = []
    for c in cands:
        c.cos_only_floor = floors.get(_script(c), no_match)
        if c.vector is not None:
            with_vectors.append((c, c.vector))
    if probes is not None and with_vectors:
        reach = probes.row_reach(np.stack([v for _c, v in with_vectors]), text_script(query))
        for (c, _v), r in zip(with_vectors, reach, strict=True):
            c.cos_only_floor = max(c.cos_only_floor, float(r))


def stray_word_match(embedder: Embedder | None, query: str) -> Callable[[Candidate], bool] | None:
    """Whether a keyword match is further from the query in meaning than an unrelated text is: its cosine below
    its pair's level of chance by more than the verdict's margin (where measured for the model; None where not).
    Only a row in the query's own script, whose shared word is a literal one: a row met through a translation has
    the lower, looser cosines of two languages (judged as well, English questions over Korean chat with English
    chat beside lost 0.009 at recall@10; judged in one script only, no dev set loses)."""
    chance = model_chance_cosines(embedder.name) if embedder is not None else {}
    if not chance or embedder is None:
        return None
    q_script, below = text_script(query), model_verdict_margin(embedder.name)

    def stray(c: Candidate) -> bool:
        script = _script(c)
        level = chance.get((q_script, script)) if script == q_script else None
        return level is not None and c.cos is not None and c.cos < level - below
    return stray

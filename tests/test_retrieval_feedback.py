"""Feedback terms (gieok.retrieval.feedback): the words a Korean query's best candidates share, searched beside
its own words, never deciding whether anything matched."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gieok.core.models import Memory
from gieok.retrieval.feedback import feedback_terms
from gieok.retrieval.ranking import Candidate, rank
from gieok.retrieval.recipes import RECIPES
from tests.conftest import e5_service

NOW = datetime(2025, 6, 1, tzinfo=UTC)
POTTERY = [
    "I signed up for a pottery class at the community studio.",
    "The pottery class teacher showed us how to center clay on the wheel.",
    "My first pottery bowl came out lopsided, but I love how the clay feels.",
    "I glazed two clay mugs at the studio yesterday and fired them in the kiln.",
    "The deployment failed because the database migration was missing.",
    "Our cat Pebble likes to sleep on the warm laptop keyboard.",
    "We moved the weekly planning meeting to Thursday afternoon.",
    "The staging server runs on port 8443 behind the VPN.",
    "My sister is visiting Busan next month for a wedding.",
]


def test_the_words_shared_by_enough_of_the_best_rows_the_query_does_not_have() -> None:
    rows = ["pottery class with clay", "clay on the wheel, pottery again", "clay mugs in the kiln", "a kiln"]
    assert feedback_terms(rows, have=[["potteri"]]) == [["clay"]]
    assert feedback_terms(rows, have=[], min_shared=2)[:2] == [["clay"], ["potteri"]]
    assert len(feedback_terms(rows, have=[], min_shared=1, max_terms=3)) == 3
    # A word repeated in one row counts once; Korean words count by their bigram phrases.
    assert feedback_terms(["clay clay clay", "nothing", "else"], have=[]) == []
    assert feedback_terms(["도자기 수업", "도자기를 샀다", "도자기 가마"], have=[]) == [["도자", "자기"]]


def test_feedback_is_keyword_evidence_at_its_weight_and_says_so() -> None:
    recipe = replace(RECIPES["hybrid"], cos_floor=0.7)
    row = Memory(id="m", user_id="u", content="I glazed two clay mugs", created_at=NOW)
    hit = rank([Candidate(row, cos=0.85, feedback=2.0)], query_tokens=set(), query_text="도자기 수업", now=NOW,
               recipe=recipe, limit=1)[0]
    assert hit.parts["bm25"] == recipe.r_feedback * 2.0 and hit.parts["feedback"] == 2.0
    assert "shares words with the closest matches" in hit.recall_reason
    assert not any(r.startswith("keyword match") for r in hit.recall_reason)
    off = rank([Candidate(row, cos=0.85, feedback=2.0)], query_tokens=set(), query_text="도자기 수업", now=NOW,
               recipe=replace(recipe, r_feedback=0.0), limit=1)[0]
    assert off.parts["bm25"] == 0.0 and "shares words" not in off.recall_reason


async def test_a_korean_query_lifts_the_rows_that_share_its_best_rows_words(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    async with e5_service(tmp_path, POTTERY) as svc:
        f = svc.filters("alice")
        query = "도자기 수업 선생님"
        on = await svc.search(f, query, now=NOW, limit=20)
        off = await svc.search(f, query, now=NOW, limit=20, recipe=replace(RECIPES["hybrid"], r_feedback=0.0))
        assert on.mode == off.mode == "hybrid"
        # "pottery" and "clay", which three of the best rows share, are the feedback words (a translation the
        # best rows confirm counts again): the bowl row, which names no class or teacher, gains by them.
        bowl = {h.memory.content: h for h in on.hits}[POTTERY[2]]
        assert bowl.parts["feedback"] > 0, bowl.parts
        assert bowl.score > {h.memory.content: h for h in off.hits}[POTTERY[2]].score
        assert all(h.parts["feedback"] == 0 for h in on.hits if not {"clay", "pottery"} & set(h.memory.content.split()))
        assert all(h.parts["feedback"] == 0 for h in off.hits)
        # English queries and a search that found nothing close take no feedback.
        english = await svc.search(f, "who teaches the pottery class?", now=NOW)
        assert english.hits and all(h.parts["feedback"] == 0 for h in english.hits)
        for q in ("도자기 수업은 어땠어?", "고양이 사료", "바나나 스무디 레시피"):
            fell = await svc.search(f, q, now=NOW)
            assert fell.mode == "fallback" and all(h.parts["feedback"] == 0 for h in fell.hits), q
        # Where those words are too common for the store to rank all their rows (its cap lowered to 2 rows),
        # they are not searched at all: no feedback, the rest of the search as before.
        monkeypatch.setattr(type(svc.store), "MAX_SCORED_MATCHES", 2)
        capped = await svc.search(f, query, now=NOW, limit=20)
        assert capped.hits and all(h.parts["feedback"] == 0 for h in capped.hits)

"""A "when" question favours, among rows about the same thing, the one that says when (English and Korean)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gieok.core.models import Memory
from gieok.memory.service import MemoryService
from gieok.retrieval.ranking import Candidate, rank
from gieok.retrieval.recipes import RECIPES
from gieok.retrieval.time_words import asks_when, states_time
from tests.conftest import e5_service

NOW = datetime(2025, 6, 1, tzinfo=UTC)


@pytest.mark.parametrize(("query", "want"), [
    ("When did Caroline go to the LGBTQ support group?", True),
    ("when do we deploy billing?", True),
    ("How long has Melanie been practising art?", True),
    ("What year did John start surfing?", True),
    ("Which month was the release?", True),
    ("Remind me what time the standup is", True),
    ("Caroline은 언제 LGBTQ 지원 모임에 갔어?", True),
    ("몇 년 동안 그림을 그렸어?", True),
    ("며칠 걸렸지?", True),
    ("회의가 무슨 요일이야?", True),
    ("What did Caroline research?", False),
    ("Say when you are ready", False),           # "when" not asking for a time
    ("the whenever keyword", False),
    ("요가 수업은 어땠어?", False),
    ("가격 저장", False),
])
def test_asks_when(query: str, want: bool) -> None:
    assert asks_when(query) is want


@pytest.mark.parametrize(("text", "want"), [
    ("I went to a LGBTQ support group yesterday and it was so powerful.", True),
    ("We camped two weekends ago.", True),
    ("Billing moved to the new cluster last Tuesday.", True),
    ("We deploy on Tuesdays", True),
    ("I've been painting for 7 years now.", True),
    ("The release went out on 7 May.", True),
    ("Back in 2022 we used Jenkins.", True),
    ("어제 요가 수업에 처음 갔다.", True),
    ("지난주에 배포했다.", True),
    ("3년 전에 이사 왔어.", True),
    ("금요일마다 회의를 한다.", True),
    ("We hiked all morning and camped by the lake.", True),      # a part of the day, a season
    ("Last night's deploy broke the login page.", True),
    ("The pipeline ran for three hours.", True),
    ("This summer we moved the office to Pangyo.", True),
    ("어젯밤에 배포가 깨졌어.", True),
    ("며칠 전에 고양이를 입양했어.", True),
    ("이틀 동안 서버가 멈췄다.", True),
    ("올여름 판교로 사무실을 옮겼다.", True),
    ("The support group was so welcoming.", False),
    ("You may want to retry the migration.", False),   # "may" the verb, not the month
    ("요가 수업은 정말 좋았다.", False),
    ("가격 정보를 저장한다.", False),
])
def test_states_time(text: str, want: bool) -> None:
    assert states_time(text) is want


def _two_rows() -> tuple[Candidate, Candidate]:
    # Two messages about the same event; the one without a time is a little closer to the question.
    closer = Memory(id="a", user_id="u", content="The support group meeting was so welcoming.", created_at=NOW)
    says_when = Memory(id="b", user_id="u", content="I went to the support group yesterday.", created_at=NOW)
    return Candidate(closer, cos=0.860, bm25=1.0), Candidate(says_when, cos=0.855, bm25=1.0, states_time=True)


def test_the_row_that_says_when_answers_a_when_question() -> None:
    recipe = replace(RECIPES["hybrid"], cos_floor=0.7)
    args = {"query_tokens": {"support", "group"}, "query_text": "When did I go to the support group?", "now": NOW,
            "limit": 2}
    hits = rank(list(_two_rows()), recipe=recipe, **args)  # type: ignore[arg-type]
    assert [h.memory.id for h in hits] == ["b", "a"]
    assert hits[0].parts["when"] > 0.9 and "says when (the query asks when)" in hits[0].recall_reason
    assert hits[1].parts["when"] == 0.0
    # Without the bonus the closer row wins: the order above is the bonus's doing.
    hits = rank(list(_two_rows()), recipe=replace(recipe, r_when=0.0), **args)  # type: ignore[arg-type]
    assert [h.memory.id for h in hits] == ["a", "b"]
    assert not any("says when" in r for h in hits for r in h.recall_reason)


TEXTS = [
    "The support group meeting was so welcoming and everyone shared their stories.",
    "I went to a support group yesterday and it really helped.",
    "요가 수업은 정말 좋았고 선생님도 친절했다.",
    "어제 요가 수업에 처음 갔다.",
]


@pytest.fixture
async def svc(tmp_path: Path) -> AsyncIterator[MemoryService]:
    async with e5_service(tmp_path, TEXTS) as service:
        yield service


@pytest.mark.parametrize(("query", "asks"), [
    ("When did I go to the support group?", True),
    ("What was the support group like?", False),
    ("요가 수업에 언제 갔어?", True),
    ("요가 수업은 어땠어?", False),
])
async def test_search_marks_rows_that_say_when_only_for_when_questions(svc: MemoryService, query: str,
                                                                       asks: bool) -> None:
    out = await svc.search(svc.filters("alice"), query, now=NOW)
    assert out.hits
    marked = {h.memory.content for h in out.hits if h.parts["when"]}
    assert marked == ({t for t in TEXTS if states_time(t)} & {h.memory.content for h in out.hits} if asks else set())
    if asks:
        assert marked, "a when question over rows that say when marks them"
        assert states_time(out.hits[0].memory.content)


async def test_a_query_naming_a_date_leaves_it_to_the_date_bonus(svc: MemoryService) -> None:
    # "When … on 2 May?" names its window: the rows created then are what it asks about, not any row with a time.
    out = await svc.search(svc.filters("alice"), "When did I go to the support group on 2 May 2025?", now=NOW)
    assert out.hits and not any(h.parts["when"] for h in out.hits)
    assert any(h.parts["date"] for h in out.hits)


async def test_the_bonus_for_saying_when_follows_the_rows_relevance(tmp_path: Path) -> None:
    # Saying when tells apart rows about the question's event; a row about something else that happens to
    # name a weekday gets the bonus only in proportion to how relevant it is without it.
    texts = ["We deploy on Tuesdays", "가격 정보는 매주 월요일에 저장한다"]
    async with e5_service(tmp_path, texts, pinned=(0, 1)) as service:
        f = service.filters("alice")
        out = await service.search(f, "when do we deploy?", now=NOW)
        top, *rest = out.hits
        assert top.memory.content == "We deploy on Tuesdays"
        assert rest, "the Korean note is a (weak) candidate: its cross-script cosine clears its threshold"
        assert top.parts["when"] == 1.0           # the most relevant row: the whole bonus
        for h in rest:
            base = h.parts["relevance"] - RECIPES["hybrid"].r_when * h.parts["when"]
            best = top.parts["relevance"] - RECIPES["hybrid"].r_when
            assert 0 < h.parts["when"] < 0.9 and h.parts["when"] == pytest.approx(base / best)

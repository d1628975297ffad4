"""A question about the first or the last time favours the oldest or the newest of the rows about it (English and
Korean)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from gieok.core.models import Hit, Memory
from gieok.memory.service import MemoryService
from gieok.retrieval.order_words import asks_order, order_positions
from gieok.retrieval.ranking import Candidate, rank
from gieok.retrieval.recipes import RECIPES
from tests.conftest import e5_service

NOW = datetime(2026, 12, 1, tzinfo=UTC)


@pytest.mark.parametrize(("query", "want"), [
    ("when did we last deploy the search API?", "last"),
    ("what was the last thing we changed in billing?", "last"),
    ("what was the latest thing I did with Rust?", "last"),
    ("When was the most recent Postgres change?", "last"),
    ("What did Melanie paint recently?", "last"),
    ("what changed in the last release?", "last"),
    ("결제 서비스 마지막으로 배포한 게 언제야?", "last"),
    ("최근에 Rust로 뭐 했어?", "last"),
    ("지난번 배포에서 뭐가 깨졌지?", "last"),
    # How things stand now is the latest of what was written about it.
    ("which database are we on currently?", "last"),
    ("who is the team lead now?", "last"),
    ("what CI do we use these days?", "last"),
    ("do we still run CI on Jenkins?", "last"),
    ("Is Redis used for sessions anymore?", "last"),
    ("지금 쓰는 노트북 뭐야?", "last"),
    ("현재 팀장은 누구야?", "last"),
    ("요새 뭐 배우고 있어?", "last"),
    ("아직도 Jenkins 써?", "last"),
    ("when did we first use Postgres?", "first"),
    ("What was the earliest version we shipped?", "first"),
    ("When did John have his first firefighter call-out?", "first"),
    ("결제 서비스 쿠버네티스에 처음 배포한 게 언제야?", "first"),
    ("최초 릴리스는 언제였어?", "first"),
    # A time, not an order: "last" before a period or a day names a date.
    ("What did I do last week?", None),
    ("What did we ship last Tuesday?", None),
    ("what broke in the last 3 days?", None),
    ("How long did the migration last?", None),       # the verb
    ("Did the fix work at last?", None),
    ("What dance piece won first place?", None),
    ("Where is the first aid kit?", None),
    ("What were the first and the last deploys?", None),   # both: nothing to prefer
    ("지난주에 뭐 했어?", None),
    ("when do we deploy?", None),
    # Everything up to now, not the newest; and "know" is not "now".
    ("how many times have we deployed until now?", None),
    ("what have we learned about Postgres by now?", None),
    ("what do I know about Postgres?", None),
    ("지금까지 배포 몇 번 했어?", None),
    ("현재까지 나온 버그 정리해줘", None),
])
def test_asks_order(query: str, want: str | None) -> None:
    assert asks_order(query) == want


def _at(day: int) -> datetime:
    return datetime(2026, 1, 1, tzinfo=UTC) + timedelta(days=day)


def test_only_the_rows_about_the_subject_are_ordered() -> None:
    times = [_at(1), _at(5), _at(9), _at(20)]
    # The newest row (day 20) is about something else (relevance 0.3 of 1.0): it is not "the last" of them.
    rels = [1.0, 0.9, 0.85, 0.3]
    assert order_positions(times, rels, "last", 0.8) == [0.0, 0.0, 0.85, 0.0]
    assert order_positions(times, rels, "first", 0.8) == [1.0, 0.0, 0.0, 0.0]


def test_rows_written_together_share_their_place_and_one_moment_orders_nothing() -> None:
    # One session's messages share its time: both are "the last".
    times = [_at(1), _at(9), _at(9), None]
    assert order_positions(times, [1.0, 0.9, 0.8, 1.0], "last", 0.8) == [0.0, 0.9, 0.8, 0.0]
    assert order_positions([_at(3), _at(3)], [1.0, 0.9], "last", 0.8) == [0.0, 0.0]
    assert order_positions([], [], "first", 0.8) == []


def _deploys() -> list[Candidate]:
    # The first deploy's row is the closest to any question about deploying (it also says when); the later
    # ones are a little further.
    first = Memory(id="feb", user_id="u", content="First deploy of the search API to staging this afternoon.",
                   created_at=_at(31))
    again = Memory(id="apr", user_id="u", content="Deployed the search API to staging again.", created_at=_at(99))
    latest = Memory(id="aug", user_id="u", content="Deployed search API to staging with the tokenizer.",
                    created_at=_at(241))
    return [Candidate(first, cos=0.88, bm25=5.0), Candidate(again, cos=0.86, bm25=5.0),
            Candidate(latest, cos=0.86, bm25=5.0)]


def test_a_last_question_puts_the_newest_row_first_and_says_why() -> None:
    recipe = replace(RECIPES["hybrid"], cos_floor=0.7)
    args = {"query_tokens": {"deploy", "search", "api", "staging"}, "now": NOW, "limit": 3}
    q = "when did we last deploy the search API to staging?"
    hits = rank(_deploys(), recipe=recipe, query_text=q, order="last", **args)  # type: ignore[arg-type]
    assert hits[0].memory.id == "aug"
    assert hits[0].parts["order"] > 0.9 and "the latest of the rows about it" in hits[0].recall_reason
    assert all(h.parts["order"] == 0.0 for h in hits[1:])
    q = "when did we first deploy the search API to staging?"
    hits = rank(_deploys(), recipe=recipe, query_text=q, order="first", **args)  # type: ignore[arg-type]
    assert hits[0].memory.id == "feb" and "the earliest of the rows about it" in hits[0].recall_reason
    # Without the bonus the closest row wins either way: the order above is the bonus's doing.
    hits = rank(_deploys(), recipe=replace(recipe, r_order=0.0), query_text=q, order="last",
                **args)  # type: ignore[arg-type]
    assert hits[0].memory.id == "feb" and not any("latest" in r for h in hits for r in h.recall_reason)


ROWS = [
    ("2026-02-01", "First deploy of the search API to staging went out this afternoon."),
    ("2026-04-10", "Deployed the search API to staging again with the ranking fix."),
    ("2026-08-30", "Deployed search API to staging with the Korean tokenizer."),
    ("2026-02-15", "오늘 처음으로 쿠버네티스에 결제 서비스를 배포했어."),
    ("2026-06-03", "결제 서비스를 쿠버네티스에 다시 배포했어, 메모리 제한 올림."),
    ("2026-09-21", "결제 서비스 쿠버네티스 배포, 이번엔 롤백 없이 끝남."),
    ("2026-03-18", "I started learning Rust this week with the async book."),
    ("2026-06-25", "Still learning Rust, lifetimes finally make sense."),
    ("2026-10-02", "Rust: wrote my first real crate, a tiny CSV parser."),
]


@asynccontextmanager
async def dated(tmp_path: Path, rows: list[tuple[str, str]]) -> AsyncIterator[MemoryService]:
    """A local-model store of `rows` (day, text), each written at 10:00 on its day."""
    created = [datetime.fromisoformat(d).replace(hour=10, tzinfo=UTC) for d, _t in rows]
    async with e5_service(tmp_path, [t for _d, t in rows], created=created) as service:
        yield service


async def first_hit(svc: MemoryService, query: str) -> Hit:
    """The first result for `query`, which must have one with a date."""
    out = await svc.search(svc.filters("alice"), query, limit=3, now=NOW, count_view=False)
    assert out.hits and out.hits[0].memory.created_at is not None, (query, out.notes)
    return out.hits[0]


@pytest.fixture
async def svc(tmp_path: Path) -> AsyncIterator[MemoryService]:
    async with dated(tmp_path, ROWS) as service:
        yield service


@pytest.mark.parametrize(("query", "day"), [
    ("when did we last deploy the search API to staging?", "2026-08-30"),
    ("when did we first deploy the search API to staging?", "2026-02-01"),
    ("what was the latest thing I did with Rust?", "2026-10-02"),
    ("when did I start learning Rust?", "2026-03-18"),
    ("결제 서비스 마지막으로 배포한 게 언제야?", "2026-09-21"),
    ("결제 서비스 쿠버네티스에 처음 배포한 게 언제야?", "2026-02-15"),
])
async def test_the_first_or_last_time_is_found_over_a_real_store(svc: MemoryService, query: str, day: str) -> None:
    hit = await first_hit(svc, query)
    assert hit.memory.created_at is not None and hit.memory.created_at.date().isoformat() == day, hit.memory.content


STATES = [
    ("2026-01-10", "We use MySQL 5.7 for the main database."),
    ("2026-06-12", "Migrated the main database from MySQL to Postgres 15 over the weekend."),
    ("2026-03-01", "Sora is the team lead for the platform team."),
    ("2026-08-20", "Minho took over as platform team lead; Sora moved to the data team."),
    ("2026-02-05", "회사 노트북은 맥북 프로 2019 인텔 모델이다."),
    ("2026-09-15", "새 회사 노트북 받음: 맥북 에어 M3."),
    ("2026-04-01", "Our CI runs on Jenkins."),
    ("2026-10-01", "Moved CI from Jenkins to GitHub Actions."),
    ("2026-05-01", "Planned the Q3 roadmap with Mina."),
]


@pytest.fixture
async def states(tmp_path: Path) -> AsyncIterator[MemoryService]:
    async with dated(tmp_path, STATES) as service:
        yield service


# Before "now", "currently", "these days", 지금 and 현재 asked for the latest, each of these failed: the older row came
# first (its words are the question's: "team lead", "회사 노트북 모델"), or the newer one without the reason.
@pytest.mark.parametrize(("query", "day"), [
    ("which database are we on currently?", "2026-06-12"),
    ("who is the team lead now?", "2026-08-20"),
    ("what CI do we use these days?", "2026-10-01"),
    ("현재 회사 노트북 모델은?", "2026-09-15"),
    ("지금 쓰는 노트북 뭐야?", "2026-09-15"),
])
async def test_how_things_stand_now_is_the_newest_row_about_it(states: MemoryService, query: str, day: str) -> None:
    hit = await first_hit(states, query)
    assert hit.memory.created_at is not None and hit.memory.created_at.date().isoformat() == day, hit.memory.content
    assert "the latest of the rows about it" in hit.recall_reason

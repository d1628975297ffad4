"""Dates named in a search query become time windows, in English and Korean; ranking favours memories created
inside them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from gieok.core.models import Memory
from gieok.retrieval.query_dates import LONG_WINDOW_SHARE, date_match, in_windows, query_windows, stated_date_match
from gieok.retrieval.ranking import Candidate, rank
from gieok.retrieval.recipes import RECIPES
from tests.conftest import e5_service

NOW = datetime(2023, 11, 1, 12, 0, tzinfo=UTC)


def days(q: str) -> list[tuple[str, str]]:
    return [(a.date().isoformat(), b.date().isoformat()) for a, b in query_windows(q, NOW)]


@pytest.mark.parametrize(("query", "want"), [
    ("What did Maria start, as mentioned on 3 June, 2023?", [("2023-06-02", "2023-06-05")]),
    ("What painting did she show on October 13th, 2023?", [("2023-10-12", "2023-10-15")]),
    ("the 13th of Oct", [("2023-10-12", "2023-10-15")]),
    ("What setback did Melanie face in October 2023?", [("2023-10-01", "2023-11-08")]),
    ("When did we go camping in June?", [("2023-06-01", "2023-07-08")]),
    ("release notes for 2023-07-04", [("2023-07-03", "2023-07-06")]),
    ("2023년 6월 3일 회의", [("2023-06-02", "2023-06-05")]),
    ("12월에 뭐 했지", [("2022-12-01", "2023-01-08")]),      # no year: the latest December up to now
    ("지난주 회의 내용", [("2023-10-23", "2023-10-30")]),
    ("what did we decide yesterday?", [("2023-10-31", "2023-11-01")]),
    ("May I see the deploy notes?", []),                        # "May" the verb is not a month
    ("could those 2 may conflict?", []),
    ("this may break the last may release", []),
    ("what changed on 2 May?", [("2023-05-01", "2023-05-04")]),
    ("plans for may 2024", [("2024-05-01", "2024-06-08")]),
    ("what happened in may", [("2023-05-01", "2023-06-08")]),
    ("3개월 전 월요일", [("2023-07-19", "2023-08-19")]),      # three months back, a month's window around it
    ("31 June 2023", [("2023-06-01", "2023-07-08")]),           # no such day: the month still counts
    ("plain question with no date", []),
])
def test_query_windows(query: str, want: list[tuple[str, str]]) -> None:
    assert days(query) == want


def test_a_calendar_date_wins_over_relative_words() -> None:
    # "last weekend" is relative to the named date, not to now.
    assert days("What did Maria do last weekend before April 10, 2023?") == [("2023-04-09", "2023-04-12")]


def test_memory_created_on_the_named_date_ranks_first() -> None:
    at = datetime(2023, 6, 3, 15, 0, tzinfo=UTC)
    on_day = Memory(id="a", user_id="u", role="user", content="I started pottery classes", created_at=at)
    other = Memory(id="b", user_id="u", role="user", content="I started yoga classes",
                   created_at=at + timedelta(days=40))
    windows = query_windows("What did I start on 3 June 2023?", NOW)
    assert in_windows(on_day.created_at, windows) and not in_windows(other.created_at, windows)
    # The other row matches the words slightly better; the date decides.
    cands = [Candidate(other, cos=0.86, date_match=False), Candidate(on_day, cos=0.85, date_match=True)]
    hits = rank(cands, query_tokens=set(), query_text="", now=NOW, recipe=RECIPES["hybrid"], limit=2)
    assert [h.memory.id for h in hits] == ["a", "b"]
    assert hits[0].parts["date"] == 1.0 and "created on the date the query names" in hits[0].recall_reason


def test_a_named_day_counts_more_than_a_named_month() -> None:
    at = datetime(2023, 6, 3, 15, 0, tzinfo=UTC)
    assert date_match(at, query_windows("What did I start on 3 June 2023?", NOW)) == 1.0
    assert date_match(at, query_windows("2023년 6월 3일에 뭐 시작했어?", NOW)) == 1.0
    assert date_match(at, query_windows("What did I start in June 2023?", NOW)) == LONG_WINDOW_SHARE
    assert date_match(at, query_windows("What did I start on 9 June 2023?", NOW)) == 0.0
    assert date_match(None, query_windows("on 3 June 2023", NOW)) == 0.0
    # Both named: the day decides.
    assert date_match(at, query_windows("June 2023, on 3 June 2023", NOW)) == 1.0
    # A month holds many conversations that are not about the question: its bonus does not outweigh a
    # better match in words and meaning, a day's does.
    on_day = Memory(id="a", user_id="u", role="user", content="I started pottery classes", created_at=at)
    other = Memory(id="b", user_id="u", role="user", content="I started yoga classes",
                   created_at=at + timedelta(days=40))
    for query, first in (("What did I start on 3 June 2023?", "a"), ("What did I start in June 2023?", "b")):
        windows = query_windows(query, NOW)
        cands = [Candidate(other, cos=0.87, bm25=2.0, date_match=date_match(other.created_at, windows)),
                 Candidate(on_day, cos=0.85, bm25=0.5, date_match=date_match(on_day.created_at, windows))]
        hits = rank(cands, query_tokens=set(), query_text="", now=NOW, recipe=RECIPES["hybrid"], limit=2)
        assert hits[0].memory.id == first, (query, [(h.memory.id, h.parts) for h in hits])


@pytest.mark.parametrize(("query", "content", "written", "want"), [
    # Written in April about March: the question names March, the message says "last month".
    ("What did John attend with his colleagues in March 2023?",
     "My colleagues and I went to a convention together last month.", datetime(2023, 4, 18), LONG_WINDOW_SHARE),
    ("2023년 3월에 동료들과 뭐 했어?", "지난달에 동료들이랑 컨퍼런스에 갔어.", datetime(2023, 4, 18),
     LONG_WINDOW_SHARE),
    # A day it names, read as of its writing (no year: the latest such day up to then).
    ("what was due on 3 March?", "the report was due on March 3rd, we sent it late", datetime(2023, 3, 20), 1.0),
    ("3월 3일에 뭐였지?", "3월 3일 마감이었던 보고서를 늦게 보냈다", datetime(2023, 3, 20), 1.0),
    ("what did we fix yesterday?", "we finally fixed the login bug today", datetime(2023, 10, 31, 9), 1.0),
    # Another time, or none at all.
    ("What did John attend with his colleagues in March 2023?",
     "My colleagues and I went to a convention together last month.", datetime(2023, 6, 18), 0.0),
    ("what was due on 3 March?", "the report was due on March 9th", datetime(2023, 3, 20), 0.0),
    ("What did I do in March 2023?", "I went to a convention with my colleagues.", datetime(2023, 4, 18), 0.0),
    ("plain question with no date", "I went there last month.", datetime(2023, 4, 18), 0.0),
])
def test_a_message_about_the_named_time_written_later_matches_it(query: str, content: str, written: datetime,
                                                                 want: float) -> None:
    assert stated_date_match(content, written.replace(tzinfo=UTC), query_windows(query, NOW)) == want


async def test_search_counts_the_time_a_row_names_and_says_so(tmp_path: Path) -> None:
    april = datetime(2023, 4, 18, 10, tzinfo=UTC)
    rows = ["My colleagues and I went to a convention together last month.",
            "I went to a convention with my cousins, it was fun.",
            "지난달에 동료들이랑 컨퍼런스에 갔어."]
    async with e5_service(tmp_path, rows, created=[april] * 3) as svc:
        f = svc.filters("alice")
        for query, said in (("What convention did I go to in March 2023?", rows[0]),
                            ("2023년 3월에 동료들이랑 어디 갔어?", rows[2])):
            got = {h.memory.content: h for h in (await svc.search(f, query, now=NOW, limit=10)).hits}
            assert got[said].parts["date"] == LONG_WINDOW_SHARE, query
            assert "speaks of the date the query names" in got[said].recall_reason
            # Written the same day, naming no time: no bonus.
            assert all(h.parts["date"] == 0.0 for c, h in got.items() if c == rows[1]), query
        # A question about April counts the day they were written, as before.
        hits = (await svc.search(f, "a convention with my cousins on 18 April 2023", now=NOW)).hits
        assert hits and all(h.parts["date"] == 1.0 and "created on the date the query names" in h.recall_reason
                            for h in hits)


def test_the_neighbour_lookup_order_counts_the_date_bonus() -> None:
    # Only the best candidates by their own relevance get their session neighbours looked up
    # (Recipe.neighbour_candidates); a row on the named day must not fall out of that order.
    from dataclasses import replace

    from gieok.retrieval.ranking import own_relevance
    recipe = replace(RECIPES["hybrid"], cos_floor=0.7)
    at = datetime(2023, 6, 3, 15, 0, tzinfo=UTC)
    m = Memory(id="a", user_id="u", role="user", content="x", created_at=at)
    on_day, other = Candidate(m, cos=0.80, date_match=1.0), Candidate(m, cos=0.84, bm25=1.0)
    assert own_relevance(on_day, recipe) > own_relevance(other, recipe) > own_relevance(Candidate(m), recipe) == 0
    assert 0 < recipe.neighbour_candidates < recipe.candidates

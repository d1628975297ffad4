"""Relative times the date-range reader does not read ("last Friday", "two weekends ago", "지난 주말", "3일 전"),
as windows of a query and of a stored message (read as of its writing)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from gieok.retrieval.query_dates import query_windows, stated_date_match
from gieok.retrieval.relative_dates import relative_windows
from tests.conftest import e5_service

MONDAY = datetime(2023, 4, 17, 12, 0, tzinfo=UTC)


def days(text: str, now: datetime = MONDAY) -> list[tuple[str, str]]:
    return [(a.date().isoformat(), b.date().isoformat()) for a, b in relative_windows(text, now)]


@pytest.mark.parametrize(("text", "want"), [
    ("what did we decide last Friday?", [("2023-04-14", "2023-04-15")]),
    ("last weekend we went hiking", [("2023-04-15", "2023-04-17")]),
    ("this past weekend", [("2023-04-15", "2023-04-17")]),
    ("two weekends ago I went camping", [("2023-04-08", "2023-04-10")]),
    ("last night's deploy", [("2023-04-16", "2023-04-18")]),
    ("last year", [("2022-01-01", "2023-01-01")]),
    ("a few days ago", [("2023-04-13", "2023-04-16")]),
    ("3 weeks ago", [("2023-03-24", "2023-03-31")]),
    ("a couple of months ago", [("2023-02-01", "2023-03-04")]),
    ("지난 주말에 뭐 했어?", [("2023-04-15", "2023-04-17")]),
    ("지난주 금요일 회의", [("2023-04-14", "2023-04-15")]),
    ("지난 금요일", [("2023-04-14", "2023-04-15")]),
    ("어젯밤 배포", [("2023-04-16", "2023-04-18")]),
    ("3일 전에 말한 것", [("2023-04-13", "2023-04-16")]),
    ("이틀 전", [("2023-04-14", "2023-04-17")]),
    ("한 달 전에", [("2023-03-03", "2023-04-03")]),
    ("작년 여름", [("2022-01-01", "2023-01-01")]),
    ("재작년 겨울", [("2021-01-01", "2022-01-01")]),
    ("the day before yesterday", [("2023-04-15", "2023-04-16")]),
    ("그저께 회의", [("2023-04-15", "2023-04-16")]),
    ("그제 본 영화", [("2023-04-15", "2023-04-16")]),
    # The week, weekend, month and year before last.
    ("the week before last", [("2023-04-03", "2023-04-10")]),
    ("지지난주 회의", [("2023-04-03", "2023-04-10")]),
    ("the weekend before last", [("2023-04-08", "2023-04-10")]),
    ("지지난 주말", [("2023-04-08", "2023-04-10")]),
    ("지지난주 금요일", [("2023-04-07", "2023-04-08")]),
    ("the month before last", [("2023-02-01", "2023-03-01")]),
    ("지지난달 월세", [("2023-02-01", "2023-03-01")]),
    ("the year before last", [("2021-01-01", "2022-01-01")]),
    ("지난해 여름", [("2022-01-01", "2023-01-01")]),
    ("지난 해에", [("2022-01-01", "2023-01-01")]),
    ("지지난해", [("2021-01-01", "2022-01-01")]),
    ("this year's goals", [("2023-01-01", "2024-01-01")]),
    ("올해 목표", [("2023-01-01", "2024-01-01")]),
    # This week's, behind or ahead.
    ("this Friday's demo", [("2023-04-21", "2023-04-22")]),
    ("this weekend", [("2023-04-22", "2023-04-24")]),
    ("이번 주 금요일", [("2023-04-21", "2023-04-22")]),
    ("이번 주말에 뭐 해?", [("2023-04-22", "2023-04-24")]),
    # A weekday alone: the nearest one behind and the nearest ahead (said on a Monday, Monday is today).
    ("what did we decide on Friday?", [("2023-04-14", "2023-04-15"), ("2023-04-21", "2023-04-22")]),
    ("Friday's demo", [("2023-04-14", "2023-04-15"), ("2023-04-21", "2023-04-22")]),
    ("금요일에 뭐 했지?", [("2023-04-14", "2023-04-15"), ("2023-04-21", "2023-04-22")]),
    ("on Monday", [("2023-04-17", "2023-04-18"), ("2023-04-24", "2023-04-25")]),
    ("3 weeks ago on Friday", [("2023-03-24", "2023-03-31")]),     # a day of that time, not the nearest Friday
    # Ahead.
    ("what's on tomorrow?", [("2023-04-18", "2023-04-19")]),
    ("tonight's deploy", [("2023-04-17", "2023-04-18")]),
    ("next Friday's demo", [("2023-04-21", "2023-04-22")]),
    ("next weekend trip", [("2023-04-22", "2023-04-24")]),
    ("plans for next week", [("2023-04-24", "2023-05-01")]),
    ("next month", [("2023-05-01", "2023-06-01")]),
    ("next year", [("2024-01-01", "2025-01-01")]),
    ("in 3 days", [("2023-04-19", "2023-04-22")]),
    ("내일 할 일", [("2023-04-18", "2023-04-19")]),
    ("모레 회의", [("2023-04-19", "2023-04-20")]),
    ("글피", [("2023-04-20", "2023-04-21")]),
    ("the day after tomorrow", [("2023-04-19", "2023-04-20")]),
    ("다음 주 금요일 회의", [("2023-04-28", "2023-04-29")]),
    ("다음 주 회의", [("2023-04-24", "2023-05-01")]),
    ("다음 주말", [("2023-04-22", "2023-04-24")]),
    ("다음 달 일정", [("2023-05-01", "2023-06-01")]),
    ("내년 계획", [("2024-01-01", "2025-01-01")]),
    ("다음 해에는", [("2024-01-01", "2025-01-01")]),
    ("3일 후", [("2023-04-19", "2023-04-22")]),
    ("한 달 뒤", [("2023-05-02", "2023-06-02")]),
    # Not relative times: another word, the year before last, a number inside a word.
    ("at last the build passed", []),
    ("this time it worked", []),
    ("그제야 알았다", []),
    ("every Friday standup", []),
    ("Fridays are quiet", []),
    ("Black Friday sale", []),
    ("매주 금요일 회의", []),
    ("금요일마다 청소", []),
    ("지난 해결책이 더 나았다", []),
    ("다음 해외 출장", []),
    ("그제서야", []),
    ("우리한 달력", []),
    ("the past few weeks were busy", []),
    ("next time", []),
    ("다음에 보자", []),
])
def test_relative_windows(text: str, want: list[tuple[str, str]]) -> None:
    assert days(text) == want


def test_on_a_weekend_or_that_weekday_it_counts_back_a_week() -> None:
    sunday = datetime(2023, 4, 16, 9, tzinfo=UTC)
    friday = datetime(2023, 4, 14, 9, tzinfo=UTC)
    assert days("last weekend", sunday) == [("2023-04-08", "2023-04-10")]
    assert days("last Friday", friday) == [("2023-04-07", "2023-04-08")]
    assert days("지지난달", datetime(2024, 1, 15, tzinfo=UTC)) == [("2023-11-01", "2023-12-01")]
    saturday = datetime(2023, 4, 15, 9, tzinfo=UTC)
    assert days("this weekend", saturday) == [("2023-04-15", "2023-04-17")]
    assert days("this Friday", saturday) == [("2023-04-14", "2023-04-15")]


def test_query_windows_read_them_the_most_specific_first() -> None:
    got = [(a.date().isoformat(), b.date().isoformat()) for a, b in query_windows("지난주 금요일 회의", MONDAY)]
    assert got == [("2023-04-14", "2023-04-15"), ("2023-04-10", "2023-04-17")]
    # "지난 주말" is the weekend, not last week.
    assert [(a.date().isoformat(), b.date().isoformat()) for a, b in query_windows("지난 주말", MONDAY)] == \
        [("2023-04-15", "2023-04-17")]
    # 지지난주 (the week before last) is not also last week, nor 지지난달 last month.
    for text, want in (("지지난주 회의", ("2023-04-03", "2023-04-10")), ("지지난달", ("2023-02-01", "2023-03-01"))):
        assert [(a.date().isoformat(), b.date().isoformat()) for a, b in query_windows(text, MONDAY)] == [want]
    # "the day before yesterday" is not also yesterday.
    assert [(a.date().isoformat(), b.date().isoformat()) for a, b in
            query_windows("what did I do the day before yesterday?", MONDAY)] == [("2023-04-15", "2023-04-16")]


def test_a_message_saying_last_friday_is_about_that_day() -> None:
    on_14 = query_windows("what happened on 14 April 2023?", datetime(2023, 9, 1, tzinfo=UTC))
    assert stated_date_match("We shipped the release last Friday.", MONDAY, on_14) == 1.0
    assert stated_date_match("지난 금요일에 릴리스를 배포했어.", MONDAY, on_14) == 1.0
    assert stated_date_match("We shipped the release two weekends ago.", MONDAY, on_14) == 0.0
    # Written a week before, about the day ahead.
    week_before = MONDAY - timedelta(days=7)
    assert stated_date_match("Next Friday we ship the release.", week_before, on_14) == 1.0
    two_weeks_before = week_before - timedelta(days=7)
    assert stated_date_match("이번 주 금요일 말고 다음 주 금요일에 배포해.", two_weeks_before, on_14) == 1.0
    # And a question about tomorrow meets the message that said "tomorrow" today.
    tomorrow = query_windows("what is planned for tomorrow?", MONDAY)
    assert stated_date_match("내일 릴리스를 배포한다", MONDAY - timedelta(hours=3), tomorrow) == 1.0


async def test_what_did_we_do_last_friday_shows_that_day(tmp_path: Path) -> None:
    # A question of question words and a relative day only ("지난 금요일에 뭐 했어?"): the rows of that day, not
    # the newest ones; in English, of two fixes the one made that day.
    friday = datetime(2023, 4, 14, 15, tzinfo=UTC)
    rows = [("금요일에 가격 정책 회의를 했다", friday), ("월요일에 배포 준비를 시작했다", MONDAY),
            ("We fixed the signup bug", MONDAY), ("We fixed the login bug", friday)]
    async with e5_service(tmp_path, [c for c, _ in rows], created=[t for _, t in rows]) as svc:
        f = svc.filters("alice")
        now = MONDAY + timedelta(hours=2)
        out = await svc.search(f, "지난 금요일에 뭐 했어?", now=now, limit=5)
        assert out.hits[0].memory.content == rows[0][0] and rows[1][0] not in {h.memory.content for h in out.hits[:2]}
        for query in ("what did we fix last Friday?", "지난 금요일에 고친 버그"):
            out = await svc.search(f, query, now=now, limit=5)
            got = [h.memory.content for h in out.hits]
            assert rows[3][0] in got and (rows[2][0] not in got or got.index(rows[3][0]) < got.index(rows[2][0])), \
                (query, got)

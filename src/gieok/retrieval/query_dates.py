"""Dates a search query mentions, as time windows ("what did we decide on 3 June?", "지난주 회의").

A memory created inside a window the query names is more likely what the query is about; search adds a
small relevance bonus for it (`Recipe.r_date`) and draws extra candidates from the window. Only dates a
person writes are read: "3 June 2023", "June 3rd, 2023", "June 2023", "in June", ISO "2023-06-03",
Korean "2023년 6월 3일", "6월 3일", "6월", and, when no calendar date is named, "yesterday", "last week",
"어제", "지난주"… (gieok.core.dates) and "last Friday", "two weekends ago", "지난 주말", "3일 전"…
(gieok.retrieval.relative_dates). A date without a year is the latest such date up to now.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from gieok.core.dates import parse_date_range
from gieok.retrieval.relative_dates import relative_windows

Window = tuple[datetime, datetime]

_MONTHS = {m: i for i, names in enumerate((
    ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
    ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"),
    ("november", "nov"), ("december", "dec")), start=1) for m in names}
_MON = r"(?P<mon>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_PREPS = ("in", "during", "since", "until", "by", "early", "late", "mid", "of", "last", "this")
_MAY_PREPS = ("in ", "during ", "since ", "until ", "early ", "late ", "mid ")
# Most specific first; a span a pattern consumed is not read again by a later one.
_PATTERNS = [
    re.compile(r"\b(?P<year>(?:19|20)\d\d)-(?P<mon>[01]\d)(?:-(?P<day>[0-3]\d))?\b"),
    re.compile(rf"\b{_DAY}(?:\s+of)?\s+{_MON}(?:,?\s+{_YEAR})?\b", re.I),
    re.compile(rf"\b{_MON}\s+{_DAY}\b(?:,?\s+{_YEAR})?", re.I),
    re.compile(rf"\b{_MON},?\s+{_YEAR}\b", re.I),
    # A month alone only after a preposition: "May" is also a verb.
    re.compile(rf"\b(?:{'|'.join(_PREPS)})\s+{_MON}\b", re.I),
    re.compile(r"(?:(?P<year>(?:19|20)\d\d)\s*년\s*)?(?P<mon>1[0-2]|0?[1-9])\s*월(?:\s*(?P<day>[0-3]?\d)\s*일)?"),
]
# "지난 주말" is last weekend (gieok.retrieval.relative_dates), not last week.
_RELATIVE = re.compile(r"\b((?<!before )yesterday|today|last week|this week|last month|this month)\b|"
                       r"(어제|오늘|(?<!지)지난\s*주(?!말)|저번\s*주(?!말)|이번\s*주(?!말)|(?<!지)지난\s*달|저번\s*달|이번\s*달)",
                       re.I)

# Slack around a named day: a message about a day is often written the day after ("yesterday we…"), and a
# stored time may sit in another time zone than the asker's.
_DAY_BEFORE = timedelta(days=1)
_DAY_AFTER = timedelta(days=2)
# A month's events are still talked about in the first days of the next one.
_MONTH_AFTER = timedelta(days=7)


def _month_end(year: int, month: int) -> datetime:
    return datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)


def _window(year: int | None, month: int, day: int | None, now: datetime) -> Window | None:
    try:
        if year is None:
            # The latest such date up to now.
            year = now.year
            if (month, day or 1) > (now.month, now.day):
                year -= 1
        if day is not None:
            start = datetime(year, month, day, tzinfo=UTC)
            return start - _DAY_BEFORE, start + _DAY_AFTER
        return datetime(year, month, 1, tzinfo=UTC), _month_end(year, month) + _MONTH_AFTER
    except ValueError:      # "31 June", "13월"
        return None


def query_windows(query: str, now: datetime) -> list[Window]:
    """The time windows `query` names, most specific first; [] when it names none."""
    low = query.lower()
    out = _calendar_windows(query, now) if _may_name_date(low) else []
    if out or not _may_be_relative(low):
        return out
    for m in _RELATIVE.finditer(query):
        since, until = parse_date_range(m.group(0), now)
        if since is not None:
            out.append((since, until or now + _DAY_AFTER))
    # The most specific first, as for calendar dates: "지난주 금요일" is that Friday before it is last week.
    return sorted(out + relative_windows(query, now, weekdays_alone=not out), key=lambda w: w[1] - w[0])


def _calendar_windows(query: str, now: datetime) -> list[Window]:
    out: list[Window] = []
    taken: list[tuple[int, int]] = []
    for pat in _PATTERNS:
        for m in pat.finditer(query):
            if any(a < m.end() and m.start() < b for a, b in taken):
                continue
            g = m.groupdict()
            if (g.get("mon") or "") == "may" and not g.get("year") and not m.group(0).lower().startswith(_MAY_PREPS):
                continue    # "this may fail", "those 2 may conflict": lower-case "may" is a verb unless a year
                            # or a preposition such as "in" says otherwise
            mon_s = (g.get("mon") or "").lower().rstrip(".")
            month = int(mon_s) if mon_s.isdigit() else _MONTHS.get(mon_s)
            if not month:
                continue
            w = _window(int(g["year"]) if g.get("year") else None, month,
                        int(g["day"]) if g.get("day") else None, now)
            if w is not None:
                taken.append((m.start(), m.end()))
                out.append(w)
    return out


# Cheap checks before the patterns, which cost ~100 µs a text: most texts name no time (a dated query reads
# its best candidates' texts, `stated_date_match`). A calendar date needs a month's name, "월" or an ISO date
# (a bare number does not: "#123", "3 kids"); a relative time one of these words.
_WORD = re.compile(r"[a-z]+")
_ISO = re.compile(r"\d{4}-[01]\d")
_RELATIVE_WORDS = ("day", "week", "month", "last", "ago", "tomorrow", "tonight", "next", "year",
                   "어제", "어젯", "오늘", "지난", "저번", "이번", "작년", " 전", "내일", "모레", "다음", "내년",
                   " 후", " 뒤", "그저께", "그제", "글피", "올해", "금년", "요일")


def _may_name_date(low: str) -> bool:
    return "월" in low or not _MONTHS.keys().isdisjoint(_WORD.findall(low)) or bool(_ISO.search(low))


def _may_be_relative(low: str) -> bool:
    return any(w in low for w in _RELATIVE_WORDS)


def in_windows(created: datetime | None, windows: list[Window]) -> bool:
    return created is not None and any(a <= created < b for a, b in windows)


# A named day ("on 3 June", "yesterday": a window of a few days) says more about when than a named month or
# week does: the date bonus is the recipe's `r_date` for a day and this share of it for a longer window.
# Measured on dev (recall@10, English / Korean questions over English memory): one bonus of 0.10 for every
# window 0.822 / 0.657; 0.30 for every window 0.822 / 0.665 (days gained, months lost: a month holds many
# sessions that are not about the question); 0.30 for a day, 0.10 for longer windows: see docs/measurements.md.
LONG_WINDOW_SHARE = 1 / 3
_DAY_WINDOW = timedelta(days=4)


def date_match(created: datetime | None, windows: list[Window]) -> float:
    """1.0 when `created` falls in a window of a few days the query names, LONG_WINDOW_SHARE in a longer one
    (a month, a week), 0.0 outside them all."""
    if created is None:
        return 0.0
    return max((1.0 if b - a <= _DAY_WINDOW else LONG_WINDOW_SHARE for a, b in windows if a <= created < b),
               default=0.0)


def stated_date_match(content: str, created: datetime | None, windows: list[Window]) -> float:
    """`date_match` for the times a stored message names, read as of its writing: "my colleagues and I went to
    a convention last month", written on 18 April, is about March as a message that names "3 March" is. 1.0
    when a window of a few days meets one the message names of a few days, LONG_WINDOW_SHARE when either is
    longer; the message's own date is `date_match`'s. A question about a date is often answered by a message
    written days or weeks later, which the date it was written says nothing about."""
    if created is None or not windows:
        return 0.0
    best = 0.0
    for a2, b2 in query_windows(content, created):
        for a, b in windows:
            if a < b2 and a2 < b:
                best = max(best, 1.0 if b - a <= _DAY_WINDOW and b2 - a2 <= _DAY_WINDOW else LONG_WINDOW_SHARE)
    return best


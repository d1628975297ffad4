"""Relative times people write that the date-range reader (gieok.core.dates) does not: "last weekend", "last
Friday", "two weeks ago", "last night", "last year", "the day before yesterday", "the week before last",
"지난 주말", "지난주 금요일", "3일 전", "한 달 전", "작년", "지난해", "재작년", "그저께", "지지난주", "지지난달";
this year's and this week's: "this year", "올해", "this Friday", "this weekend", "이번 주 금요일", "이번 주말";
and ahead: "tomorrow", "the day after tomorrow", "next Friday", "next week", "in 3 days", "내일", "모레", "글피",
"다음 주 금요일", "다음 달", "다음 해", "3일 후".

Each becomes a time window as of `now`: the moment a query is asked, or the moment a stored message was
written (gieok.retrieval.query_dates.stated_date_match: "last Friday" in a message of Monday 17 April is 14
April). A day is a window of that day; "N weeks / months / years ago" a window of that size around the day
it counts back to, since people round such spans.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

Window = tuple[datetime, datetime]

_DAY = timedelta(days=1)
_EN_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
               "eight": 8, "nine": 9, "ten": 10, "a couple of": 2, "couple of": 2, "a few": 3, "few": 3}
_KO_NUMBERS = {"한": 1, "두": 2, "세": 3, "네": 4, "다섯": 5, "여섯": 6, "일곱": 7, "여덟": 8, "아홉": 9, "열": 10}
_KO_DAYS = {"하루": 1, "이틀": 2, "사흘": 3, "나흘": 4}
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_KO_WEEKDAYS = "월화수목금토일"
# A counted span's length in days and the window around the day it counts back to (half each side).
_UNITS = {"day": (1, 1), "week": (7, 3), "month": (30, 15), "year": (365, 182),
          "일": (1, 1), "주": (7, 3), "달": (30, 15), "개월": (30, 15), "년": (365, 182)}

_KO_YEAR_END = r"(?=[에는도의가를부까엔보]|[^가-힣]|$)"
_EN_NUM = "|".join(sorted(map(re.escape, _EN_NUMBERS), key=len, reverse=True))
_KO_NUM = "|".join(sorted(_KO_NUMBERS, key=len, reverse=True))


def _today(now: datetime) -> datetime:
    return datetime(now.year, now.month, now.day, tzinfo=now.tzinfo or UTC)


def _weekend(now: datetime, back: int) -> Window:
    """The `back`-th weekend that ended before today (on a Sunday, "last weekend" is the one before)."""
    today = _today(now)
    sat = today - timedelta(days=(today.weekday() - 5) % 7)
    if sat + 2 * _DAY > today:
        sat -= 7 * _DAY
    sat -= 7 * (back - 1) * _DAY
    return sat, sat + 2 * _DAY


def _day(now: datetime, offset: int) -> Window:
    """The day `offset` days from today."""
    day = _today(now) + offset * _DAY
    return day, day + _DAY


def _last_weekday(now: datetime, weekday: int) -> Window:
    """The latest such weekday before today ("last Friday", said on a Friday, is a week ago)."""
    return _day(now, -((_today(now).weekday() - weekday) % 7 or 7))


def _next_weekday(now: datetime, weekday: int) -> Window:
    """The first such weekday after today ("next Friday", said on a Friday, is a week on)."""
    return _day(now, (weekday - _today(now).weekday()) % 7 or 7)


def _weeks_day(now: datetime, weekday: int, weeks: int) -> Window:
    """That weekday of the week `weeks` from this one ("지난주 금요일": -1, "다음 주 금요일": 1)."""
    return _day(now, 7 * weeks - _today(now).weekday() + weekday)


def _night(now: datetime) -> Window:
    """Last night: yesterday evening, or early today."""
    return _today(now) - _DAY, _today(now) + _DAY


def _counted(now: datetime, n: int, unit: str, direction: int) -> Window:
    """N units back (`direction` -1: "3 weeks ago") or ahead (1: "in 3 weeks"): a window of the unit's size
    around the day it counts to."""
    length, half = _UNITS[unit]
    centre = _today(now) + direction * timedelta(days=n * length)
    return centre - timedelta(days=half), centre + timedelta(days=half + 1)


def _year(now: datetime, offset: int) -> Window:
    return datetime(now.year + offset, 1, 1, tzinfo=UTC), datetime(now.year + offset + 1, 1, 1, tzinfo=UTC)


def _next_weekend(now: datetime) -> Window:
    """The coming weekend; said on a Saturday or Sunday, the one after."""
    today = _today(now)
    sat = today + timedelta(days=(5 - today.weekday()) % 7 or 7)
    return sat, sat + 2 * _DAY


def _this_weekend(now: datetime) -> Window:
    """This week's Saturday and Sunday (on a weekday, the coming one; on the weekend, the one under way)."""
    sat = _today(now) + timedelta(days=5 - _today(now).weekday())
    return sat, sat + 2 * _DAY


def _week(now: datetime, offset: int) -> Window:
    """The week (Monday to Sunday) `offset` weeks from this one (-2: the week before last, 1: next week)."""
    start = _today(now) + timedelta(days=7 * offset - _today(now).weekday())
    return start, start + 7 * _DAY


def _month(now: datetime, offset: int) -> Window:
    """The calendar month `offset` months from this one (-2: the month before last, 1: next month)."""
    y, m = divmod(now.year * 12 + now.month - 1 + offset, 12)
    y2, m2 = divmod(y * 12 + m + 1, 12)
    return datetime(y, m + 1, 1, tzinfo=UTC), datetime(y2, m2 + 1, 1, tzinfo=UTC)


def _count(word: str) -> int:
    w = " ".join(word.lower().split())
    return int(w) if w.isdigit() else _EN_NUMBERS.get(w) or _KO_NUMBERS.get(w, 0)


_Resolve = Callable[[re.Match[str], datetime], Window | None]
_PATTERNS: list[tuple[re.Pattern[str], _Resolve]] = [
    (re.compile(r"\b(?:last|this\s+past|past)\s+weekend\b", re.I), lambda m, now: _weekend(now, 1)),
    (re.compile(rf"\b(?P<n>\d{{1,2}}|{_EN_NUM})\s+weekends?\s+ago\b", re.I),
     lambda m, now: _weekend(now, _count(m["n"])) if _count(m["n"]) else None),
    (re.compile(rf"\blast\s+(?P<wd>{'|'.join(_WEEKDAYS)})\b", re.I),
     lambda m, now: _last_weekday(now, _WEEKDAYS.index(m["wd"].lower()))),
    (re.compile(r"\blast\s+night\b", re.I), lambda m, now: _night(now)),
    (re.compile(r"\b(?:the\s+)?day\s+before\s+yesterday\b", re.I), lambda m, now: _day(now, -2)),
    (re.compile(r"\blast\s+year\b", re.I), lambda m, now: _year(now, -1)),
    (re.compile(rf"\b(?P<n>\d{{1,3}}|{_EN_NUM})\s+(?P<u>day|week|month|year)s?\s+ago\b", re.I),
     lambda m, now: _counted(now, _count(m["n"]), m["u"].lower(), -1) if _count(m["n"]) else None),
    (re.compile(r"(?<!지)(?:지난|저번)\s*주말"), lambda m, now: _weekend(now, 1)),
    (re.compile(rf"(?<!지)(?:지난|저번)\s*주\s*(?P<wd>[{_KO_WEEKDAYS}])요일"),
     lambda m, now: _weeks_day(now, _KO_WEEKDAYS.index(m["wd"]), -1)),
    (re.compile(rf"(?<!지)(?:지난|저번)\s+(?P<wd>[{_KO_WEEKDAYS}])요일"),
     lambda m, now: _last_weekday(now, _KO_WEEKDAYS.index(m["wd"]))),
    (re.compile(r"어젯\s*밤"), lambda m, now: _night(now)),
    (re.compile(r"(?<!재)작년"), lambda m, now: _year(now, -1)),
    (re.compile(r"재작년"), lambda m, now: _year(now, -2)),
    # 해 (year) only where a particle or nothing follows: "지난 해결책" is the last fix, "다음 해외 출장" a trip.
    (re.compile(rf"(?<!지)지난\s*해{_KO_YEAR_END}"), lambda m, now: _year(now, -1)),
    (re.compile(rf"지지난\s*해{_KO_YEAR_END}"), lambda m, now: _year(now, -2)),
    (re.compile(r"\bthis\s+year\b", re.I), lambda m, now: _year(now, 0)),
    (re.compile(r"올해|금년"), lambda m, now: _year(now, 0)),
    # The week / weekend / month before last: 지지난 ("the last but one").
    (re.compile(r"\bthe\s+week\s+before\s+last\b", re.I), lambda m, now: _week(now, -2)),
    (re.compile(r"\bthe\s+weekend\s+before\s+last\b", re.I), lambda m, now: _weekend(now, 2)),
    (re.compile(r"\bthe\s+month\s+before\s+last\b", re.I), lambda m, now: _month(now, -2)),
    (re.compile(r"\bthe\s+year\s+before\s+last\b", re.I), lambda m, now: _year(now, -2)),
    (re.compile(r"지지난\s*주(?![말\s]*[월화수목금토일]요일)(?!말)"), lambda m, now: _week(now, -2)),
    (re.compile(r"지지난\s*주말"), lambda m, now: _weekend(now, 2)),
    (re.compile(rf"지지난\s*주\s*(?P<wd>[{_KO_WEEKDAYS}])요일"),
     lambda m, now: _weeks_day(now, _KO_WEEKDAYS.index(m["wd"]), -2)),
    (re.compile(r"지지난\s*달"), lambda m, now: _month(now, -2)),
    # 그제 also begins 그제야 / 그제서야 ("only then").
    (re.compile(r"그저께|그제(?![야서])"), lambda m, now: _day(now, -2)),
    (re.compile(rf"(?<![\d가-힣])(?P<n>\d{{1,3}}|{_KO_NUM})\s*(?P<u>개월|일|주|달|년)\s*전"),
     lambda m, now: _counted(now, _count(m["n"]), m["u"], -1) if _count(m["n"]) else None),
    (re.compile(r"(?P<d>하루|이틀|사흘|나흘)\s*전"), lambda m, now: _counted(now, _KO_DAYS[m["d"]], "일", -1)),
    # This week's: a weekday may be behind or ahead ("this Friday" said on Monday is ahead, on Saturday behind).
    (re.compile(rf"\bthis\s+(?P<wd>{'|'.join(_WEEKDAYS)})\b", re.I),
     lambda m, now: _weeks_day(now, _WEEKDAYS.index(m["wd"].lower()), 0)),
    (re.compile(r"\bthis\s+weekend\b", re.I), lambda m, now: _this_weekend(now)),
    (re.compile(rf"이번\s*주\s*(?P<wd>[{_KO_WEEKDAYS}])요일"),
     lambda m, now: _weeks_day(now, _KO_WEEKDAYS.index(m["wd"]), 0)),
    (re.compile(r"이번\s*주말"), lambda m, now: _this_weekend(now)),
    # Ahead: what is planned ("what's on tomorrow?", "다음 주 금요일 회의"), and a message about it written before.
    (re.compile(r"\b(?:the\s+)?day\s+after\s+tomorrow\b", re.I), lambda m, now: _day(now, 2)),
    (re.compile(r"(?<!after )\btomorrow\b", re.I), lambda m, now: _day(now, 1)),
    (re.compile(r"\btonight\b", re.I), lambda m, now: _day(now, 0)),
    (re.compile(r"\bnext\s+weekend\b", re.I), lambda m, now: _next_weekend(now)),
    (re.compile(rf"\bnext\s+(?P<wd>{'|'.join(_WEEKDAYS)})\b", re.I),
     lambda m, now: _next_weekday(now, _WEEKDAYS.index(m["wd"].lower()))),
    (re.compile(r"\bnext\s+week\b", re.I), lambda m, now: _week(now, 1)),
    (re.compile(r"\bnext\s+month\b", re.I), lambda m, now: _month(now, 1)),
    (re.compile(r"\bnext\s+year\b", re.I), lambda m, now: _year(now, 1)),
    (re.compile(rf"\bin\s+(?P<n>\d{{1,3}}|{_EN_NUM})\s+(?P<u>day|week|month|year)s?\b", re.I),
     lambda m, now: _counted(now, _count(m["n"]), m["u"].lower(), 1) if _count(m["n"]) else None),
    (re.compile(r"내일"), lambda m, now: _day(now, 1)),
    (re.compile(r"(?<![가-힣])모레"), lambda m, now: _day(now, 2)),
    (re.compile(r"(?<![가-힣])글피"), lambda m, now: _day(now, 3)),
    (re.compile(r"다음\s*주말"), lambda m, now: _next_weekend(now)),
    (re.compile(rf"다음\s*주\s*(?P<wd>[{_KO_WEEKDAYS}])요일"),
     lambda m, now: _weeks_day(now, _KO_WEEKDAYS.index(m["wd"]), 1)),
    (re.compile(r"다음\s*주(?![말\s]*[월화수목금토일]요일)(?!말)"), lambda m, now: _week(now, 1)),
    (re.compile(r"다음\s*달"), lambda m, now: _month(now, 1)),
    (re.compile(r"내년"), lambda m, now: _year(now, 1)),
    (re.compile(rf"다음\s*해{_KO_YEAR_END}"), lambda m, now: _year(now, 1)),
    (re.compile(rf"(?<![\d가-힣])(?P<n>\d{{1,3}}|{_KO_NUM})\s*(?P<u>개월|일|주|달|년)\s*(?:후|뒤)"),
     lambda m, now: _counted(now, _count(m["n"]), m["u"], 1) if _count(m["n"]) else None),
]


# A weekday named alone ("on Friday", "금요일에") is the nearest such day behind or ahead, and both are windows:
# asked on a Monday, "what did we decide on Friday?" is three days back, "what's on Friday?" four ahead. Read
# only where nothing else names a time ("last Friday", "지난주 금요일", "3개월 전 월요일"), and never "every Friday",
# "Fridays", "매주 금요일", "금요일마다", or a name (Black Friday, Good Friday, Cyber Monday).
_BARE_WEEKDAYS: list[tuple[re.Pattern[str], Sequence[str]]] = [
    (re.compile(rf"(?<!every )(?<!each )(?<!black )(?<!good )(?<!cyber )\b(?P<wd>{'|'.join(_WEEKDAYS)})\b(?!s\b)",
                re.I), _WEEKDAYS),
    (re.compile(rf"(?<!매주)(?<!매주 )(?P<wd>[{_KO_WEEKDAYS}])요일(?!마다)"), _KO_WEEKDAYS),
]


def _weekday_either_side(now: datetime, weekday: int) -> list[Window]:
    """The latest such weekday up to today, and the next after today."""
    return [_day(now, -((_today(now).weekday() - weekday) % 7)), _next_weekday(now, weekday)]


def relative_windows(text: str, now: datetime, *, weekdays_alone: bool = True) -> list[Window]:
    """The windows of the relative times `text` names, as of `now`, in the order they appear. A weekday alone
    counts only when nothing else names a time (`weekdays_alone` False: the caller found something): in "3개월
    전 월요일" or "two weeks ago on Monday" the weekday is a day of that time, not the nearest Monday."""
    found: list[tuple[int, Window]] = []
    for pat, resolve in _PATTERNS:
        for m in pat.finditer(text):
            w = resolve(m, now)
            if w is not None:
                found.append((m.start(), w))
    for pat, names in _BARE_WEEKDAYS if weekdays_alone and not found else []:
        for m in pat.finditer(text):
            found.extend((m.start(), w) for w in _weekday_either_side(now, names.index(m["wd"].lower())))
    return [w for _pos, w in sorted(found, key=lambda t: t[0])]


# What may stand around a date filter's one relative time: "on Friday", "지난주에", "3일 전부터".
_FILTER_LEAD = re.compile(r"^(?:on|in the|during)\s+", re.I)
_FILTER_PARTICLE = re.compile(r"(?<=[가-힣])(?:에는|에|엔|부터)$")


def bare_time(text: str) -> str:
    """A date filter's text without what may stand around its time ("on Friday" → Friday, "지난주에" → 지난주)."""
    return _FILTER_PARTICLE.sub("", _FILTER_LEAD.sub("", " ".join(text.split())))


def relative_window(t: str, now: datetime) -> Window | None:
    """The window of a text that is one relative time and nothing else ("the week before last", "last Friday",
    "지지난주", "3일 전", "금요일"; `bare_time` takes off what stands around it), as a date filter reads it; None for
    anything else. A weekday alone is the latest such day up to today: a filter looks back at what is stored."""
    for pat, resolve in _PATTERNS:
        if (m := pat.fullmatch(t)) is not None:
            return resolve(m, now)
    for pat, names in _BARE_WEEKDAYS:
        if (m := pat.fullmatch(t)) is not None:
            return _weekday_either_side(now, names.index(m["wd"].lower()))[0]
    return None

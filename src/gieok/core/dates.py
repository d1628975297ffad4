"""Parsing times and date ranges the way people and agents write them.

Timestamps are stored as UTC. A date range is `(since, until)`, either end open (None):
- ISO: `2026-11-01`, `2026-11-01T09:30`, a range `2026-11-01..2026-11-30` (or `/`, ` to `);
- relative: `3d`, `12h`, `2w`, `1m` (30 days), `1y`, `last 3 days`;
- named: `today`, `yesterday`, `this week`, `last week`, `this month`, `last month`,
  and Korean `오늘`, `어제`, `이번 주`, `지난주`, `이번 달`, `지난달`, `3일`, `2주`.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta

from gieok.core.errors import InvalidInput

_REL = re.compile(r"^(?:last\s+|past\s+|최근\s*)?(\d+)\s*"
                  r"(h|hours?|d|days?|w|weeks?|m|months?|y|years?|시간|일|주|개월|달|년)(?:\s*(?:ago|전|간))?$")
_UNIT_DAYS = {"h": 1 / 24, "d": 1, "w": 7, "m": 30, "y": 365, "시간": 1 / 24, "일": 1, "주": 7, "개월": 30, "달": 30,
              "년": 365}
_SPLIT = re.compile(r"\s*(?:\.\.|/|\s+to\s+|~)\s*")

_ZERO = timedelta(0)
# Stored times stay where arithmetic on them (ranges, recency, uuid7 timestamps) cannot overflow.
MIN_TIME = datetime(1970, 1, 1, tzinfo=UTC)
MAX_TIME = datetime(9998, 12, 31, tzinfo=UTC)

FORMAT_HELP = ("use an ISO date (2026-11-01), a range (2026-11-01..2026-11-30), a relative span (3d, 2w, 12h), "
               "a name (today, yesterday, this week, last week, this month, last month) or a relative day or week "
               "(last Friday, 3 days ago, the week before last, 그저께, 지지난주)")


def utcnow() -> datetime:
    return datetime.now(UTC)


def parse_time(value: str | datetime, field: str = "created_at") -> datetime:
    """An aware UTC datetime from an ISO string (a naive value is taken as UTC)."""
    if isinstance(value, datetime):
        dt = value
    elif not isinstance(value, str):
        raise InvalidInput(field, f"must be an ISO-8601 string (e.g. 2026-11-30T09:30:00Z), not {type(value).__name__}")
    else:
        s = value.strip()
        if s.endswith("Z"):
            s = s[:-1] + "+00:00"
        try:
            dt = datetime.fromisoformat(s)
        except ValueError:
            raise InvalidInput(field, f"{value!r} is not an ISO-8601 timestamp (e.g. 2026-11-30T09:30:00Z)") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    try:
        out = dt.astimezone(UTC)
    except OverflowError:  # 0001-01-01T00:00:00+05:00 is before the first representable UTC instant
        out = None
    if out is None or not MIN_TIME <= out <= MAX_TIME:
        raise InvalidInput(field, f"{str(value)[:60]!r} is outside the supported years 1970..9998")
    return out


# How far ahead of this clock a given time may be: clocks of the machines agents run on drift a little, and a
# message cannot have been written later than that. A time beyond it (a typo, 2099, a wrong time zone) would
# sit at the top of "recent" for ever.
MAX_CLOCK_SKEW = timedelta(minutes=5)


def not_in_future(dt: datetime, field: str = "created_at", now: datetime | None = None) -> datetime:
    """`dt`, unless it is more than MAX_CLOCK_SKEW ahead of `now`: then an error naming the field."""
    now = now or utcnow()
    if dt - now > MAX_CLOCK_SKEW:
        raise InvalidInput(field, f"{dt.isoformat()} is in the future (this clock says "
                                  f"{now.isoformat(timespec='seconds')}); send the time the message was written, "
                                  "with its time zone, or leave it out")
    return dt


def describe_window(since: datetime | None, until: datetime | None) -> str:
    """A window as people say it: 'between 2026-11-01 and 2026-11-30', 'since 2026-11-01 09:30' (UTC)."""
    def day(dt: datetime) -> str:
        if dt.time() == time.min:
            return dt.date().isoformat()
        return dt.strftime("%Y-%m-%d %H:%M")
    if since and until:
        end = until - timedelta(days=1) if until.time() == time.min and since.time() == time.min else until
        return f"on {day(since)}" if end == since else f"between {day(since)} and {day(end)} (UTC)"
    if since:
        return f"since {day(since)} (UTC)"
    if until:
        return f"before {day(until)} (UTC)"
    return "at any time"


def _day_start(d: date) -> datetime:
    return datetime.combine(d, time.min, tzinfo=UTC)


def _unit(u: str) -> float:
    return _UNIT_DAYS.get(u, _UNIT_DAYS.get(u[0], 1))


def parse_date_range(text: str, now: datetime | None = None) -> tuple[datetime | None, datetime | None]:
    try:
        return _parse_date_range(text, now)
    except OverflowError:
        raise InvalidInput("date_range", f"{text[:60]!r} reaches outside the supported years 1970..9998: "
                                         f"{FORMAT_HELP}") from None


def _parse_date_range(text: str, now: datetime | None = None) -> tuple[datetime | None, datetime | None]:
    if not isinstance(text, str):
        raise InvalidInput("date_range", f"must be a string: {FORMAT_HELP}")
    if len(text) > 100 or "\x00" in text:
        raise InvalidInput("date_range", f"{text[:40]!r}… is not a date range: {FORMAT_HELP}")
    now = now or utcnow()
    s = text.strip().lower()
    if not s:
        return None, None
    today = _day_start(now.date())
    named = {
        "today": (today, None), "오늘": (today, None),
        "yesterday": (today - timedelta(days=1), today), "어제": (today - timedelta(days=1), today),
    }
    if s in named:
        return named[s]
    week_start = today - timedelta(days=today.weekday())
    month_start = today.replace(day=1)
    prev_month_start = (month_start - timedelta(days=1)).replace(day=1)
    compact = s.replace(" ", "")
    if compact in ("thisweek", "이번주"):
        return week_start, None
    if compact in ("lastweek", "지난주", "저번주"):
        return week_start - timedelta(days=7), week_start
    if compact in ("thismonth", "이번달"):
        return month_start, None
    if compact in ("lastmonth", "지난달", "저번달"):
        return prev_month_start, month_start
    m = _REL.match(s)
    if m:
        if len(m.group(1)) > 7:
            raise OverflowError(m.group(1))
        start = now - timedelta(days=int(m.group(1)) * _unit(m.group(2)))
        if start < MIN_TIME:
            raise OverflowError(text)
        return start, None
    parts = _SPLIT.split(s, maxsplit=1) if not re.match(r"^\d{4}-\d{2}-\d{2}$", s) else [s]
    try:
        if len(parts) == 2:
            since = _as_start(parts[0]) if parts[0] else None
            until = _as_end(parts[1]) if parts[1] else None
    except InvalidInput:
        raise InvalidInput("date_range", f"cannot read {text!r}: {FORMAT_HELP}") from None
    if len(parts) == 2:
        if since is not None and until is not None and since >= until:
            # Silently returning nothing would read as "nothing happened then".
            if since > until:
                raise InvalidInput("date_range", f"{text!r} ends before it starts; did you mean "
                                                 f"{parts[1]}..{parts[0]}?")
            raise InvalidInput("date_range", f"{text!r} is an empty window: its start and end are the same "
                                             "instant; give a day (2026-11-01) or a range that ends later")
        return since, until
    try:
        start = _as_start(parts[0])
        if re.match(r"^\d{4}-\d{2}-\d{2}$", parts[0]):
            return start, start + timedelta(days=1)
        return start, None
    except InvalidInput as exc:
        why = " (dates must fall in the years 1970..9998)" if "supported years" in str(exc) else ""
        raise InvalidInput("date_range", f"cannot read {text!r}{why}: {FORMAT_HELP}") from None


def _as_start(s: str) -> datetime:
    return parse_time(s, "date_range")


def _as_end(s: str) -> datetime:
    dt = parse_time(s, "date_range")
    # A bare date as the end of a range includes that whole day.
    return dt + timedelta(days=1) if re.match(r"^\d{4}-\d{2}-\d{2}$", s) else dt


def iso(dt: datetime | None) -> str | None:
    """The one text form timestamps are stored in (fixed width, so it sorts like time)."""
    if dt is None:
        return None
    if dt.utcoffset() != _ZERO:
        dt = dt.astimezone(UTC)
    # isoformat is several times faster than strftime; this runs on the hot path.
    return dt.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def from_iso(s: str | None) -> datetime | None:
    if not s:
        return None
    return datetime.fromisoformat(s[:-1] if s.endswith("Z") else s).replace(tzinfo=UTC)

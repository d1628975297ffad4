"""Query strings and forms → the service's filters, with errors that name the field and say how to fix it."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from starlette.datastructures import QueryParams

from gieok.core.dates import from_iso
from gieok.core.errors import InvalidInput
from gieok.core.models import KINDS, PRIVACY, ROLES, SearchFilters
from gieok.core.principal import Principal
from gieok.memory.service import MemoryService
from gieok.store.browse import STATES, Cursor, PageQuery

PAGE_SIZE = 50
TIMELINE_KEYS = ("platform", "model", "subagent_role", "project", "p_tag", "kind", "role", "scope", "since",
                 "until", "state")
SEARCH_KEYS = ("q", "p_tag", "date_range", "role", "kind", "tags", "limit", "include_archived", "platform",
               "model", "subagent_role", "session_id", "project")


def day(name: str, value: str) -> datetime:
    try:
        return datetime.strptime(value, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        raise InvalidInput(name, f"{value!r} is not a date: use YYYY-MM-DD, e.g. 2026-11-03") from None


def _choice(name: str, value: str, allowed: tuple[str, ...]) -> str:
    if value and value not in allowed:
        raise InvalidInput(name, f"{value!r} is not one of {', '.join(allowed)}")
    return value


def encode_cursor(c: Cursor) -> str:
    return f"{c[0].isoformat()}~{c[1]}"


def decode_cursor(value: str) -> Cursor:
    at, _, mid = value.partition("~")
    try:
        dt = from_iso(at)
    except ValueError:
        dt = None
    if dt is None or not mid:
        raise InvalidInput("before", "this paging link is damaged: go back to the newest page")
    return dt, mid


@dataclass(slots=True)
class TimelineForm:
    values: dict[str, str]
    query: PageQuery
    active: int = 0          # how many filters are set (shown on the filter bar)
    extra: dict[str, Any] = field(default_factory=dict)


def timeline_form(params: QueryParams, svc: MemoryService, viewer: Principal) -> TimelineForm:
    """What the viewer may see (their own, their teams' and public memories), narrowed by the filters."""
    v = {k: params.get(k, "").strip() for k in TIMELINE_KEYS}
    _choice("kind", v["kind"], KINDS)
    _choice("role", v["role"], ROLES)
    _choice("scope", v["scope"], PRIVACY)
    state = _choice("state", v["state"], STATES) or "active"
    f = svc.filters(viewer.user_id, role=v["role"] or None, kind=v["kind"] or None, p_tag=v["p_tag"] or None,
                    platform=v["platform"] or None, model=v["model"] or None,
                    subagent_role=v["subagent_role"] or None, project=v["project"] or None, viewer=viewer)
    if v["since"]:
        f.since = day("since", v["since"])
    if v["until"]:
        f.until = day("until", v["until"]) + timedelta(days=1)   # the whole day named
    if f.since and f.until and f.since >= f.until:
        raise InvalidInput("until", "must be on or after 'since'")
    before = decode_cursor(params["before"]) if params.get("before") else None
    q = PageQuery(f, state=state, scopes=(v["scope"],) if v["scope"] else (), before=before, limit=PAGE_SIZE)  # type: ignore[arg-type]
    return TimelineForm(v, q, active=sum(1 for k, x in v.items() if x and not (k == "state" and x == "active")))


@dataclass(slots=True)
class SearchForm:
    values: dict[str, str]
    filters: SearchFilters
    query: str
    limit: int


def search_form(params: QueryParams, svc: MemoryService, viewer: Principal) -> SearchForm:
    """Every filter of `search_memory` (the MCP tool), plus project."""
    v = {k: params.get(k, "").strip() for k in SEARCH_KEYS}
    try:
        limit = int(v["limit"] or 20)
    except ValueError:
        raise InvalidInput("limit", f"{v['limit']!r} is not a number: use 1..100") from None
    if not 1 <= limit <= 100:
        raise InvalidInput("limit", f"{limit} is outside 1..100")
    tags = [t.strip() for t in v["tags"].split(",") if t.strip()]
    f = svc.filters(viewer.user_id, role=v["role"] or None, kind=v["kind"] or None, p_tag=v["p_tag"] or None, tags=tags,
                    date_range=v["date_range"] or None, include_archived=v["include_archived"] in ("1", "on", "true"),
                    platform=v["platform"] or None, model=v["model"] or None,
                    subagent_role=v["subagent_role"] or None, session_id=v["session_id"] or None,
                    project=v["project"] or None, viewer=viewer)
    return SearchForm(v, f, v["q"], limit)


def importance(value: str) -> float:
    try:
        x = float(value)
    except ValueError:
        raise InvalidInput("importance", f"{value!r} is not a number: use 0 to 1, e.g. 0.7") from None
    return x

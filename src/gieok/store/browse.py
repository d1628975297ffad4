"""Browsing the store as a person does (the dashboard): pages of a timeline newest first, activity per day,
the labels seen (for filter menus), and the rows the librarian has not finished.

A narrow Protocol of its own beside `Store`, so the dashboard depends only on what it uses. Pages are keyset
pages on (created_at, id): the next page starts strictly after the last row shown, so a page costs the same at
row 50 and at row 100,000 (an OFFSET would walk every row before it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol, runtime_checkable

from gieok.core.models import Memory, SearchFilters
from gieok.store.sqlfilters import where_clause

State = Literal["active", "archived", "forgotten", "all"]
STATES: tuple[str, ...] = ("active", "archived", "forgotten", "all")
# A position in a newest-first listing: the (created_at, id) of the last row shown.
Cursor = tuple[datetime, str]


@dataclass(slots=True)
class PageQuery:
    """One page of a timeline: the usual filters, which lifecycle state, which privacy scopes (empty: any),
    and where the previous page ended."""

    filters: SearchFilters
    state: State = "active"
    scopes: tuple[str, ...] = ()
    before: Cursor | None = None
    limit: int = 50


@dataclass(slots=True, frozen=True)
class DayCount:
    day: str            # YYYY-MM-DD (UTC)
    platform: str
    model: str
    count: int


@dataclass(slots=True)
class Facets:
    """The labels a user's live memories carry, with counts, most used first (filter menus)."""

    platforms: list[tuple[str, int]] = field(default_factory=list)
    models: list[tuple[str, int]] = field(default_factory=list)
    subagent_roles: list[tuple[str, int]] = field(default_factory=list)
    projects: list[tuple[str, int]] = field(default_factory=list)

    @classmethod
    def from_combinations(cls, rows: list[tuple[str, str, str, str, int]]) -> Facets:
        sums: list[dict[str, int]] = [{}, {}, {}, {}]
        for *labels, n in rows:
            for i, label in enumerate(labels):
                if label:
                    sums[i][label] = sums[i].get(label, 0) + int(n)
        ordered = [sorted(s.items(), key=lambda kv: (-kv[1], kv[0])) for s in sums]
        return cls(*ordered)


@runtime_checkable
class BrowseStore(Protocol):
    async def list_page(self, q: PageQuery) -> list[Memory]:
        """Rows matching `q`, newest first (created_at, then id), strictly after `q.before`."""
        ...

    async def activity(self, user_id: str, since: datetime, until: datetime) -> list[DayCount]:
        """Live (not forgotten) rows created in [since, until) counted per UTC day, platform and model."""
        ...

    async def facets(self, user_id: str) -> Facets: ...

    async def list_cold(self, user_id: str, status: Literal["pending", "failed"], limit: int) -> list[Memory]:
        """Live rows whose tags or embedding are `status`, newest first, with their last error."""
        ...


def page_where(q: PageQuery, ph: str, tags_sql: Callable[[str, str], str],
               ts: Callable[[Any], Any]) -> tuple[str, list[Any]]:
    """The WHERE of a page, shared by the SQL backends (`where_clause` plus state, scopes and the cursor)."""
    f = dataclasses.replace(q.filters, include_archived=q.state != "active")
    deleted = {"active": False, "archived": False, "forgotten": True, "all": None}[q.state]
    where, params = where_clause(f, ph, tags_sql, ts, deleted=deleted)
    if q.state == "archived":
        # A literal, not a parameter: SQLite uses a partial index only when the query repeats its WHERE.
        where += " AND m.is_active = FALSE"
    if q.scopes:
        where += f" AND m.privacy_scope IN ({', '.join([ph] * len(q.scopes))})"
        params.extend(q.scopes)
    if q.before is not None:
        # A row value comparison: both backends walk the (user_id, created_at) index from the cursor on.
        where += f" AND (m.created_at, m.id) < ({ph}, {ph})"
        params.extend([ts(q.before[0]), q.before[1]])
    return where, params


def as_browse(store: object) -> BrowseStore:
    if not isinstance(store, BrowseStore):
        raise TypeError(f"{type(store).__name__} does not implement BrowseStore (gieok.store.browse)")
    return store


# Partial and covering indexes behind the views a plain (user_id, created_at) index serves badly: the archived and
# forgotten timelines (few such rows: without them every one of the user's rows is read to find none), and the
# activity chart and filter menus, which read only labels and can then skip the rows themselves (index-only).
# Both backends create them in their migration 007; their WHERE clauses repeat `page_where`'s literals.
BROWSE_INDEXES: tuple[tuple[str, str], ...] = (
    ("memory_user_forgotten", "CREATE INDEX memory_user_forgotten ON memory (user_id, created_at) "
                              "WHERE deleted_at IS NOT NULL"),
    ("memory_user_archived", "CREATE INDEX memory_user_archived ON memory (user_id, created_at) "
                             "WHERE is_active = FALSE AND deleted_at IS NULL"),
    # deleted_at is always NULL here, but listed: SQLite reads a column the query names from the row unless the
    # index holds it, even when the index's own WHERE already settles it.
    ("memory_user_labels", "CREATE INDEX memory_user_labels ON memory (user_id, created_at, agent_platform, "
                           "agent_model, subagent_role, project, deleted_at) WHERE deleted_at IS NULL"),
)


# The statements, shared by the SQL backends; `ph` is the placeholder, `day` the backend's expression for the UTC
# date of m.created_at as YYYY-MM-DD text, and `hint` an index hint after the table (SQLite's INDEXED BY: it keeps
# no statistics unless ANALYZE runs, and then guesses; PostgreSQL plans from its own statistics and gets none).
def page_sql(select: str, where: str, ph: str, hint: str = "") -> str:
    return f"SELECT {select} FROM memory m {hint} WHERE {where} ORDER BY m.created_at DESC, m.id DESC LIMIT {ph}"


def page_index(q: PageQuery) -> str | None:
    """The partial index that serves this page's state, if one does."""
    return {"archived": "memory_user_archived", "forgotten": "memory_user_forgotten"}.get(q.state)


LABELS_INDEX = "memory_user_labels"


def activity_sql(day: str, ph: str, hint: str = "") -> str:
    return (f"SELECT {day}, m.agent_platform, m.agent_model, count(*) FROM memory m {hint} WHERE m.user_id = {ph} "
            f"AND m.deleted_at IS NULL AND m.created_at >= {ph} AND m.created_at < {ph} GROUP BY 1, 2, 3 ORDER BY 1")


def facets_sql(ph: str, hint: str = "") -> str:
    # One pass over the user's rows: the combinations are few, the sums per label are made in Python.
    return (f"SELECT m.agent_platform, m.agent_model, m.subagent_role, m.project, count(*) FROM memory m {hint} "
            f"WHERE m.user_id = {ph} AND m.deleted_at IS NULL GROUP BY 1, 2, 3, 4")


def cold_sql(select: str, ph: str) -> str:
    return (f"SELECT {select} FROM memory m WHERE m.user_id = {ph} AND m.deleted_at IS NULL "
            f"AND (m.tag_status = {ph} OR m.embed_status = {ph}) ORDER BY m.created_at DESC, m.id DESC LIMIT {ph}")

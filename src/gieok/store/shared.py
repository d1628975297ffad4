"""What both SQL backends share so that they behave alike: which changes `update_memory` accepts, how BM25
work is bounded, the keyset walk behind `iter_pages` and `iter_memories`, the LIKE pattern of substring
search, and the schema check of `check()`. No SQL here beyond what SQLite and PostgreSQL both speak."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

from anyio.lowlevel import checkpoint

from gieok.core.columns import COLUMN_NAMES, UPDATABLE
from gieok.core.dates import utcnow
from gieok.core.errors import StoreError
from gieok.core.models import Memory
from gieok.core.principal import Principal
from gieok.store.base import Check
from gieok.store.sqlfilters import visible_clause

# BM25 scores every matching row before it can sort; a query of very common words over a big store would
# score most of it. Both backends bound that work: above this many potential matches the most common terms are
# left out (they carry little idf weight, and rows matching only them would not reach the top anyway), and if
# the rarest term alone matches more, only its newest matches are scored. Small stores never reach the cap,
# so their ranking is exact.
MAX_SCORED_MATCHES = 2000


def rarest_terms(terms: list[list[str]], doc_freq: list[float], cap: int) -> tuple[list[list[str]], float]:
    """The terms to match, rarest first while their document frequencies add up to at most `cap` (the rarest
    always), and how many rows they may match. Terms found nowhere are dropped unless nothing is left."""
    freq = sorted(((n, i) for i, n in enumerate(doc_freq) if n > 0), key=lambda t: t[0]) or \
        [(n, i) for i, n in enumerate(doc_freq)]
    kept: list[list[str]] = []
    total = 0.0
    for n, i in freq:
        if kept and total + n > cap:
            break
        kept.append(terms[i])
        total += n
    return kept, total


def rankable_terms(terms: list[list[str]], doc_freq: list[float],
                   cap: int) -> tuple[list[list[str]], list[float]]:
    """The terms whose matches can all be ranked (at most `cap` rows each), with their document frequencies:
    above the cap a backend ranks only a term's newest matches, which says nothing about which rows are about
    it."""
    kept = [(t, n) for t, n in zip(terms, doc_freq, strict=True) if n <= cap]
    return [t for t, _n in kept], [n for _t, n in kept]


def checked_changes(changes: dict[str, Any]) -> dict[str, Any]:
    """The changes of an `update_memory`, refused when they touch a column callers may not change, with
    `updated_at` stamped unless given. Shared by the backends so both refuse the same things."""
    bad = set(changes) - UPDATABLE
    if bad:
        raise StoreError(f"cannot update columns {sorted(bad)}")
    out = dict(changes)
    if "updated_at" not in out:
        out["updated_at"] = utcnow()
    return out


def update_columns(changes: dict[str, Any], search_text: str | None,
                   db_value: Callable[[str, Any], Any]) -> tuple[dict[str, Any], list[str], list[Any]]:
    """An `update_memory`'s checked changes, the columns to SET (the indexed text last, when given) and their
    values as the backend stores them."""
    changes = checked_changes(changes)
    cols = list(changes)
    values = [db_value(c, changes[c]) for c in cols]
    if search_text is not None:
        cols.append("search_text")
        values.append(search_text)
    return changes, cols, values


def memory_by_id_sql(select: str, memory_id: str, include_deleted: bool, viewer: Principal | None,
                     ph: str) -> tuple[str, list[Any]]:
    """`get_memory`'s query: the row, unless deleted (or not visible to `viewer`, inside the same query)."""
    sql = f"SELECT {select} FROM memory m WHERE m.id = {ph}"
    params: list[Any] = [memory_id]
    if not include_deleted:
        sql += " AND m.deleted_at IS NULL"
    if viewer is not None:
        vis, vparams = visible_clause(viewer, ph)
        sql += " AND " + vis
        params += vparams
    return sql, params


def links_sql(memory_id: str, viewer: Principal | None, ph: str) -> tuple[str, list[Any]]:
    """`list_links`' query: links from or to the row, oldest first; with a `viewer`, only those whose both ends
    it may see."""
    sql = f"SELECT l.src, l.dst, l.relation, l.created_at FROM memory_links l WHERE (l.src = {ph} OR l.dst = {ph})"
    params: list[Any] = [memory_id, memory_id]
    if viewer is not None:
        for end in ("src", "dst"):
            vis, vparams = visible_clause(viewer, ph, alias="v")
            sql += f" AND EXISTS (SELECT 1 FROM memory v WHERE v.id = l.{end} AND v.deleted_at IS NULL AND {vis})"
            params += vparams
    return sql + " ORDER BY l.created_at", params


def after_clause(after: tuple[Any, str], ph: str) -> str:
    """The keyset condition of `iter_pages`: rows after (created_at, id), the order pages are read in. The
    cursor holds values, not an id: that row may be gone (hard-deleted) by the time the next page is read."""
    return f" AND (m.created_at, m.id) > ({ph}, {ph})"


def owner_scope(user_id: str | None, include_deleted: bool, ph: str) -> tuple[str, list[Any]]:
    """The conditions of `iter_memories` (one user's rows or all, deleted ones or not), to follow a WHERE."""
    sql, params = "", []
    if user_id is not None:
        sql += f" AND m.user_id = {ph}"
        params.append(user_id)
    if not include_deleted:
        sql += " AND m.deleted_at IS NULL"
    return sql, params


def like_pattern(needle: str) -> str:
    """A LIKE/ILIKE pattern matching `needle` anywhere, its own % _ and \\ taken literally (ESCAPE '\\')."""
    escaped = needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


Cursor = TypeVar("Cursor")
# One page after `cursor` (None: from the start), at most `limit` rows, each with the cursor that follows it.
PageFetch = Callable[[Cursor | None, int], Awaitable[list[tuple[Cursor, Memory]]]]


async def keyset_pages(fetch: PageFetch[Cursor], batch: int) -> AsyncIterator[list[Memory]]:
    """The pages `fetch` returns, each starting after the last row of the one before, until a short one."""
    if batch < 1:
        raise StoreError(f"batch must be at least 1, not {batch}")
    after: Cursor | None = None
    while True:
        rows = await fetch(after, batch)
        if rows:
            yield [m for _, m in rows]
        if len(rows) < batch:
            return
        after = rows[-1][0]
        await checkpoint()  # a long walk (maintenance over a large user) lets requests in between pages


def columns_check(have: set[str]) -> Check:
    """Whether a `memory` table with columns `have` holds every column gieok reads and writes."""
    missing = [c for c in COLUMN_NAMES if c not in have]
    if missing:
        return Check(False, f"the memory table lacks columns {', '.join(missing)}",
                     "the database was changed outside gieok: restore it from a backup or an export")
    return Check(True, f"the memory table has all {len(COLUMN_NAMES)} columns")

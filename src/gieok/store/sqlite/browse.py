"""SQLite: browsing for the dashboard (gieok.store.browse) — keyset timeline pages, activity per day, label
facets, the librarian's unfinished rows."""

from __future__ import annotations

from datetime import datetime

import anyio

from gieok.core.dates import iso
from gieok.core.models import Memory
from gieok.store.browse import (
    LABELS_INDEX,
    DayCount,
    Facets,
    PageQuery,
    activity_sql,
    cold_sql,
    facets_sql,
    page_index,
    page_sql,
    page_where,
)
from gieok.store.sqlite.codec import SELECT, row_to_memory, tags_sql
from gieok.store.sqlite.connection import SQLiteBase


class BrowseMixin(SQLiteBase):
    async def list_page(self, q: PageQuery) -> list[Memory]:
        where, params = page_where(q, "?", tags_sql, iso)
        # SQLite keeps no statistics unless ANALYZE runs, and then guesses: it is told which index serves the
        # archived and forgotten pages, the chart and the menus (gieok.store.browse.BROWSE_INDEXES).
        index = page_index(q)
        sql = page_sql(SELECT, where, "?", f"INDEXED BY {index}" if index else "")
        with self._lock:
            rows = self.db.execute(sql, [*params, q.limit]).fetchall()
        return [row_to_memory(r) for r in rows]

    async def activity(self, user_id: str, since: datetime, until: datetime) -> list[DayCount]:
        sql = activity_sql("substr(m.created_at, 1, 10)", "?", f"INDEXED BY {LABELS_INDEX}")

        def run() -> list[DayCount]:
            with self._lock:
                return [DayCount(*r) for r in self.db.execute(sql, (user_id, iso(since), iso(until)))]
        return await anyio.to_thread.run_sync(run)

    async def facets(self, user_id: str) -> Facets:
        def run() -> Facets:
            with self._lock:
                rows = self.db.execute(facets_sql("?", f"INDEXED BY {LABELS_INDEX}"), (user_id,)).fetchall()
                return Facets.from_combinations(rows)
        return await anyio.to_thread.run_sync(run)

    async def list_cold(self, user_id: str, status: str, limit: int) -> list[Memory]:
        with self._lock:
            rows = self.db.execute(cold_sql(SELECT, "?"), (user_id, status, status, limit)).fetchall()
        return [row_to_memory(r) for r in rows]

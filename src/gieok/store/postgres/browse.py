"""PostgreSQL: browsing for the dashboard (gieok.store.browse) — keyset timeline pages, activity per day, label
facets, the librarian's unfinished rows."""

from __future__ import annotations

from datetime import datetime

from gieok.core.models import Memory
from gieok.store.browse import DayCount, Facets, PageQuery, activity_sql, cold_sql, facets_sql, page_sql, page_where
from gieok.store.postgres.codec import SELECT, row_to_memory, tags_sql, ts
from gieok.store.postgres.connection import PostgresBase


class BrowseMixin(PostgresBase):
    async def list_page(self, q: PageQuery) -> list[Memory]:
        where, params = page_where(q, "%s", tags_sql, ts)
        async with self._conn() as con:
            rows = await (await con.execute(page_sql(SELECT, where, "%s"), [*params, q.limit])).fetchall()
        return [row_to_memory(r) for r in rows]

    async def activity(self, user_id: str, since: datetime, until: datetime) -> list[DayCount]:
        # A date, formatted here: to_char on every row cost more than the rest of the query.
        sql = activity_sql("(m.created_at AT TIME ZONE 'UTC')::date", "%s")
        async with self._conn() as con:
            rows = await (await con.execute(sql, (user_id, since, until))).fetchall()
        return [DayCount(d.isoformat(), p, m, n) for d, p, m, n in rows]

    async def facets(self, user_id: str) -> Facets:
        async with self._conn() as con:
            rows = await (await con.execute(facets_sql("%s"), (user_id,))).fetchall()
        return Facets.from_combinations(rows)

    async def list_cold(self, user_id: str, status: str, limit: int) -> list[Memory]:
        async with self._conn() as con:
            rows = await (await con.execute(cold_sql(SELECT, "%s"), (user_id, status, status, limit))).fetchall()
        return [row_to_memory(r) for r in rows]

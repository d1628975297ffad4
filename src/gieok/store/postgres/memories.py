"""PostgreSQL: the memory rows — insert, read, change, erase (with the neighbour context around them), list,
iterate, review dates, views, counts."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from typing import Any

import psycopg

from gieok.core.dates import iso, utcnow
from gieok.core.errors import StoreError
from gieok.core.models import Memory, SearchFilters
from gieok.core.principal import Principal
from gieok.store.base import NewRow, RequestKey, Vector
from gieok.store.context_sql import chunks, embedded_after_sql, rewrites_neighbours
from gieok.store.postgres.batch import insert_rows
from gieok.store.postgres.codec import CASTS, MEMORY_COLS, SELECT, db_value, row_to_memory, tags_sql, ts
from gieok.store.postgres.connection import PostgresBase, redacted, retry_deadlock
from gieok.store.postgres.text import neighbour_ids
from gieok.store.postgres.text import refresh_context as refresh_context_rows
from gieok.store.shared import after_clause, keyset_pages, memory_by_id_sql, owner_scope, update_columns
from gieok.store.sqlfilters import exists_any_sql, visible_clause, visible_terms, where_clause


class MemoryRowsMixin(PostgresBase):
    _INSERT_COLS = (*MEMORY_COLS, "search_text", "embedding")
    _INSERT_SQL = (f"INSERT INTO memory ({', '.join(_INSERT_COLS)}) VALUES "
                   f"({', '.join('%s' + CASTS.get(c, '') for c in _INSERT_COLS)}) "
                   "ON CONFLICT (user_id, session_id, content_hash, created_at) DO NOTHING RETURNING id")

    def _insert_params(self, m: Memory, search_text: str, vector: Vector | None = None) -> list[Any]:
        return [db_value(c, getattr(m, c)) for c in MEMORY_COLS] + [search_text, vector]

    async def insert_memory(self, m: Memory, search_text: str) -> tuple[str, bool]:
        async with self._conn() as con:
            try:
                row = await (await con.execute(self._INSERT_SQL, self._insert_params(m, search_text))).fetchone()
            except psycopg.errors.IntegrityError as exc:
                raise StoreError(f"row refused by the database: {exc}") from exc
            if row:
                return m.id, True
            row = await (await con.execute(
                "SELECT id FROM memory WHERE user_id = %s AND session_id = %s AND content_hash = %s "
                "AND created_at = %s", (m.user_id, m.session_id, m.content_hash, m.created_at))).fetchone()
        if row is None:  # pragma: no cover - the conflicting row was hard-deleted in between
            raise StoreError(f"row {m.id} conflicted with a row that no longer exists; try again")
        return str(row[0]), False

    async def insert_batch(self, rows: list[NewRow], *, request: RequestKey | None = None) -> list[tuple[str, bool]]:
        async with self._conn() as con, con.transaction():
            try:
                return await insert_rows(con, rows, request, self._INSERT_SQL,
                                         lambda m, text: self._insert_params(m, text))
            except psycopg.errors.IntegrityError as exc:
                raise StoreError(f"row refused by the database: {exc}") from exc

    async def insert_many(self, rows: list[tuple[Memory, str]], vectors: dict[str, Vector] | None = None) -> int:
        if not rows:
            return 0
        vectors = vectors or {}
        for model, dims in {(m.embedding_model, len(vectors[m.id])) for m, _ in rows if m.id in vectors}:
            await self._ensure_vector_index(model, dims)
        params = [self._insert_params(m, text, vectors.get(m.id)) for m, text in rows]
        async with self._conn() as con, con.transaction(), con.cursor() as cur:
            await cur.executemany(self._INSERT_SQL, params, returning=True)
            n = 0
            while True:
                n += len(await cur.fetchall())
                if not cur.nextset():
                    break
        return n

    async def get_memory(self, memory_id: str, *, include_deleted: bool = False,
                         viewer: Principal | None = None) -> Memory | None:
        q, params = memory_by_id_sql(SELECT, memory_id, include_deleted, viewer, "%s")
        async with self._conn() as con:
            row = await (await con.execute(q, params)).fetchone()
        return row_to_memory(row) if row else None

    async def get_memories(self, ids: list[str], *, viewer: Principal | None = None) -> list[Memory]:
        if not ids:
            return []
        vis, vparams = visible_clause(viewer, "%s") if viewer is not None else ("TRUE", [])
        async with self._conn() as con:
            rows = await (await con.execute(f"SELECT {SELECT} FROM memory m WHERE m.id = ANY(%s) "
                                            f"AND m.deleted_at IS NULL AND {vis}", [list(ids), *vparams])).fetchall()
        by_id = {r[0]: row_to_memory(r) for r in rows}
        return [by_id[i] for i in ids if i in by_id]

    async def has_archived(self, user_id: str, viewer: Principal | None = None) -> bool:
        sql, params = exists_any_sql("NOT m.is_active AND m.deleted_at IS NULL", visible_terms(viewer, "%s")
                                     if viewer is not None else [("m.user_id = %s", [user_id])])
        async with self._conn() as con:
            row = await (await con.execute(sql, params)).fetchone()
        return bool(row and row[0])

    async def update_memory(self, memory_id: str, changes: dict[str, Any], search_text: str | None = None) -> bool:
        changes, cols, values = update_columns(changes, search_text, db_value)
        sets = ", ".join(f"{c} = %s{CASTS.get(c, '')}" for c in cols)
        async with self._conn() as con, con.transaction():
            cur = await con.execute(f"UPDATE memory SET {sets} WHERE id = %s", [*values, memory_id])
            if cur.rowcount == 1 and rewrites_neighbours(changes, search_text):
                # The messages around this one index its words: they change with it, in this transaction.
                await refresh_context_rows(con, [memory_id])
            return cur.rowcount == 1

    async def hard_delete(self, memory_id: str) -> bool:
        # Links and feedback go by ON DELETE CASCADE; the full-text entry and the vector live in the row.
        # The neighbours' context is rebuilt without the row in the same transaction: its words go too.
        async with self._conn() as con, con.transaction():
            around = await neighbour_ids(con, [memory_id])
            cur = await con.execute("DELETE FROM memory WHERE id = %s", (memory_id,))
            await refresh_context_rows(con, sorted(around), expand=False)
            return cur.rowcount == 1

    async def refresh_context(self, ids: list[str]) -> int:
        if not ids:
            return 0
        async with self._conn() as con, con.transaction():
            return await refresh_context_rows(con, ids)

    async def set_search_text(self, rows: list[tuple[str, str, str]]) -> int:
        if not rows:
            return 0
        done: list[str] = []
        async with self._conn() as con, con.transaction():
            for mid, content_hash, text in rows:
                cur = await con.execute("UPDATE memory SET search_text = %s WHERE id = %s AND content_hash = %s "
                                        "AND search_text <> %s", (text, mid, content_hash, text))
                if cur.rowcount == 1:
                    done.append(mid)
            if done:
                await refresh_context_rows(con, done)
        return len(done)

    async def embedded_after(self, ids: list[str]) -> dict[str, Memory]:
        if not ids:
            return {}
        pairs: dict[str, str] = {}
        async with self._conn() as con:
            for chunk in chunks(ids):
                rows = await (await con.execute(embedded_after_sql("%s", len(chunk)), chunk)).fetchall()
                pairs.update((r[0], r[1]) for r in rows if r[1] is not None)
            found = await (await con.execute(f"SELECT {SELECT} FROM memory m WHERE m.id = ANY(%s)",
                                             [sorted(set(pairs.values()))])).fetchall() if pairs else []
        prev = {r[0]: row_to_memory(r) for r in found}
        return {mid: prev[p] for mid, p in pairs.items() if p in prev}

    async def list_memories(self, f: SearchFilters, *, limit: int = 100, newest_first: bool = True,
                            after_id: str | None = None) -> list[Memory]:
        where, params = where_clause(f, "%s", tags_sql, ts)
        if after_id:
            where += " AND m.id < %s" if newest_first else " AND m.id > %s"
            params.append(after_id)
        order = "DESC" if newest_first else "ASC"
        q = f"SELECT {SELECT} FROM memory m WHERE {where} ORDER BY m.created_at {order}, m.id {order} LIMIT %s"
        async with self._conn() as con:
            rows = await (await con.execute(q, [*params, limit])).fetchall()
        return [row_to_memory(r) for r in rows]

    async def iter_memories(self, user_id: str | None, *, include_deleted: bool = False,
                            batch: int = 500) -> AsyncIterator[Memory]:
        scope, params = owner_scope(user_id, include_deleted, "%s")

        async def page(after: int | None, limit: int) -> list[tuple[int, Memory]]:
            async with self._conn() as con:
                rows = await (await con.execute(f"SELECT m.seq, {SELECT} FROM memory m WHERE m.seq > %s{scope} "
                                                "ORDER BY m.seq LIMIT %s", [after or 0, *params, limit])).fetchall()
            return [(r[0], row_to_memory(r[1:])) for r in rows]
        async for rows in keyset_pages(page, batch):
            for m in rows:
                yield m

    def iter_pages(self, f: SearchFilters, *, batch: int = 500) -> AsyncIterator[list[Memory]]:
        where, params = where_clause(f, "%s", tags_sql, ts)

        async def page(after: tuple[datetime, str] | None, limit: int) -> list[tuple[tuple[datetime, str], Memory]]:
            cond, extra = (after_clause(after, "%s"), list(after)) if after else ("", [])
            async with self._conn() as con:
                rows = await (await con.execute(f"SELECT m.created_at, {SELECT} FROM memory m WHERE {where}{cond} "
                                                "ORDER BY m.created_at, m.id LIMIT %s",
                                                [*params, *extra, limit])).fetchall()
            return [((r[0], r[1]), row_to_memory(r[1:])) for r in rows]
        return keyset_pages(page, batch)

    async def list_due_reviews(self, user_id: str, now: datetime, limit: int) -> list[Memory]:
        async with self._conn() as con:
            rows = await (await con.execute(
                f"SELECT {SELECT} FROM memory m WHERE m.user_id = %s AND m.next_review_at <= %s "
                "AND m.deleted_at IS NULL AND m.is_active ORDER BY m.next_review_at LIMIT %s",
                (user_id, now, limit))).fetchall()
        return [row_to_memory(r) for r in rows]

    async def touch(self, ids: list[str], at: datetime) -> None:
        if not ids:
            return

        async def run() -> None:
            # Rows are locked in id order, as complete_cold and the context refresh lock theirs: concurrent
            # writers then queue on a row instead of deadlocking (1 in ~600 searches under load did).
            async with self._conn() as con:
                await con.execute("UPDATE memory m SET shown_count = m.shown_count + 1, last_accessed_at = %s "
                                  "FROM (SELECT id FROM memory WHERE id = ANY(%s) ORDER BY id FOR UPDATE) o "
                                  "WHERE m.id = o.id", (at, sorted(set(ids))))
        await retry_deadlock(run)

    async def list_user_ids(self) -> list[str]:
        async with self._conn() as con:
            rows = await (await con.execute("SELECT DISTINCT user_id FROM memory ORDER BY user_id")).fetchall()
        return [r[0] for r in rows]

    async def stats(self, user_id: str | None) -> dict[str, Any]:
        cond, params = ("WHERE user_id = %s", [user_id]) if user_id else ("", [])
        also = cond + (" AND" if cond else "WHERE")
        live = "deleted_at IS NULL"
        async with self._conn() as con:
            r = await (await con.execute(
                f"SELECT count(*), count(*) FILTER (WHERE {live} AND is_active), "
                f"count(*) FILTER (WHERE {live} AND NOT is_active), count(*) FILTER (WHERE deleted_at IS NOT NULL), "
                f"count(*) FILTER (WHERE is_pinned AND {live}), "
                f"count(*) FILTER (WHERE 'pending' IN (tag_status, embed_status, profile_status) AND {live}), "
                f"count(*) FILTER (WHERE 'failed' IN (tag_status, embed_status, profile_status) AND {live}), "
                f"min(created_at), max(created_at) FROM memory {cond}", params)).fetchone()
            assert r is not None
            by_platform = await (await con.execute(
                f"SELECT agent_platform, count(*) FROM memory {cond} GROUP BY 1 ORDER BY 2 DESC", params)).fetchall()
            by_model = await (await con.execute(
                f"SELECT embedding_model, count(*) FROM memory {cond} GROUP BY 1", params)).fetchall()
            last_err = await (await con.execute(
                f"SELECT id, cold_error, updated_at FROM memory {also} cold_error <> '' "
                "ORDER BY updated_at DESC LIMIT 1", params)).fetchone()
            recent = await (await con.execute(
                f"SELECT count(*) FROM memory {also} embed_status = 'ok' AND updated_at >= %s",
                [*params, utcnow() - timedelta(hours=1)])).fetchone()
        return {
            "backend": "postgres", "url": redacted(self.url), "total": r[0], "active": r[1], "archived": r[2],
            "deleted": r[3], "pinned": r[4], "pending": r[5], "failed": r[6],
            "oldest": iso(r[7]), "newest": iso(r[8]),
            "by_platform": {k or "(none)": v for k, v in by_platform},
            "by_embedding_model": {k or "(none)": v for k, v in by_model},
            "last_error": {"id": last_err[0], "error": last_err[1], "at": iso(last_err[2])} if last_err else None,
            "processed_last_hour": recent[0] if recent else 0,
        }

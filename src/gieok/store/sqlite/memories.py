"""SQLite: the memory rows — insert, read, change, erase (with the neighbour context around them), list,
iterate, review dates, views, counts."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from typing import Any

import anyio
import numpy as np

from gieok.core.dates import iso, utcnow
from gieok.core.errors import StoreError
from gieok.core.models import Memory, SearchFilters
from gieok.core.principal import Principal
from gieok.store.base import NewRow, RequestKey, Vector
from gieok.store.context_sql import (
    CONTEXT_CHARS,
    changed_contexts,
    chunks,
    contexts_sql,
    embedded_after_sql,
    neighbours_sql,
    rewrites_neighbours,
)
from gieok.store.shared import after_clause, keyset_pages, memory_by_id_sql, owner_scope, update_columns
from gieok.store.sqlfilters import exists_any_sql, visible_clause, visible_terms, where_clause
from gieok.store.sqlite.batch import insert_rows
from gieok.store.sqlite.codec import MAX_GEN, MEMORY_COLS, SELECT, db_value, insert_params, row_to_memory, tags_sql
from gieok.store.sqlite.connection import SQLiteBase


def _neighbour_ids(db: sqlite3.Connection, ids: list[str]) -> set[str]:
    out: set[str] = set()
    for chunk in chunks(ids):
        for row in db.execute(neighbours_sql("?", len(chunk)), chunk):
            out.update(x for x in row if x)
    return out


def _refresh_context(db: sqlite3.Connection, ids: list[str], *, expand: bool = True) -> int:
    """Rewrite `context_text` of `ids` (and, with `expand`, of their neighbours) where it changed; the FTS
    trigger reindexes only those rows."""
    targets = sorted(set(ids) | (_neighbour_ids(db, ids) if expand else set()))
    rows: list[tuple[str, str, str]] = []
    for chunk in chunks(targets):
        sql = contexts_sql("?", len(chunk), lambda c: f"substr({c}, -{CONTEXT_CHARS})",
                           lambda c: f"substr({c}, 1, {CONTEXT_CHARS})")
        rows.extend(db.execute(sql, chunk))
    changed = changed_contexts(rows)
    db.executemany("UPDATE memory SET context_text = ? WHERE id = ?", changed)
    return len(changed)


class MemoryRowsMixin(SQLiteBase):
    _INSERT_COLS = (*MEMORY_COLS, "search_text")
    _INSERT_SQL = (f"INSERT INTO memory ({', '.join(_INSERT_COLS)}) VALUES ({', '.join('?' * len(_INSERT_COLS))}) "
                   "ON CONFLICT (user_id, session_id, content_hash, created_at) DO NOTHING")

    def _insert_params(self, m: Memory, search_text: str) -> list[Any]:
        return [*insert_params(m), search_text]

    async def insert_memory(self, m: Memory, search_text: str) -> tuple[str, bool]:
        params = self._insert_params(m, search_text)
        with self._lock:
            db = self.db
            try:
                cur = db.execute(self._INSERT_SQL, params)
            except sqlite3.IntegrityError as exc:
                raise StoreError(f"row refused by the database: {exc}") from exc
            if cur.rowcount == 1:
                return m.id, True
            row = db.execute("SELECT id FROM memory WHERE user_id=? AND session_id=? AND content_hash=? "
                             "AND created_at=?", (m.user_id, m.session_id, m.content_hash,
                                                  iso(m.created_at))).fetchone()
            return str(row[0]), False

    async def insert_batch(self, rows: list[NewRow], *, request: RequestKey | None = None) -> list[tuple[str, bool]]:
        def run() -> list[tuple[str, bool]]:
            with self._write() as db:
                try:
                    return insert_rows(db, rows, request, self._INSERT_SQL, self._insert_params)
                except sqlite3.IntegrityError as exc:
                    raise StoreError(f"row refused by the database: {exc}") from exc
        # One row is the hot path (microseconds, inline as insert_memory); a batch goes to a worker thread.
        return run() if len(rows) <= 1 else await anyio.to_thread.run_sync(run)

    async def insert_many(self, rows: list[tuple[Memory, str]], vectors: dict[str, Vector] | None = None) -> int:
        """Bulk insert in one transaction (imports, copies); duplicates are skipped. Returns rows inserted."""
        vectors = vectors or {}

        def run() -> int:
            with self._write() as db:
                n = 0
                gen = int(db.execute(MAX_GEN).fetchone()[0]) if vectors else 0
                for m, text in rows:
                    inserted = db.execute(self._INSERT_SQL, self._insert_params(m, text)).rowcount
                    n += inserted
                    vec = vectors.get(m.id)
                    if inserted and vec is not None:
                        gen += 1
                        db.execute("UPDATE memory SET embedding = ?, embed_gen = ? WHERE id = ?",
                                   (np.asarray(vec, dtype=np.float32).tobytes(), gen, m.id))
                return n
        return await anyio.to_thread.run_sync(run)

    async def get_memory(self, memory_id: str, *, include_deleted: bool = False,
                         viewer: Principal | None = None) -> Memory | None:
        sql, params = memory_by_id_sql(SELECT, memory_id, include_deleted, viewer, "?")
        with self._lock:
            row = self.db.execute(sql, params).fetchone()
        return row_to_memory(row) if row else None

    async def get_memories(self, ids: list[str], *, viewer: Principal | None = None) -> list[Memory]:
        if not ids:
            return []
        vis, vparams = visible_clause(viewer, "?") if viewer is not None else ("1 = 1", [])
        with self._lock:
            rows = self.db.execute(f"SELECT {SELECT} FROM memory m WHERE m.id IN ({','.join('?' * len(ids))}) "
                                   f"AND m.deleted_at IS NULL AND {vis}", [*ids, *vparams]).fetchall()
        by_id = {r[0]: row_to_memory(r) for r in rows}
        return [by_id[i] for i in ids if i in by_id]

    async def has_archived(self, user_id: str, viewer: Principal | None = None) -> bool:
        sql, params = exists_any_sql("m.is_active = 0 AND m.deleted_at IS NULL", visible_terms(viewer, "?")
                                     if viewer is not None else [("m.user_id = ?", [user_id])])
        with self._lock:
            return bool(self.db.execute(sql, params).fetchone()[0])

    async def update_memory(self, memory_id: str, changes: dict[str, Any], search_text: str | None = None) -> bool:
        changes, cols, values = update_columns(changes, search_text, db_value)
        with self._write() as db:
            cur = db.execute(f"UPDATE memory SET {', '.join(c + ' = ?' for c in cols)} WHERE id = ?",
                             [*values, memory_id])
            if cur.rowcount == 1 and rewrites_neighbours(changes, search_text):
                # The messages around this one index its words: they change with it, in this transaction.
                _refresh_context(db, [memory_id])
            if cur.rowcount == 1 and ("privacy_scope" in changes or "team" in changes):
                # A shared (or unshared) row moves between vector caches: a new generation makes every
                # process's cache of its new partition pick it up; the old one's SQL filter drops it.
                db.execute(f"UPDATE memory SET embed_gen = ({MAX_GEN}) + 1 WHERE id = ? AND embed_gen > 0",
                           (memory_id,))
            return cur.rowcount == 1

    async def hard_delete(self, memory_id: str) -> bool:
        # Links and feedback go by ON DELETE CASCADE, the FTS entry by trigger, the vector with the row;
        # the in-process vector cache is dropped so the erased vector is not even held in memory. The
        # neighbours' context is rebuilt without the row in the same transaction: its words go too.
        with self._write() as db:
            around = _neighbour_ids(db, [memory_id])
            n = db.execute("DELETE FROM memory WHERE id = ?", (memory_id,)).rowcount
            _refresh_context(db, sorted(around), expand=False)
        if n:
            self._drop_vector_caches()
        return n == 1

    async def refresh_context(self, ids: list[str]) -> int:
        if not ids:
            return 0
        with self._write() as db:
            return _refresh_context(db, ids)

    async def set_search_text(self, rows: list[tuple[str, str, str]]) -> int:
        if not rows:
            return 0
        with self._write() as db:
            done = [mid for mid, content_hash, text in rows
                    if db.execute("UPDATE memory SET search_text = ? WHERE id = ? AND content_hash = ? AND "
                                  "search_text <> ?", (text, mid, content_hash, text)).rowcount == 1]
            if done:
                _refresh_context(db, done)
        return len(done)

    async def embedded_after(self, ids: list[str]) -> dict[str, Memory]:
        def run() -> dict[str, Memory]:
            pairs: dict[str, str] = {}
            with self._read() as db:
                for chunk in chunks(ids):
                    pairs.update((r[0], r[1]) for r in db.execute(embedded_after_sql("?", len(chunk)), chunk)
                                 if r[1] is not None)
                prev: dict[str, Memory] = {}
                wanted = sorted(set(pairs.values()))
                for chunk in chunks(wanted):
                    rows = db.execute(f"SELECT {SELECT} FROM memory m WHERE m.id IN ({','.join('?' * len(chunk))})",
                                      chunk).fetchall()
                    prev.update((r[0], row_to_memory(r)) for r in rows)
            return {mid: prev[p] for mid, p in pairs.items() if p in prev}
        return await anyio.to_thread.run_sync(run) if ids else {}

    async def list_memories(self, f: SearchFilters, *, limit: int = 100, newest_first: bool = True,
                            after_id: str | None = None) -> list[Memory]:
        where, params = where_clause(f, "?", tags_sql, iso)
        if after_id:
            where += " AND m.id < ?" if newest_first else " AND m.id > ?"
            params.append(after_id)
        order = "DESC" if newest_first else "ASC"
        sql = f"SELECT {SELECT} FROM memory m WHERE {where} ORDER BY m.created_at {order}, m.id {order} LIMIT ?"
        with self._lock:
            rows = self.db.execute(sql, [*params, limit]).fetchall()
        return [row_to_memory(r) for r in rows]

    async def iter_memories(self, user_id: str | None, *, include_deleted: bool = False,
                            batch: int = 500) -> AsyncIterator[Memory]:
        scope, params = owner_scope(user_id, include_deleted, "?")

        async def page(after: int | None, limit: int) -> list[tuple[int, Memory]]:
            with self._lock:
                rows = self.db.execute(f"SELECT m.seq, {SELECT} FROM memory m WHERE m.seq > ?{scope} "
                                       "ORDER BY m.seq LIMIT ?", [after or 0, *params, limit]).fetchall()
            return [(r[0], row_to_memory(r[1:])) for r in rows]
        async for rows in keyset_pages(page, batch):
            for m in rows:
                yield m

    def iter_pages(self, f: SearchFilters, *, batch: int = 500) -> AsyncIterator[list[Memory]]:
        where, params = where_clause(f, "?", tags_sql, iso)

        async def page(after: tuple[str, str] | None, limit: int) -> list[tuple[tuple[str, str], Memory]]:
            cond, extra = (after_clause(after, "?"), list(after)) if after else ("", [])
            with self._lock:
                rows = self.db.execute(f"SELECT m.created_at, {SELECT} FROM memory m WHERE {where}{cond} "
                                       "ORDER BY m.created_at, m.id LIMIT ?", [*params, *extra, limit]).fetchall()
            return [((r[0], r[1]), row_to_memory(r[1:])) for r in rows]
        return keyset_pages(page, batch)

    async def list_due_reviews(self, user_id: str, now: datetime, limit: int) -> list[Memory]:
        with self._lock:
            rows = self.db.execute(f"SELECT {SELECT} FROM memory m WHERE m.user_id = ? AND m.next_review_at <= ? "
                                   "AND m.deleted_at IS NULL AND m.is_active = 1 ORDER BY m.next_review_at LIMIT ?",
                                   (user_id, iso(now), limit)).fetchall()
        return [row_to_memory(r) for r in rows]

    async def touch(self, ids: list[str], at: datetime) -> None:
        if not ids:
            return
        with self._write() as db:
            db.execute(f"UPDATE memory SET shown_count = shown_count + 1, last_accessed_at = ? "
                       f"WHERE id IN ({','.join('?' * len(ids))})", [iso(at), *ids])

    async def list_user_ids(self) -> list[str]:
        with self._lock:
            return [r[0] for r in self.db.execute("SELECT DISTINCT user_id FROM memory ORDER BY user_id")]

    async def stats(self, user_id: str | None) -> dict[str, Any]:
        cond, params = ("WHERE user_id = ?", [user_id]) if user_id else ("", [])
        with self._lock:
            db = self.db
            r = db.execute(
                "SELECT COUNT(*), "
                "SUM(deleted_at IS NULL AND is_active = 1), SUM(deleted_at IS NULL AND is_active = 0), "
                "SUM(deleted_at IS NOT NULL), SUM(is_pinned = 1 AND deleted_at IS NULL), "
                "SUM((tag_status = 'pending' OR embed_status = 'pending' OR profile_status = 'pending') "
                "AND deleted_at IS NULL), "
                "SUM((tag_status = 'failed' OR embed_status = 'failed' OR profile_status = 'failed') "
                "AND deleted_at IS NULL), "
                "MIN(created_at), MAX(created_at) "
                f"FROM memory {cond}", params).fetchone()
            by_platform = db.execute(f"SELECT agent_platform, COUNT(*) FROM memory {cond} GROUP BY 1 ORDER BY 2 DESC",
                                     params).fetchall()
            by_model = db.execute(f"SELECT embedding_model, COUNT(*) FROM memory {cond} GROUP BY 1", params).fetchall()
            last_err = db.execute(
                f"SELECT id, cold_error, updated_at FROM memory {cond + (' AND' if cond else 'WHERE')} "
                "cold_error <> '' "
                "ORDER BY updated_at DESC LIMIT 1", params).fetchone()
            recent = db.execute(
                f"SELECT COUNT(*) FROM memory {cond + (' AND' if cond else 'WHERE')} embed_status = 'ok' "
                "AND updated_at >= ?", [*params, iso(utcnow() - timedelta(hours=1))]).fetchone()
        return {
            "backend": "sqlite", "path": self.path, "total": r[0] or 0, "active": r[1] or 0, "archived": r[2] or 0,
            "deleted": r[3] or 0, "pinned": r[4] or 0, "pending": r[5] or 0, "failed": r[6] or 0,
            "oldest": r[7], "newest": r[8],
            "by_platform": {k or "(none)": v for k, v in by_platform},
            "by_embedding_model": {k or "(none)": v for k, v in by_model},
            "last_error": {"id": last_err[0], "error": last_err[1], "at": last_err[2]} if last_err else None,
            "processed_last_hour": recent[0] or 0,
        }

"""PostgreSQL: the librarian's work queue and its job leases.

Workers claim with `FOR UPDATE SKIP LOCKED` plus the same lease columns as SQLite, so a crashed worker's
rows come back when the lease expires; inserts NOTIFY `gieok_pending` (a statement trigger) so idle workers
wake at once (`wait_for_pending`).
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import psycopg
from psycopg import AsyncConnection
from psycopg.types.json import Jsonb

from gieok.core.dates import utcnow
from gieok.core.models import Memory
from gieok.store.base import ColdResult, QueueStatus
from gieok.store.postgres.codec import MEMORY_COLS, SELECT, json_dumps, row_to_memory
from gieok.store.postgres.connection import NOTIFY_CHANNEL, PostgresBase, retry_deadlock
from gieok.store.postgres.health import queue_status
from gieok.store.postgres.migrations import PENDING_PREDICATE

# Failed rows wait this long before a later cycle tries them again (as in SQLite).
FAILED_COOLDOWN = timedelta(minutes=10)


class ColdQueueMixin(PostgresBase):
    wakes_on_pending = True  # LISTEN gieok_pending: an insert in any process wakes the waiting workers

    _PENDING = PENDING_PREDICATE.replace("tag_status", "m.tag_status").replace(
        "embed_status", "m.embed_status").replace("profile_status", "m.profile_status").replace(
        "deleted_at", "m.deleted_at")
    # Implies _PENDING, so the partial index on pending rows serves both.
    _PENDING_TAGS = "(m.tag_status <> 'ok' OR m.profile_status <> 'ok') AND m.deleted_at IS NULL"

    async def queue_status(self, *, need_embedding: bool = True) -> QueueStatus:
        async with self._conn() as con:
            return await queue_status(con, need_embedding=need_embedding)

    async def count_pending(self, max_attempts: int, *, need_embedding: bool = True) -> int:
        pending = self._PENDING if need_embedding else self._PENDING_TAGS
        async with self._conn() as con:
            row = await (await con.execute(f"SELECT count(*) FROM memory m WHERE {pending} AND "
                                           "(m.lease_until IS NULL OR m.lease_until < %s)", (utcnow(),))).fetchone()
        return int(row[0]) if row else 0

    async def claim_pending(self, worker: str, limit: int, lease_seconds: float, max_attempts: int,
                            now: datetime, *, need_embedding: bool = True) -> list[Memory]:
        until = now + timedelta(seconds=lease_seconds)
        pending = self._PENDING if need_embedding else self._PENDING_TAGS
        # SKIP LOCKED: concurrent workers pass over rows another is claiming instead of queueing on them;
        # a row committed by another claimer meanwhile is re-checked (READ COMMITTED) and its fresh lease
        # excludes it.
        q = (f"WITH c AS (SELECT m.id FROM memory m WHERE {pending} AND (m.lease_until IS NULL OR "
             f"m.lease_until < %s) ORDER BY m.created_at LIMIT %s FOR UPDATE SKIP LOCKED) "
             f"UPDATE memory m SET lease_until = %s, lease_owner = %s FROM c WHERE m.id = c.id "
             f"RETURNING {SELECT}, m.seq")
        async with self._conn() as con:
            rows = await (await con.execute(q, (now, limit, until, worker))).fetchall()
        rows.sort(key=lambda r: (r[MEMORY_COLS.index("created_at")], r[-1]))
        return [row_to_memory(r[:-1]) for r in rows]

    _COMPLETE_SQL = """
        UPDATE memory SET lease_until = NULL, lease_owner = NULL, updated_at = %(now)s,
            tag_status = CASE WHEN %(tagged)s THEN 'ok' ELSE tag_status END,
            p_tags = COALESCE(%(p_tags)s::text[], p_tags),
            d_tags = COALESCE(%(d_tags)s::text[], d_tags),
            embedding = CASE WHEN %(embedded)s THEN %(embedding)s::vector ELSE embedding END,
            embedding_model = CASE WHEN %(embedded)s THEN %(model)s::text ELSE embedding_model END,
            embed_status = CASE WHEN %(embedded)s THEN 'ok' ELSE embed_status END,
            profile_status = COALESCE(%(profile)s::text, profile_status),
            cold_attempts = CASE WHEN (%(tagged)s OR tag_status = 'ok') AND (%(embedded)s OR embed_status = 'ok')
                                      AND COALESCE(%(profile)s::text, profile_status) = 'ok'
                                 THEN 0 ELSE cold_attempts END,
            cold_error = CASE WHEN (%(tagged)s OR tag_status = 'ok') AND (%(embedded)s OR embed_status = 'ok')
                                   AND COALESCE(%(profile)s::text, profile_status) = 'ok'
                              THEN '' ELSE cold_error END
        WHERE id = %(id)s"""

    async def complete_cold(self, results: list[ColdResult], now: datetime) -> None:
        if not results:
            return
        for model, dims in {(r.embedding_model or "", len(r.embedding)) for r in results if r.embedding is not None}:
            await self._ensure_vector_index(model, dims)
        params = [{
            "id": r.id, "now": now, "tagged": r.p_tags is not None or r.d_tags is not None,
            "p_tags": r.p_tags, "d_tags": r.d_tags, "embedded": r.embedding is not None,
            "embedding": None if r.embedding is None else np.asarray(r.embedding, dtype=np.float32),
            "model": r.embedding_model or "", "profile": r.profile,
        } for r in results]
        params.sort(key=lambda p: str(p["id"]))  # id order: see `touch`

        async def run() -> None:
            async with self._conn() as con, con.transaction(), con.cursor() as cur:
                await cur.executemany(self._COMPLETE_SQL, params)
        await retry_deadlock(run)

    async def fail_cold(self, memory_id: str, error: str, *, permanent: bool, max_attempts: int,
                        now: datetime) -> None:
        # One statement, so two workers failing the same row cannot lose an attempt. SET expressions see
        # the old row, hence `cold_attempts + 1` throughout.
        out = "(%(permanent)s OR cold_attempts + 1 >= %(max)s)"
        q = (f"UPDATE memory SET cold_attempts = cold_attempts + 1, cold_error = %(error)s, lease_owner = NULL, "
             f"lease_until = CASE WHEN {out} THEN %(cooldown)s::timestamptz "
             f"ELSE %(now)s::timestamptz + interval '1 second' * power(2, cold_attempts + 1) END, "
             f"tag_status = CASE WHEN {out} AND tag_status <> 'ok' THEN 'failed' ELSE tag_status END, "
             f"embed_status = CASE WHEN {out} AND embed_status <> 'ok' THEN 'failed' ELSE embed_status END, "
             f"profile_status = CASE WHEN {out} AND profile_status <> 'ok' THEN 'failed' ELSE profile_status END "
             f"WHERE id = %(id)s")
        async with self._conn() as con:
            await con.execute(q, {"permanent": permanent, "max": max_attempts, "error": error[:2000],
                                  "cooldown": now + FAILED_COOLDOWN, "now": now, "id": memory_id})

    async def reset_failed(self) -> int:
        async with self._conn() as con:
            cur = await con.execute(
                "UPDATE memory SET lease_until = NULL, cold_attempts = 0, "
                "tag_status = CASE tag_status WHEN 'failed' THEN 'pending' ELSE tag_status END, "
                "embed_status = CASE embed_status WHEN 'failed' THEN 'pending' ELSE embed_status END, "
                "profile_status = CASE profile_status WHEN 'failed' THEN 'pending' ELSE profile_status END "
                "WHERE tag_status = 'failed' OR embed_status = 'failed' OR profile_status = 'failed'")
            n = cur.rowcount
            if n:
                await con.execute(f"NOTIFY {NOTIFY_CHANNEL}")
        return n

    async def mark_for_reembed(self, model: str) -> int:
        async with self._conn() as con:
            cur = await con.execute("UPDATE memory SET embed_status = 'pending', cold_attempts = 0 "
                                    "WHERE embedding_model <> '' AND embedding_model <> %s "
                                    "AND embed_status <> 'pending' AND deleted_at IS NULL", (model,))
            n = cur.rowcount
            if n:
                await con.execute(f"NOTIFY {NOTIFY_CHANNEL}")
        return n

    async def wait_for_pending(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for new librarian work (LISTEN gieok_pending). True if woken.

        The listening connection stays open between calls, so a notification sent while nobody was
        waiting is delivered by the next call instead of being lost."""
        async with self._listen_lock:
            try:
                if self._listener is None or self._listener.closed:
                    self._listener = await AsyncConnection.connect(self._conninfo, autocommit=True,
                                                                   connect_timeout=10)
                    await self._listener.execute(f"LISTEN {NOTIFY_CHANNEL}")
                woken = False
                async for _ in self._listener.notifies(timeout=timeout, stop_after=1):
                    woken = True
                if woken:  # several inserts make several notifications: one wake-up is enough
                    async for _ in self._listener.notifies(timeout=0.001):
                        pass
                return woken
            except psycopg.Error:
                # A dropped connection: reconnect next time; the caller's periodic wake-up covers the gap.
                if self._listener is not None:
                    await self._listener.close()
                self._listener = None
                await asyncio.sleep(min(timeout, 1.0))
                return False


class JobLeasesMixin(PostgresBase):
    async def acquire_job(self, name: str, owner: str, *, lease_seconds: float, min_interval_s: float,
                          now: datetime) -> bool:
        # One upsert decides, as in SQLite: ON CONFLICT locks the job row, so two workers racing for it are
        # serialised and the second sees the first's live lease in the WHERE.
        async with self._conn() as con:
            cur = await con.execute(
                "INSERT INTO librarian_jobs (name, owner, lease_until, last_started_at) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (name) DO UPDATE SET owner = EXCLUDED.owner, lease_until = EXCLUDED.lease_until, "
                "last_started_at = EXCLUDED.last_started_at "
                "WHERE (librarian_jobs.lease_until IS NULL OR librarian_jobs.lease_until < %s "
                "       OR librarian_jobs.owner = EXCLUDED.owner) "
                "AND (librarian_jobs.last_finished_at IS NULL OR librarian_jobs.last_finished_at <= %s)",
                (name, owner, now + timedelta(seconds=lease_seconds), now, now,
                 now - timedelta(seconds=min_interval_s)))
            return cur.rowcount == 1

    async def finish_job(self, name: str, owner: str, result: dict[str, Any], now: datetime) -> None:
        async with self._conn() as con:
            await con.execute("UPDATE librarian_jobs SET owner = NULL, lease_until = NULL, last_finished_at = %s, "
                              "last_result = %s WHERE name = %s AND owner = %s",
                              (now, Jsonb(result, dumps=json_dumps), name, owner))

    async def list_jobs(self) -> list[dict[str, Any]]:
        async with self._conn() as con:
            rows = await (await con.execute("SELECT name, owner, lease_until, last_started_at, last_finished_at, "
                                            "last_result FROM librarian_jobs ORDER BY name")).fetchall()
        return [{"name": r[0], "owner": r[1], "lease_until": r[2], "last_started_at": r[3],
                 "last_finished_at": r[4], "last_result": r[5] or {}} for r in rows]


"""SQLite: the librarian's work queue (leased rows needing tags or an embedding) and its job leases.

Leases are columns of the row (`lease_until`, `lease_owner`), taken in a write transaction: with one writer
at a time (BEGIN IMMEDIATE) no row is leased twice. A failed row backs off exponentially, and after
`max_attempts` waits `FAILED_COOLDOWN` for a later cycle.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

import anyio
import numpy as np

from gieok.core.dates import from_iso, iso, utcnow
from gieok.core.models import Memory
from gieok.store.base import ColdResult, QueueStatus
from gieok.store.sqlite.codec import MAX_GEN, SELECT, row_to_memory
from gieok.store.sqlite.connection import SQLiteBase
from gieok.store.sqlite.health import queue_status

# Failed rows wait this long before a later cycle tries them again.
FAILED_COOLDOWN = timedelta(minutes=10)


class ColdQueueMixin(SQLiteBase):
    # No process can wake another here: the librarian waits for its own wake-up event (an ingest in its
    # process) or its interval.
    wakes_on_pending = False

    # Spelled like the partial index memory_pending (migration 007), so both queries can use it.
    _PENDING = ("((m.tag_status <> 'ok' OR m.profile_status <> 'ok') OR m.embed_status <> 'ok') "
                "AND m.deleted_at IS NULL")
    _PENDING_TAGS = "(m.tag_status <> 'ok' OR m.profile_status <> 'ok') AND m.deleted_at IS NULL"

    async def queue_status(self, *, need_embedding: bool = True) -> QueueStatus:
        with self._lock:
            return queue_status(self.db, need_embedding=need_embedding)

    async def count_pending(self, max_attempts: int, *, need_embedding: bool = True) -> int:
        pending = self._PENDING if need_embedding else self._PENDING_TAGS
        with self._lock:
            row = self.db.execute(f"SELECT COUNT(*) FROM memory m WHERE {pending} AND "
                                  "(m.lease_until IS NULL OR m.lease_until < ?)", (iso(utcnow()),)).fetchone()
        return int(row[0])

    async def claim_pending(self, worker: str, limit: int, lease_seconds: float, max_attempts: int,
                            now: datetime, *, need_embedding: bool = True) -> list[Memory]:
        until = iso(now + timedelta(seconds=lease_seconds))
        pending = self._PENDING if need_embedding else self._PENDING_TAGS
        with self._write() as db:
            rows = db.execute(
                f"SELECT {SELECT} FROM memory m WHERE {pending} AND (m.lease_until IS NULL OR "
                f"m.lease_until < ?) ORDER BY m.created_at LIMIT ?", (iso(now), limit)).fetchall()
            mems = [row_to_memory(r) for r in rows]
            if mems:
                db.execute(f"UPDATE memory SET lease_until = ?, lease_owner = ? WHERE id IN "
                           f"({','.join('?' * len(mems))})", [until, worker, *[m.id for m in mems]])
        for m in mems:
            m.lease_until = from_iso(until)
        return mems

    async def complete_cold(self, results: list[ColdResult], now: datetime) -> None:
        with self._write() as db:
            gen = int(db.execute(MAX_GEN).fetchone()[0])
            for r in results:
                sets = ["lease_until = NULL", "lease_owner = NULL", "updated_at = ?"]
                vals: list[Any] = [iso(now)]
                if r.p_tags is not None or r.d_tags is not None:
                    sets.append("tag_status = 'ok'")
                if r.p_tags is not None:
                    sets.append("p_tags = ?")
                    vals.append(json.dumps(r.p_tags, ensure_ascii=False))
                if r.d_tags is not None:
                    sets.append("d_tags = ?")
                    vals.append(json.dumps(r.d_tags, ensure_ascii=False))
                if r.embedding is not None:
                    gen += 1
                    sets += ["embedding = ?", "embedding_model = ?", "embed_status = 'ok'", "embed_gen = ?"]
                    vals += [np.asarray(r.embedding, dtype=np.float32).tobytes(), r.embedding_model or "", gen]
                if r.profile is not None:
                    sets.append("profile_status = ?")
                    vals.append(r.profile)
                done = db.execute(f"UPDATE memory SET {', '.join(sets)} WHERE id = ? RETURNING tag_status, "
                                  "embed_status, profile_status", [*vals, r.id]).fetchone()
                if done and done[0] == "ok" and done[1] == "ok" and done[2] == "ok":
                    db.execute("UPDATE memory SET cold_attempts = 0, cold_error = '' WHERE id = ?", (r.id,))

    async def fail_cold(self, memory_id: str, error: str, *, permanent: bool, max_attempts: int,
                        now: datetime) -> None:
        with self._write() as db:
            row = db.execute("SELECT cold_attempts FROM memory WHERE id = ?", (memory_id,)).fetchone()
            if not row:
                return
            attempts = int(row[0]) + 1
            if permanent or attempts >= max_attempts:
                # Out of retries: record the error and leave the row for a later cycle.
                db.execute("UPDATE memory SET cold_attempts = ?, cold_error = ?, lease_owner = NULL, "
                           "lease_until = ?, "
                           "tag_status = CASE tag_status WHEN 'ok' THEN 'ok' ELSE 'failed' END, "
                           "embed_status = CASE embed_status WHEN 'ok' THEN 'ok' ELSE 'failed' END, "
                           "profile_status = CASE profile_status WHEN 'ok' THEN 'ok' ELSE 'failed' END "
                           "WHERE id = ?", (attempts, error[:2000], iso(now + FAILED_COOLDOWN), memory_id))
            else:
                backoff = timedelta(seconds=2 ** attempts)
                db.execute("UPDATE memory SET cold_attempts = ?, cold_error = ?, lease_owner = NULL, "
                           "lease_until = ? WHERE id = ?", (attempts, error[:2000], iso(now + backoff), memory_id))

    async def reset_failed(self) -> int:
        with self._write() as db:
            return db.execute("UPDATE memory SET lease_until = NULL, cold_attempts = 0, "
                              "tag_status = CASE tag_status WHEN 'failed' THEN 'pending' ELSE tag_status END, "
                              "embed_status = CASE embed_status WHEN 'failed' THEN 'pending' ELSE embed_status END, "
                              "profile_status = CASE profile_status WHEN 'failed' THEN 'pending' "
                              "ELSE profile_status END "
                              "WHERE tag_status = 'failed' OR embed_status = 'failed' OR profile_status = 'failed'"
                              ).rowcount

    async def mark_for_reembed(self, model: str) -> int:
        with self._write() as db:
            return db.execute("UPDATE memory SET embed_status = 'pending', cold_attempts = 0 "
                              "WHERE embedding_model <> '' AND embedding_model <> ? AND embed_status <> 'pending' "
                              "AND deleted_at IS NULL", (model,)).rowcount

    async def wait_for_pending(self, timeout: float) -> bool:
        await anyio.sleep(timeout)
        return False


class JobLeasesMixin(SQLiteBase):
    async def acquire_job(self, name: str, owner: str, *, lease_seconds: float, min_interval_s: float,
                          now: datetime) -> bool:
        # One upsert decides: a row updated (or inserted) means the lease is ours; the WHERE keeps a live
        # lease of another owner, and a job that finished too recently, untouched.
        with self._write() as db:
            cur = db.execute(
                "INSERT INTO librarian_jobs (name, owner, lease_until, last_started_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, lease_until = excluded.lease_until, "
                "last_started_at = excluded.last_started_at "
                "WHERE (librarian_jobs.lease_until IS NULL OR librarian_jobs.lease_until < ? "
                "       OR librarian_jobs.owner = excluded.owner) "
                "AND (librarian_jobs.last_finished_at IS NULL OR librarian_jobs.last_finished_at <= ?)",
                (name, owner, iso(now + timedelta(seconds=lease_seconds)), iso(now), iso(now),
                 iso(now - timedelta(seconds=min_interval_s))))
            return cur.rowcount == 1

    async def finish_job(self, name: str, owner: str, result: dict[str, Any], now: datetime) -> None:
        with self._write() as db:
            db.execute("UPDATE librarian_jobs SET owner = NULL, lease_until = NULL, last_finished_at = ?, "
                       "last_result = ? WHERE name = ? AND owner = ?",
                       (iso(now), json.dumps(result, ensure_ascii=False, default=str), name, owner))

    async def list_jobs(self) -> list[dict[str, Any]]:
        with self._lock:
            rows = self.db.execute("SELECT name, owner, lease_until, last_started_at, last_finished_at, "
                                   "last_result FROM librarian_jobs ORDER BY name").fetchall()
        return [{"name": r[0], "owner": r[1], "lease_until": from_iso(r[2]), "last_started_at": from_iso(r[3]),
                 "last_finished_at": from_iso(r[4]), "last_result": json.loads(r[5] or "{}")} for r in rows]


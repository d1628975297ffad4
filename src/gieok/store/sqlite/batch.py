"""All-or-nothing batch inserts with retry dedup and idempotency keys, for `SQLiteStore.insert_batch`.

Runs inside one `BEGIN IMMEDIATE` transaction (the caller's): SQLite has one writer at a time, so the
duplicate checks below cannot race another insert.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from gieok.core.dates import iso, utcnow
from gieok.core.errors import InvalidInput
from gieok.core.models import Memory
from gieok.store.base import REQUEST_KEY_TTL_S, NewRow, RequestKey

_RECENT_TWIN = ("SELECT id FROM memory WHERE user_id = ? AND session_id = ? AND content_hash = ? AND created_at >= ? "
                "AND role = ? AND agent_platform = ? AND agent_model = ? AND subagent_role = ? "
                "AND deleted_at IS NULL ORDER BY created_at DESC LIMIT 1")
_EXACT_TWIN = "SELECT id FROM memory WHERE user_id = ? AND session_id = ? AND content_hash = ? AND created_at = ?"


def known_request(db: sqlite3.Connection, request: RequestKey) -> list[tuple[str, bool]] | None:
    """The answer a key already got (every row reported as not inserted now), or None for a new key."""
    row = db.execute("SELECT fingerprint, result FROM request_keys WHERE user_id = ? AND key = ?",
                     (request.user_id, request.key)).fetchone()
    if row is None:
        return None
    if row[0] != request.fingerprint:
        raise InvalidInput("Idempotency-Key", "was already used for a different request body: use a new key "
                                              "for a new request")
    return [(str(i), False) for i in json.loads(row[1])]


def insert_rows(db: sqlite3.Connection, rows: list[NewRow], request: RequestKey | None, insert_sql: str,
                params: Callable[[Memory, str], list[Any]]) -> list[tuple[str, bool]]:
    if request is not None:
        done = known_request(db, request)
        if done is not None:
            return done
    out: list[tuple[str, bool]] = []
    for r in rows:
        m = r.memory
        if r.retry_since is not None:
            twin = db.execute(_RECENT_TWIN, (m.user_id, m.session_id, m.content_hash, iso(r.retry_since), m.role,
                                             m.agent_platform, m.agent_model, m.subagent_role)).fetchone()
            if twin is not None:
                out.append((str(twin[0]), False))
                continue
        if db.execute(insert_sql, params(m, r.search_text)).rowcount == 1:
            out.append((m.id, True))
            continue
        twin = db.execute(_EXACT_TWIN, (m.user_id, m.session_id, m.content_hash, iso(m.created_at))).fetchone()
        out.append((str(twin[0]), False))
    if request is not None:
        now = utcnow()
        db.execute("DELETE FROM request_keys WHERE created_at < ?", (iso(now - timedelta(seconds=REQUEST_KEY_TTL_S)),))
        db.execute("INSERT INTO request_keys (user_id, key, fingerprint, result, created_at) VALUES (?, ?, ?, ?, ?)",
                   (request.user_id, request.key, request.fingerprint, json.dumps([i for i, _ in out]), iso(now)))
    return out

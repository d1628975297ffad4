"""All-or-nothing batch inserts with retry dedup and idempotency keys, for `PostgresStore.insert_batch`.

Runs inside one transaction (the caller's). Concurrent requests are serialised where they could race:
- the same Idempotency-Key: the second INSERT into `request_keys` waits on the first one's uncommitted key
  and then finds it;
- the same message retried with no time of its own: a transaction-scoped advisory lock on (user, session,
  content hash) makes the "is there a recent twin?" check and the insert one step.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from psycopg import AsyncConnection
from psycopg.types.json import Jsonb

from gieok.core.dates import utcnow
from gieok.core.errors import InvalidInput
from gieok.core.models import Memory
from gieok.store.base import REQUEST_KEY_TTL_S, NewRow, RequestKey

_RECENT_TWIN = ("SELECT id FROM memory WHERE user_id = %s AND session_id = %s AND content_hash = %s "
                "AND created_at >= %s AND role = %s AND agent_platform = %s AND agent_model = %s "
                "AND subagent_role = %s AND deleted_at IS NULL ORDER BY created_at DESC LIMIT 1")
_EXACT_TWIN = ("SELECT id FROM memory WHERE user_id = %s AND session_id = %s AND content_hash = %s "
               "AND created_at = %s")


async def _claim_key(con: AsyncConnection[Any], request: RequestKey) -> list[tuple[str, bool]] | None:
    """None when the key is new (and now ours until commit), else the answer it already got."""
    now = utcnow()
    cur = await con.execute("INSERT INTO request_keys (user_id, key, fingerprint, created_at) VALUES (%s, %s, %s, %s) "
                            "ON CONFLICT DO NOTHING RETURNING 1", (request.user_id, request.key,
                                                                   request.fingerprint, now))
    if await cur.fetchone() is not None:
        return None
    row = await (await con.execute("SELECT fingerprint, result FROM request_keys WHERE user_id = %s AND key = %s",
                                   (request.user_id, request.key))).fetchone()
    if row is None:  # expired and deleted in between: treat as new next time
        raise InvalidInput("Idempotency-Key", "expired while this request ran: retry with the same key")
    if row[0] != request.fingerprint:
        raise InvalidInput("Idempotency-Key", "was already used for a different request body: use a new key "
                                              "for a new request")
    return [(str(i), False) for i in row[1]]


async def insert_rows(con: AsyncConnection[Any], rows: list[NewRow], request: RequestKey | None, insert_sql: str,
                      params: Callable[[Memory, str], list[Any]]) -> list[tuple[str, bool]]:
    if request is not None:
        done = await _claim_key(con, request)
        if done is not None:
            return done
    out: list[tuple[str, bool]] = []
    for r in rows:
        m = r.memory
        if r.retry_since is not None:
            await con.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                              (f"{m.user_id}\x1f{m.session_id}\x1f{m.content_hash}",))
            twin = await (await con.execute(_RECENT_TWIN, (m.user_id, m.session_id, m.content_hash, r.retry_since,
                                                           m.role, m.agent_platform, m.agent_model,
                                                           m.subagent_role))).fetchone()
            if twin is not None:
                out.append((str(twin[0]), False))
                continue
        if await (await con.execute(insert_sql, params(m, r.search_text))).fetchone():
            out.append((m.id, True))
            continue
        twin = await (await con.execute(_EXACT_TWIN, (m.user_id, m.session_id, m.content_hash,
                                                      m.created_at))).fetchone()
        if twin is None:  # pragma: no cover - the conflicting row was hard-deleted in between
            raise InvalidInput("content", "conflicted with a row that was just erased: send it again")
        out.append((str(twin[0]), False))
    if request is not None:
        await con.execute("UPDATE request_keys SET result = %s WHERE user_id = %s AND key = %s",
                          (Jsonb([i for i, _ in out]), request.user_id, request.key))
        await con.execute("DELETE FROM request_keys WHERE created_at < %s",
                          (utcnow() - timedelta(seconds=REQUEST_KEY_TTL_S),))
    return out

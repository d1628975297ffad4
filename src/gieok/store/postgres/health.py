"""The librarian's queue as operators see it (PostgreSQL): one aggregate over the partial index of rows the
librarian still has to process (`memory_pending`), so a scrape costs the backlog, not the table."""

from __future__ import annotations

from typing import Any

from psycopg import AsyncConnection

from gieok.store.base import QueueStatus
from gieok.store.postgres.migrations import PENDING_PREDICATE

_WAITING = "(tag_status = 'pending' OR {embed}) AND tag_status <> 'failed' AND embed_status <> 'failed'"
_FAILED = "(tag_status = 'failed' OR embed_status = 'failed')"


async def queue_status(con: AsyncConnection[Any], *, need_embedding: bool) -> QueueStatus:
    waiting = _WAITING.format(embed="embed_status = 'pending'" if need_embedding else "false")
    cur = await con.execute(f"SELECT count(*) FILTER (WHERE {waiting}), count(*) FILTER (WHERE {_FAILED}), "
                            f"min(created_at) FILTER (WHERE {waiting}) FROM memory WHERE {PENDING_PREDICATE}")
    row = await cur.fetchone()
    assert row is not None
    return QueueStatus(pending=int(row[0]), failed=int(row[1]), oldest_pending_at=row[2])

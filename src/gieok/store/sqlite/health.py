"""The librarian's queue as operators see it (SQLite): one indexed-or-scanned aggregate, read-only."""

from __future__ import annotations

import sqlite3

from gieok.core.dates import from_iso
from gieok.store.base import QueueStatus

_WAITING = "(tag_status = 'pending' OR {embed}) AND tag_status <> 'failed' AND embed_status <> 'failed'"
_FAILED = "(tag_status = 'failed' OR embed_status = 'failed')"


def queue_status(db: sqlite3.Connection, *, need_embedding: bool) -> QueueStatus:
    waiting = _WAITING.format(embed="embed_status = 'pending'" if need_embedding else "0")
    row = db.execute(f"SELECT COALESCE(SUM({waiting}), 0), COALESCE(SUM({_FAILED}), 0), "
                     f"MIN(CASE WHEN {waiting} THEN created_at END) FROM memory WHERE deleted_at IS NULL "
                     "AND (tag_status <> 'ok' OR embed_status <> 'ok')").fetchone()
    return QueueStatus(pending=int(row[0]), failed=int(row[1]), oldest_pending_at=from_iso(row[2]))

"""The audit log writer. Entries are buffered and written in batches by a background task, so a request pays
for appending to a list, not for a database write (`gieok bench audit` measures it); admin acts, erasures and
key changes are written at once (`record_now`). On shutdown the buffer is flushed."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime

import anyio

from gieok.core.dates import utcnow
from gieok.core.errors import GieokError
from gieok.core.principal import Principal
from gieok.store.auth_base import AuditEntry, AuthTables

log = logging.getLogger(__name__)

FLUSH_EVERY_S = 1.0
FLUSH_AT = 200          # entries: flush early when this many are waiting
MAX_BUFFER = 100_000    # a database outage must not grow memory without bound: the oldest are dropped, logged


def entry(p: Principal | None, action: str, *, outcome: str = "ok", memory_ids: Iterable[str] = (),
          owners: Iterable[str] = (), detail: str = "", remote: str = "", at: datetime | None = None) -> AuditEntry:
    """An entry for principal `p` (None: an unauthenticated caller)."""
    if p is None:
        return AuditEntry(ts=at or utcnow(), actor="", action=action, outcome=outcome, detail=detail, remote=remote,
                          memory_ids=list(memory_ids), owners=list(owners))
    return AuditEntry(ts=at or utcnow(), actor=p.actor, on_behalf=p.user_id if p.acting_for else "",
                      key_id=p.key_id, via=p.via, client=p.client, action=action, outcome=outcome,
                      memory_ids=list(memory_ids), owners=sorted(set(owners)), detail=detail, remote=remote)


class AuditLog:
    def __init__(self, store: AuthTables) -> None:
        self.store = store
        self._buf: list[AuditEntry] = []
        self._wake = anyio.Event()
        self.dropped = 0

    def record(self, e: AuditEntry) -> None:
        """Queue an entry (no I/O); the background task writes it within FLUSH_EVERY_S."""
        self._buf.append(e)
        if len(self._buf) > MAX_BUFFER:
            over = len(self._buf) - MAX_BUFFER
            del self._buf[:over]
            if self.dropped // 1000 != (self.dropped + over) // 1000 or not self.dropped:  # log, but not each one
                log.error("audit: the database is not taking entries; %d dropped (oldest first)", self.dropped + over)
            self.dropped += over
        if len(self._buf) >= FLUSH_AT:
            self._wake.set()

    async def record_now(self, e: AuditEntry) -> None:
        """Write an entry, and whatever is queued, before returning (admin acts, erasure, key changes)."""
        self._buf.append(e)
        await self.flush()

    async def flush(self) -> None:
        if not self._buf:
            return
        batch, self._buf = self._buf, []
        try:
            await self.store.append_audit(batch)
        except GieokError as exc:
            # Keep them for the next flush: the audit trail must survive a brief database hiccup.
            log.warning("audit: %d entries not written yet (%s)", len(batch), exc)
            self._buf[:0] = batch
            raise

    async def run(self) -> None:
        """Flush every FLUSH_EVERY_S (or sooner when FLUSH_AT entries wait) until cancelled; then flush."""
        try:
            while True:
                with anyio.move_on_after(FLUSH_EVERY_S):
                    await self._wake.wait()
                self._wake = anyio.Event()
                try:
                    await self.flush()
                except GieokError:
                    await anyio.sleep(FLUSH_EVERY_S)
        finally:
            with anyio.CancelScope(shield=True):
                try:
                    await self.flush()
                except GieokError:
                    log.error("audit: %d entries lost at shutdown", len(self._buf))

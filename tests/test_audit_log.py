"""The audit writer's buffer: a database that refuses entries keeps them for the next flush, and an outage
that lasts grows memory only up to the cap, dropping (and counting) the oldest. A real store underneath."""

from __future__ import annotations

import pytest

from gieok.auth import audit
from gieok.auth.audit import AuditLog, entry
from gieok.core.errors import StoreError
from gieok.store import Store
from gieok.store.auth_base import AuditEntry


class Refusing:
    """The store, while the database is down: every write fails as the backends report it."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.down = True

    async def append_audit(self, entries: list[AuditEntry]) -> None:
        if self.down:
            raise StoreError("database unreachable")
        await self.store.append_audit(entries)


async def test_entries_survive_an_outage_and_the_buffer_is_capped(store: Store,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(audit, "MAX_BUFFER", 5)
    db = Refusing(store)
    log = AuditLog(db)  # type: ignore[arg-type]
    for i in range(3):
        log.record(entry(None, "auth.refused", outcome="denied", detail=f"try {i}"))
    with pytest.raises(StoreError):
        await log.flush()
    for i in range(3, 8):
        log.record(entry(None, "auth.refused", outcome="denied", detail=f"try {i}"))
    assert log.dropped == 3     # 8 waiting, room for 5: the three oldest go, each one counted
    db.down = False
    await log.flush()
    assert [e.detail for e in await store.list_audit()] == [f"try {i}" for i in range(3, 8)]

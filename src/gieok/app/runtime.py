"""The composition root: settings → store, embedder, service, librarian. Used by `serve`, the CLI and tests.

This is the one place that knows both the service and the librarian: the librarian gets the store, the
embedder and the settings, and the service gets the librarian as its `RowProcessor` plus its wake-up event.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio

from gieok.core.settings import Settings
from gieok.librarian.worker import Librarian
from gieok.memory.service import MemoryService
from gieok.providers.embed.factory import make_embedder
from gieok.store import open_store

log = logging.getLogger(__name__)

__all__ = ["Runtime", "open_runtime", "open_service", "wire"]


@dataclass(frozen=True, slots=True)
class Runtime:
    """An open service and the librarian wired to it (the same store and embedder)."""

    service: MemoryService
    librarian: Librarian


def wire(service: MemoryService, *, worker_id: str | None = None) -> Librarian:
    """A librarian on `service`'s store, embedder and settings, attached to the service as its processor."""
    lib = Librarian(service.store, service.embedder, service.settings, worker_id=worker_id)
    service.attach_processor(lib, lib.wake)
    return lib


@asynccontextmanager
async def open_runtime(settings: Settings, *, with_embedder: bool = True,
                       run_librarian: bool = False) -> AsyncIterator[Runtime]:
    """Open the store (migrating it), build the embedder, the service and its librarian and, when asked, run
    the librarian in the background for as long as the context is open; it finishes cleanly on exit."""
    store = open_store(settings.resolved_database_url, busy_timeout_ms=settings.busy_timeout_ms)
    await store.open()
    svc: MemoryService | None = None
    try:
        embedder = make_embedder(settings) if with_embedder else None
        svc = MemoryService(settings, store, embedder)
        librarian = wire(svc)
        rt = Runtime(svc, librarian)
        if run_librarian:
            async with anyio.create_task_group() as tg:
                tg.start_soon(librarian.run_forever)
                try:
                    yield rt
                finally:
                    await librarian.stop()
                    tg.cancel_scope.cancel()
        else:
            yield rt
    finally:
        if svc is not None:
            await svc.settle()      # the last searches' appearance counts, before the store closes
        await store.close()


@asynccontextmanager
async def open_service(settings: Settings, *, with_embedder: bool = True,
                       run_librarian: bool = False) -> AsyncIterator[MemoryService]:
    """`open_runtime`, for callers that only talk to the service."""
    async with open_runtime(settings, with_embedder=with_embedder, run_librarian=run_librarian) as rt:
        yield rt.service

"""The composition root: settings → store, embedder, service, librarian. Used by `serve`, the CLI and tests."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

from gieok.core.settings import Settings
from gieok.librarian.worker import Librarian
from gieok.memory.service import MemoryService
from gieok.providers.embed.factory import make_embedder
from gieok.store import open_store

log = logging.getLogger(__name__)


@asynccontextmanager
async def open_service(settings: Settings, *, with_embedder: bool = True,
                       run_librarian: bool = False) -> AsyncIterator[MemoryService]:
    """Open the store (migrating it), build the embedder and, when asked, run the librarian in the
    background for as long as the context is open; it finishes cleanly on exit."""
    store = open_store(settings.resolved_database_url, busy_timeout_ms=settings.busy_timeout_ms)
    await store.open()
    try:
        embedder = make_embedder(settings) if with_embedder else None
        svc = MemoryService(settings, store, embedder)
        librarian = _attach_librarian(svc)
        if run_librarian:
            async with anyio.create_task_group() as tg:
                tg.start_soon(librarian.run_forever)
                try:
                    yield svc
                finally:
                    await librarian.stop()
                    tg.cancel_scope.cancel()
        else:
            yield svc
    finally:
        await store.close()


def _attach_librarian(svc: MemoryService) -> Librarian:
    lib = Librarian(svc)
    svc.processor = lib
    return lib

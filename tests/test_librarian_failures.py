"""Provider failures on the cold path: the embedding or LLM endpoint down, slow (timeouts) or talking garbage.
Capture keeps its speed, failures are recorded per row (3 attempts with backoff, then `cold_error` and a
cooldown), nothing is lost, and once the provider is back every row ends tagged and embedded. Explicit memory
is still stored when a provider fails, and says what is pending."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from gieok.app.runtime import open_service
from gieok.core.dates import utcnow
from gieok.core.models import Memory, SearchFilters
from gieok.core.settings import Settings, load_settings
from gieok.librarian.worker import Librarian
from gieok.memory.ingest import MessageIn
from gieok.memory.service import MemoryService
from tests.fakes.embedding_server import FakeEmbeddingServer
from tests.fakes.llm_server import FakeLLMServer

N = 12


@pytest.fixture
def emb_server() -> Iterator[FakeEmbeddingServer]:
    with FakeEmbeddingServer(slow_seconds=3.0) as s:
        yield s


def make_settings(tmp_path: Path, **kw: object) -> Settings:
    base: dict[str, object] = dict(database_url=f"sqlite:///{tmp_path / 'memory.db'}", home=str(tmp_path),
                                   user_id="alice", embedder="none", librarian=False, provider_timeout_s=0.5,
                                   cold_max_attempts=3, librarian_batch=32)
    base.update(kw)
    return load_settings(**base)


def emb_settings(tmp_path: Path, server: FakeEmbeddingServer, **kw: object) -> Settings:
    return make_settings(tmp_path, embedder="openai", embedding_url=server.openai_url, embedding_model="fake", **kw)


async def ingest_timed(svc: MemoryService, n: int, tag: str) -> float:
    t0 = time.perf_counter()
    for i in range(n):
        await svc.ingest(MessageIn(content=f"{tag} turn {i}: the deploy pipeline and the release review",
                                   user_id="alice", role="assistant", project="gieok", session_id=tag))
    return time.perf_counter() - t0


async def rows(svc: MemoryService) -> list[Memory]:
    return await svc.store.list_memories(SearchFilters(user_id="alice"), limit=1000)


async def drive(lib: Librarian, start: datetime, *, steps: int, step: timedelta) -> datetime:
    """Run cycles while moving the librarian's clock, so backoffs pass without sleeping."""
    t = start
    for _ in range(steps):
        lib.clock = lambda t=t: t  # type: ignore[misc]
        await lib.run_once()
        t += step
    return t


@pytest.mark.parametrize(("mode", "permanent", "error_text"), [
    ("down", False, "HTTP 503"),
    ("slow", False, "did not answer within"),
    ("garbage", False, "MalformedAnswer"),   # a malformed answer is retried like an outage (issue 11)
])
async def test_embedding_outage_loses_nothing_and_recovers(tmp_path: Path, emb_server: FakeEmbeddingServer,
                                                           mode: str, permanent: bool, error_text: str) -> None:
    s = emb_settings(tmp_path, emb_server, librarian_interval_s=0.05)
    async with open_service(s, run_librarian=True) as svc:
        normal = await ingest_timed(svc, N, "healthy")
        deadline = time.monotonic() + 10
        while any(m.embed_status != "ok" for m in await rows(svc)):  # the healthy rows are done first
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)
        emb_server.mode = mode  # type: ignore[assignment]
        # The librarian keeps hitting the failing provider in the background while capture goes on.
        during = await ingest_timed(svc, N, "outage")
    # Generous: capture must not wait on the provider (a slow call alone is 0.75 s).
    assert during < 5 * normal + 0.5, (during, normal)

    async with open_service(s) as svc:
        lib = svc.processor
        now = utcnow()
        await drive(lib, now, steps=4, step=timedelta(seconds=20))  # past every backoff, inside the cooldown
        stored = await rows(svc)
        assert len(stored) == 2 * N  # nothing lost
        outage = [m for m in stored if m.session_id == "outage"]
        assert outage and all(m.tag_status == "ok" for m in outage)  # offline tagging did not need the provider
        for m in outage:
            assert m.embed_status == "failed" and error_text in m.cold_error, m.cold_error
            assert m.cold_attempts == (1 if permanent else 3)
        st = await svc.store.stats("alice")
        assert st["failed"] == len(outage) and error_text in st["last_error"]["error"]
        # Failed rows wait out their cooldown even with the provider back: no retry storm.
        emb_server.mode = "ok"
        before = emb_server.request_count
        await drive(lib, now + timedelta(minutes=2), steps=1, step=timedelta(0))
        assert emb_server.request_count == before
        # A later cycle, after the cooldown: every row ends tagged and embedded.
        await drive(lib, now + timedelta(minutes=15), steps=1, step=timedelta(0))
        stored = await rows(svc)
        assert {(m.tag_status, m.embed_status, m.embedding_model, m.cold_error) for m in stored} == {
            ("ok", "ok", "openai/fake", "")}


async def test_retry_failed_requeues_at_once(tmp_path: Path, emb_server: FakeEmbeddingServer) -> None:
    async with open_service(emb_settings(tmp_path, emb_server)) as svc:
        await ingest_timed(svc, 3, "s")
        emb_server.mode = "unauthorized"  # permanent: one attempt, then failed
        await svc.processor.run_once()
        assert {m.embed_status for m in await rows(svc)} == {"failed"}
        assert "GIEOK_EMBEDDING_API_KEY" in (await rows(svc))[0].cold_error  # the error says how to fix it
        emb_server.mode = "ok"
        assert await svc.store.reset_failed() == 3
        await svc.processor.run_once()
        assert {m.embed_status for m in await rows(svc)} == {"ok"}


@pytest.fixture
def llm_server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(slow_seconds=3.0, default_answer={"facts": []}) as s:
        yield s


def tag_answer(n: int, tag: str = "deploys") -> dict[str, object]:
    return {"results": [{"index": i, "p_tag": "gieok", "d_tags": [tag]} for i in range(n)]}


@pytest.mark.parametrize(("mode", "error_text", "attempts"), [
    ("down", "HTTP 503", 3),
    ("slow", "did not answer within", 3),
    ("garbage", "answer did not match", 3),
])
async def test_llm_tagger_outage_is_recorded_and_recovers(tmp_path: Path, llm_server: FakeLLMServer,
                                                          mode: str, error_text: str, attempts: int) -> None:
    s = make_settings(tmp_path, llm="openai", llm_url=llm_server.url, llm_model="fake")
    async with open_service(s) as svc:
        await ingest_timed(svc, 4, "s")
        llm_server.mode = mode  # type: ignore[assignment]
        now = utcnow()
        await drive(svc.processor, now, steps=4, step=timedelta(seconds=20))
        stored = await rows(svc)
        assert len(stored) == 4
        for m in stored:
            assert m.tag_status == "failed" and error_text in m.cold_error and m.cold_attempts == attempts
        llm_server.mode = "ok"
        llm_server.script(tag_answer(4))
        await drive(svc.processor, now + timedelta(minutes=15), steps=1, step=timedelta(0))
        assert {(m.tag_status, tuple(m.p_tags), tuple(m.d_tags), m.cold_error) for m in await rows(svc)} == {
            ("ok", ("gieok",), ("deploys",), "")}


# --- explicit memory ------------------------------------------------------------------------------------------
async def test_explicit_memory_is_tagged_and_embedded_at_once(tmp_path: Path, emb_server: FakeEmbeddingServer) -> None:
    async with open_service(emb_settings(tmp_path, emb_server)) as svc:
        res = await svc.remember(MessageIn(content="The staging password rotates every ninety days",
                                           user_id="alice", kind="semantic", project="gieok"))
        assert res.to_dict() == {"id": res.id, "stored": True, "tagged": "ok", "embedded": "ok"}
        m = await svc.store.get_memory(res.id)
        assert m is not None and m.is_pinned and m.p_tags == ["gieok"] and m.d_tags
        assert m.embedding_model == "openai/fake" and m.embed_status == "ok"
        outcome = await svc.search(SearchFilters(user_id="alice"), "staging password rotation", count_view=False)
        assert outcome.hits and outcome.hits[0].memory.id == res.id


@pytest.mark.parametrize("mode", ["down", "slow", "garbage"])
async def test_explicit_memory_is_stored_when_the_provider_fails(tmp_path: Path, emb_server: FakeEmbeddingServer,
                                                                 mode: str) -> None:
    async with open_service(emb_settings(tmp_path, emb_server)) as svc:
        emb_server.mode = mode  # type: ignore[assignment]
        res = await svc.remember(MessageIn(content="Remember: the blue button deploys to production",
                                           user_id="alice", kind="semantic"))
        out = res.to_dict()
        assert out["stored"] and out["tagged"] == "ok" and out["embedded"] == "pending"
        assert "the librarian will retry" in out["notes"][0]
        m = await svc.store.get_memory(res.id)
        assert m is not None and m.is_pinned and m.embed_status == "pending"
        outcome = await svc.search(SearchFilters(user_id="alice"), "blue button", count_view=False)
        assert [h.memory.id for h in outcome.hits] == [res.id]  # findable by keyword meanwhile
        emb_server.mode = "ok"
        await svc.processor.run_once()
        m = await svc.store.get_memory(res.id)
        assert m is not None and m.embed_status == "ok"


async def test_explicit_memory_with_the_llm_tagger_down(tmp_path: Path, llm_server: FakeLLMServer) -> None:
    s = make_settings(tmp_path, llm="openai", llm_url=llm_server.url, llm_model="fake")
    async with open_service(s) as svc:
        llm_server.mode = "down"
        res = await svc.remember(MessageIn(content="Release notes go in CHANGES.md", user_id="alice"))
        assert (res.stored, res.tagged, res.embedded) == (True, "pending", "pending")
        assert "HTTP 503" in res.notes[0]
        assert await svc.store.get_memory(res.id) is not None


async def test_a_failed_context_refresh_brings_the_batch_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows are marked done only once their neighbour context is written: a database error on the way leaves
    them leased, and they come back when the lease runs out."""
    from gieok.core.errors import StoreError
    from gieok.core.text import query_terms
    async with open_service(make_settings(tmp_path, lease_seconds=60), with_embedder=False) as svc:
        q, _ = await svc.ingest(MessageIn(content="Where did we park the zeppelin?", user_id="alice", session_id="s"))
        a, _ = await svc.ingest(MessageIn(content="Behind hangar nine.", user_id="alice", session_id="s"))
        lib = Librarian(svc.store, svc.embedder, svc.settings)
        real = svc.store.refresh_context

        async def broken(ids: list[str]) -> int:
            raise StoreError("database is locked")
        monkeypatch.setattr(svc.store, "refresh_context", broken)
        with pytest.raises(StoreError):
            await lib.run_once()
        assert {m.tag_status for m in await rows(svc)} == {"pending"}
        monkeypatch.setattr(svc.store, "refresh_context", real)
        await drive(lib, utcnow() + timedelta(seconds=61), steps=1, step=timedelta(seconds=1))
        assert {m.tag_status for m in await rows(svc)} == {"ok"}
        found = await svc.store.keyword_search(SearchFilters(user_id="alice"), query_terms("zeppelin"), 5)
        assert {m.id for m, _ in found} == {q, a}

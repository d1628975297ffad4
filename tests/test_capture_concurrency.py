"""Capture under concurrency: 4 agents hooking at once into one store, 1,000 events each, as separate OS
processes; every event stored exactly once and each agent's events in their order. Once straight into SQLite
(each event opens and closes the database, as a hook process does), once through a running server, and a
smaller run of the real console script."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.test_hook_outbox import age
from tests.test_hooks import GIEOK, hook_env, server  # noqa: F401  (the server fixture)

AGENTS = 4
EVENTS = 1000

# One agent: its events go through the hook's own handler, one after another, each as if it were a new hook
# process (nothing is kept between events but what the hook keeps on disk).
WORKER = """
import json, sys
from gieok.capture.hooks import handle_claude
from gieok.core.settings import load_settings
agent, n, cwd = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
suffix = sys.argv[4] if len(sys.argv) > 4 else ""
for i in range(n):
    ev = {"session_id": f"agent-{agent}", "hook_event_name": "UserPromptSubmit", "cwd": cwd,
          "prompt": f"agent {agent} event {i:04d} 기억{suffix}"}
    handle_claude(ev, load_settings())
"""


def run_agents(env: dict[str, str], cwd: Path, n: int = EVENTS, suffix: str = "") -> None:
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(a), str(n), str(cwd), suffix], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for a in range(AGENTS)]
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
        assert out == ""


def check(db: Path, n: int = EVENTS, suffix: str = "") -> None:
    with sqlite3.connect(db) as con:
        got = con.execute("SELECT session_id, content FROM memory ORDER BY session_id, created_at, id").fetchall()
    assert len(got) == AGENTS * n
    for a in range(AGENTS):
        mine = [c for s, c in got if s == f"agent-{a}"]
        # exactly once each, and in the order the agent sent them
        assert mine == [f"agent {a} event {i:04d} 기억{suffix}" for i in range(n)]


@pytest.mark.slow
def test_four_agents_straight_into_sqlite(tmp_path: Path) -> None:
    env = hook_env(tmp_path)
    run_agents(env, tmp_path)
    check(tmp_path / "memory.db")


@pytest.mark.slow
def test_four_agents_through_a_running_server(tmp_path: Path, server: tuple[dict[str, str], Path]) -> None:  # noqa: F811
    env, db = server
    # The hooks serve the server's store (a hook ignores a server of another one), with redaction off: the
    # token in every prompt is redacted only if the row went through the server.
    token = "gh" + "p_" + "Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LmZx9Q"
    run_agents({**env, "GIEOK_REDACT_SECRETS": "false"}, tmp_path, suffix=f" {token}")
    check(db, suffix=" [REDACTED:github_token]")


def test_four_agents_running_the_console_script(tmp_path: Path) -> None:
    env = hook_env(tmp_path)
    n = 8
    failures: list[str] = []

    def agent(a: int) -> None:
        for i in range(n):
            ev = {"session_id": f"agent-{a}", "hook_event_name": "UserPromptSubmit", "cwd": str(tmp_path),
                  "prompt": f"agent {a} event {i:04d} 기억"}
            r = subprocess.run([GIEOK, "hook", "claude-code"], input=json.dumps(ev), env=env, capture_output=True,
                               text=True, timeout=60)
            if r.returncode or r.stderr:
                failures.append(r.stderr)

    threads = [threading.Thread(target=agent, args=(a,)) for a in range(AGENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # On a loaded machine a hook may run out of its 5 s and be stopped by its watchdog: that, and only that,
    # is allowed, because its messages wait in the outbox. One more run (once they look abandoned) stores them.
    assert all("gave up after 5 s" in f and "hooks/outbox" in f for f in failures), failures
    outbox = tmp_path / "hooks" / "outbox"
    for _ in range(10 if failures else 0):   # each run drains what its spare time allows
        if not age(outbox, 60):
            break
        r = subprocess.run([GIEOK, "hook", "claude-code"], env=env, capture_output=True, text=True, timeout=60,
                           input=json.dumps({"session_id": "drain", "hook_event_name": "SessionEnd",
                                             "cwd": str(tmp_path)}))
        assert r.returncode == 0
    check(tmp_path / "memory.db", n)
    assert os.listdir(tmp_path / "hooks")    # one cursor per agent session

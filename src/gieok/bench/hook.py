"""`gieok bench hook`: wall time of the real `gieok hook claude-code` process per event (spawn to exit), against
a temp GIEOK_HOME, writing straight to SQLite and through a running server.

Every prompt waits for the hook, and most of a hook's time is interpreter start and imports, so the number
that matters is the hook next to a bare `python -c pass` of the same interpreter. The bare run is measured in
the same loop, right after each hook event: on a shared machine both see the same load. The session works
in a scratch git repository and every answer edits a file there, so the hook also gathers anchors (HEAD, blob
ids) as it does in real use. Byte-code caching is on (`PYTHONDONTWRITEBYTECODE` is dropped and one warm-up
event runs first), as on a user's machine: recompiling changed modules is not what a hook costs.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# The hook's budget with a server running: p50 at most this many bare interpreter starts.
TARGET_RATIO = 2.0


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))]


def _ms(xs: list[float]) -> dict[str, float]:
    return {"p50_ms": round(statistics.median(xs) * 1000, 2), "p95_ms": round(_pct(xs, 95) * 1000, 2)}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_health(port: int, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    import urllib.request
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("the benchmark server exited early")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=0.5) as r:
                if json.loads(r.read()).get("ok"):
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"the benchmark server did not answer on port {port} in {timeout:g} s")


def _entry(kind: str, i: int, session: str, cwd: str, content: Any, model: str = "") -> str:
    e: dict[str, Any] = {"type": kind, "uuid": f"{kind}-{i}", "sessionId": session, "cwd": cwd,
                         "timestamp": f"2026-11-30T09:{i // 60 % 60:02d}:{i % 60:02d}.000Z", "isSidechain": False,
                         "message": {"role": kind, "content": content, **({"model": model} if model else {})}}
    return json.dumps(e) + "\n"


def run_hook_bench(events: int, *, with_server: bool) -> dict[str, Any]:
    """Spawn the real `gieok hook claude-code` once per event and time it from spawn to exit."""
    from gieok.capture.install import gieok_argv
    exe = gieok_argv()
    with tempfile.TemporaryDirectory(prefix="gieok-bench-hook-") as tmp:
        home = Path(tmp)
        port = _free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIEOK_") and k != "PYTHONDONTWRITEBYTECODE"}
        env.update(GIEOK_HOME=str(home), GIEOK_USER_ID="bench", GIEOK_EMBEDDER="none", GIEOK_PORT=str(port),
                   GIEOK_HOST="127.0.0.1", OMP_NUM_THREADS="1")
        proc = None
        if with_server:
            proc = subprocess.Popen([*exe, "serve", "--transport", "http", "--port", str(port), "--no-librarian"],
                                    env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            if proc is not None:
                _wait_health(port, proc)
            return _bench_events(exe, env, home, events, "server running" if with_server else "no server")
        finally:
            if proc is not None:
                proc.terminate()
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()


async def count_rows(url: str) -> int:
    """Every row of the store at `url`, deleted ones included, whichever backend it is."""
    from gieok.store import open_store
    store = open_store(url)
    await store.open()
    try:
        return int((await store.stats(None))["total"])
    finally:
        await store.close()


async def _count(url: str) -> tuple[int, int]:
    """(rows, rows whose meta carries anchors) of the store at `url`."""
    from gieok.store import open_store
    store = open_store(url)
    await store.open()
    try:
        anchored = 0
        async for m in store.iter_memories(None):
            anchored += bool(m.meta.get("anchors"))
        return int((await store.stats(None))["total"]), anchored
    finally:
        await store.close()


def _scratch_repo(root: Path) -> Path:
    root.mkdir()
    (root / "billing").mkdir()
    (root / "billing" / "retry.py").write_text("".join(f"line {i}\n" for i in range(200)), "utf-8")
    git = ["git", "-C", str(root), "-c", "user.email=bench@example.com", "-c", "user.name=bench"]
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "bench"]):
        subprocess.run([*git, *args], check=True, capture_output=True, timeout=60)
    return root


def _bench_events(exe: list[str], env: dict[str, str], home: Path, events: int, mode: str) -> dict[str, Any]:
    session = "bench-session"
    repo = _scratch_repo(home / "shop")
    cwd = str(repo)
    target = repo / "billing" / "retry.py"
    transcript = home / "transcript.jsonl"
    transcript.touch()
    times: dict[str, list[float]] = {"UserPromptSubmit": [], "Stop": [], "SessionStart": []}
    bare: list[float] = []
    subprocess.run([*exe, "hook", "claude-code"], input=b"{}", env=env, capture_output=True, timeout=30)  # warm-up

    def fire(event: dict[str, Any]) -> None:
        t0 = time.perf_counter()
        r = subprocess.run([*exe, "hook", "claude-code"], input=json.dumps(event).encode(), env=env,
                           capture_output=True, timeout=30)
        times[event["hook_event_name"]].append(time.perf_counter() - t0)
        if r.returncode != 0 or r.stderr:
            raise RuntimeError(f"hook failed: {r.stderr.decode(errors='replace').strip()}")
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], env=env, capture_output=True, timeout=30, check=True)
        bare.append(time.perf_counter() - t0)

    base = {"session_id": session, "transcript_path": str(transcript), "cwd": cwd}
    for i in range(events):
        if i % 2 == 0:
            prompt = f"prompt {i}: please look at the flaky retry in billing/retry.py:{i % 50 + 1} 기억"
            with open(transcript, "a", encoding="utf-8") as fh:
                fh.write(_entry("user", i, session, cwd, prompt))
            fire({**base, "hook_event_name": "UserPromptSubmit", "prompt": prompt})
        else:
            answer = f"answer {i}: the fixture shares a temp dir; I made it per-test in billing/retry.py."
            new_line = f"line {i % 200} edited {i}\n"
            lines = target.read_text("utf-8").splitlines(keepends=True)
            lines[i % 200] = new_line
            target.write_text("".join(lines), "utf-8")           # the edit the turn made
            edit = {"type": "tool_use", "id": f"e{i}", "name": "Edit",
                    "input": {"file_path": str(target), "old_string": "x", "new_string": new_line}}
            with open(transcript, "a", encoding="utf-8") as fh:
                fh.write(_entry("assistant", i, session, cwd, [{"type": "tool_use", "id": f"t{i}", "name": "Bash",
                                                                "input": {"command": "pytest -q"}}, edit],
                                "bench-model"))
                fh.write(_entry("assistant", i + 10_000, session, cwd, [{"type": "text", "text": answer}],
                                "bench-model"))
            fire({**base, "hook_event_name": "Stop", "last_assistant_message": answer})
    for _ in range(10):
        fire({**base, "hook_event_name": "SessionStart", "source": "startup"})
    # The hooks' own database (their environment names no other), counted through the store like any other.
    from gieok.core.settings import load_settings
    hooks = load_settings(home=str(home), database_url=env.get("GIEOK_DATABASE_URL", ""))
    stored, anchored = asyncio.run(_count(hooks.resolved_database_url))
    allt = times["UserPromptSubmit"] + times["Stop"]
    res: dict[str, Any] = {"mode": mode, "events": len(allt), "stored": stored, **_ms(allt)}
    for k, v in times.items():
        res[k] = _ms(v)
    res["bare_python"] = _ms(bare)
    res["ratio_p50"] = round(res["p50_ms"] / res["bare_python"]["p50_ms"], 2)
    res["line"] = (f"hook claude-code ({mode}): {res['events']} events, p50 {res['p50_ms']:.0f} ms, p95 "
                   f"{res['p95_ms']:.0f} ms (UserPromptSubmit p50 {res['UserPromptSubmit']['p50_ms']:.0f} ms, Stop p50 "
                   f"{res['Stop']['p50_ms']:.0f} ms, SessionStart p50 {res['SessionStart']['p50_ms']:.0f} ms); "
                   f"{stored}/{len(allt)} stored, {anchored} with anchors")
    res["bare_line"] = (f"  bare `python -c pass` in the same run: {len(bare)} runs, p50 "
                        f"{res['bare_python']['p50_ms']:.0f} ms, p95 {res['bare_python']['p95_ms']:.0f} ms; "
                        f"hook p50 = {res['ratio_p50']:.2f}× bare"
                        + (f" (target ≤ {TARGET_RATIO:g}×)" if mode == "server running" else ""))
    return res


def run_gather_bench(runs: int = 200) -> dict[str, Any]:
    """What anchoring costs a hook, in process: `gather` for a turn that edited one file and names two in a git
    repository (HEAD and remote read from `.git`, the files hashed), next to one `git rev-parse HEAD`."""
    from gieok.core.anchors import FileRef, gather, mentions
    with tempfile.TemporaryDirectory(prefix="gieok-bench-gather-") as tmp:
        repo = _scratch_repo(Path(tmp) / "shop")
        (repo / "README.md").write_text("# shop\n" * 200, "utf-8")
        target = str(repo / "billing" / "retry.py")
        text = "Seeded the clock in billing/retry.py:12-18; README.md explains why."
        took, git_took = [], []
        for _ in range(runs):
            t0 = time.perf_counter()
            anchors = gather([FileRef(target, "edit", new_text="line 12\n"), *mentions(text)], str(repo))
            took.append(time.perf_counter() - t0)
        for _ in range(max(10, runs // 10)):
            t0 = time.perf_counter()
            subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, check=True)
            git_took.append(time.perf_counter() - t0)
    res: dict[str, Any] = {"anchors": len(anchors), "gather": _ms(took), "git_rev_parse": _ms(git_took)}
    res["line"] = (f"anchors: gather() for a turn editing 1 file and naming 2, in a git repository: p50 "
                   f"{res['gather']['p50_ms']:.2f} ms, p95 {res['gather']['p95_ms']:.2f} ms ({len(anchors)} anchors); "
                   f"one `git rev-parse HEAD` subprocess: p50 {res['git_rev_parse']['p50_ms']:.1f} ms")
    return res

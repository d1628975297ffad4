"""A hook stopped by its watchdog loses nothing: its messages wait in `<GIEOK_HOME>/hooks/outbox/` and a later
hook run stores them, once, with the time they were captured. Real hook processes on a real SQLite file; the
database is held by another connection (BEGIN EXCLUSIVE) so the stopped hook really is stuck in its write."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from tests.test_hooks import hook_env, run_hook

# The hook with a short deadline, so the test does not wait out the real 5 s.
STUCK = ("import sys; from gieok.capture.hooks import run, read_stdin; "
         "sys.exit(run('claude-code', read_stdin, deadline_s=2))")


def prompt(text: str, session: str = "s1") -> dict[str, str]:
    return {"session_id": session, "hook_event_name": "UserPromptSubmit", "cwd": "/tmp", "prompt": text}


def rows(db: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(db) as con:
        return con.execute("SELECT content, created_at FROM memory ORDER BY created_at").fetchall()


def age(outbox: Path, seconds: float) -> list[Path]:
    """Make the outbox's files look `seconds` old: what a later hook run would find."""
    files = sorted(outbox.glob("*.json"))
    for f in files:
        t = time.time() - seconds
        os.utime(f, (t, t))
    return files


def test_a_stopped_hook_leaves_its_prompt_for_the_next_run(tmp_path: Path) -> None:
    env = hook_env(tmp_path, GIEOK_BUSY_TIMEOUT_MS="60000")
    assert run_hook(env, prompt("first, to create the database")).stderr == ""
    db, outbox = tmp_path / "memory.db", tmp_path / "hooks" / "outbox"
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        stuck = subprocess.run([sys.executable, "-c", STUCK], input=json.dumps(prompt("배포는 화요일에 해요")),
                               env=env, capture_output=True, text=True, timeout=30)
    finally:
        holder.rollback()
        holder.close()
    assert stuck.returncode == 0 and "gave up after 2 s" in stuck.stderr and "hooks/outbox" in stuck.stderr
    left = list(outbox.glob("*.json"))
    assert len(left) == 1 and oct(left[0].stat().st_mode & 0o777) == "0o600"
    assert [c for c, _ in rows(db)] == ["first, to create the database"]
    captured_at = json.loads(left[0].read_text())[0]["created_at"]

    # A run right after leaves a file that young alone: its writer may still be at work.
    assert run_hook(env, prompt("second")).stderr == ""
    assert len(list(outbox.glob("*.json"))) == 1
    age(outbox, 60)
    assert run_hook(env, prompt("third")).stderr == ""
    assert list(outbox.glob("*.json")) == []
    got = rows(db)
    assert [c for c, _ in got] == ["first, to create the database", "배포는 화요일에 해요", "second", "third"]
    assert captured_at[:19] in next(t for c, t in got if c == "배포는 화요일에 해요")   # the time it was captured
    # The next run finds nothing left to deliver: the stopped hook's prompt is stored once.
    assert run_hook(env, prompt("fourth")).stderr == ""
    assert [c for c, _ in rows(db)].count("배포는 화요일에 해요") == 1 and len(rows(db)) == 5


def test_an_unreadable_outbox_file_does_not_stop_capture(tmp_path: Path) -> None:
    env = hook_env(tmp_path)
    outbox = tmp_path / "hooks" / "outbox"
    outbox.mkdir(parents=True)
    (outbox / "1-1.json").write_text("{not json")
    age(outbox, 60)
    assert run_hook(env, prompt("still captured")).stderr == ""
    assert [c for c, _ in rows(tmp_path / "memory.db")] == ["still captured"]


def test_doctor_tells_about_messages_waiting_in_the_outbox(tmp_path: Path) -> None:
    from tests.test_cli import run as cli
    assert "[ok] hooks: no captured messages waiting" in cli("doctor", home=tmp_path).stdout
    outbox = tmp_path / "hooks" / "outbox"
    outbox.mkdir(parents=True)
    (outbox / "1-1.json").write_text(json.dumps([{"content": "회의는 목요일", "role": "user"}]))
    age(outbox, 600)
    r = cli("doctor", home=tmp_path)
    assert "[warn] hooks: 1 batch(es) of captured messages wait in" in r.stdout
    assert "(the oldest for 10 min)" in r.stdout
    assert r.returncode == 0, r.stdout        # waiting is not failing: nothing is lost


def test_a_hook_stopped_mid_write_leaves_no_half_file_and_loses_no_whole_one(tmp_path: Path) -> None:
    """Stopped between writing its outbox file and renaming it: a whole temp file is delivered by the next run,
    a half-written one is removed (it holds unredacted text), a young one is left to its writer."""
    env = hook_env(tmp_path)
    assert run_hook(env, prompt("first, to create the database")).stderr == ""
    outbox = tmp_path / "hooks" / "outbox"
    outbox.mkdir(parents=True, exist_ok=True)
    msg = {"content": "회의록은 금요일까지 보내기", "role": "user", "platform": "claude-code",
           "session_id": "s1", "created_at": "2026-11-30T09:00:00+00:00"}
    whole = outbox / ".100-7.json.7.tmp"
    whole.write_text(json.dumps([msg]))
    half = outbox / ".101-8.json.8.tmp"
    half.write_text('[{"content": "sk_live_')
    for f in (whole, half):
        os.utime(f, (time.time() - 60, time.time() - 60))
    young = outbox / ".102-9.json.9.tmp"
    young.write_text(json.dumps([msg]))
    assert run_hook(env, prompt("second")).stderr == ""
    assert "회의록은 금요일까지 보내기" in [c for c, _ in rows(tmp_path / "memory.db")]
    assert sorted(p.name for p in outbox.iterdir()) == [young.name]

"""Agent hooks: the real `gieok hook …` process (exit 0 on anything, bounded time, stdout only for context), the
Claude Code event flow over a transcript that grows like a real one, the Stop flush race, subagents, Codex
notify, and talking to a running server instead of the database."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from gieok.capture import hook_messages, hooks
from gieok.core.settings import Settings, load_settings

GIEOK = str(Path(sys.executable).with_name("gieok"))
FIX = Path(__file__).parent / "fixtures"
SESSION = "3f6d2c1e-8b4a-4f0e-9c2d-7a1b5e9f0c31"
TRANSCRIPT = FIX / "claude_code" / "projects" / "-home-dev-shop" / f"{SESSION}.jsonl"
EVENTS: dict[str, dict[str, Any]] = json.loads((FIX / "claude_code" / "hook_events.json").read_text("utf-8"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def hook_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIEOK_")}
    # A port nobody listens on: these runs must not find a developer's server.
    env.update(GIEOK_HOME=str(home), GIEOK_USER_ID="alice", GIEOK_EMBEDDER="none", GIEOK_PORT=str(free_port()),
               HOME=str(home), CODEX_HOME=str(home / ".codex"), OMP_NUM_THREADS="1")
    env.update(extra)
    return env


def run_hook(env: dict[str, str], event: dict[str, Any] | str, *args: str,
             platform: str = "claude-code") -> subprocess.CompletedProcess[str]:
    data = event if isinstance(event, str) else json.dumps(event)
    return subprocess.run([GIEOK, "hook", platform, *args], input=data, env=env, capture_output=True, text=True,
                          timeout=30)


def rows(db: Path, where: str = "1=1") -> list[dict[str, Any]]:
    with sqlite3.connect(db) as con:
        con.row_factory = sqlite3.Row
        return [dict(r) for r in con.execute(f"SELECT * FROM memory WHERE {where} ORDER BY created_at, id")]


def event(name: str, transcript: Path, cwd: Path, **kw: Any) -> dict[str, Any]:
    ev = {k: (v.replace("{transcript}", str(transcript)).replace("{cwd}", str(cwd)) if isinstance(v, str) else v)
          for k, v in EVENTS[name].items()}
    ev.update(kw)
    return ev


def transcript_lines() -> list[str]:
    return TRANSCRIPT.read_text("utf-8").splitlines(keepends=True)


def upto(uuid: str) -> int:
    """How many transcript lines there are up to and including the entry `uuid`."""
    for i, line in enumerate(transcript_lines()):
        if json.loads(line).get("uuid") == uuid:
            return i + 1
    raise KeyError(uuid)


class Growing:
    """A transcript that Claude Code is still writing: lines are appended as the session goes on, their times
    moved to now so that hook times (the clock) and transcript times (the file) line up as in a real session."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lines = transcript_lines()
        self.n = 0
        first = min(json.loads(ln)["timestamp"] for ln in self.lines if '"timestamp"' in ln)
        shift = datetime.now(UTC) - datetime.fromisoformat(first.replace("Z", "+00:00"))
        self.shift = timedelta(milliseconds=int(shift.total_seconds() * 1000))
        path.write_text("", "utf-8")

    def when(self, ts: str) -> datetime:
        return datetime.fromisoformat(ts.replace("Z", "+00:00")) + self.shift

    def to(self, uuid: str) -> None:
        end = upto(uuid)
        with open(self.path, "a", encoding="utf-8") as fh:
            for line in self.lines[self.n:end]:
                e = json.loads(line)
                if "timestamp" in e:
                    e["timestamp"] = self.when(e["timestamp"]).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
                fh.write(json.dumps(e, ensure_ascii=False) + "\n")
        self.n = end


@pytest.fixture
def project(tmp_path: Path) -> Path:
    repo = tmp_path / "shop"
    (repo / ".git").mkdir(parents=True)
    (repo / "src" / "payments").mkdir(parents=True)
    return repo / "src" / "payments"


@pytest.fixture
def hook_settings(tmp_path: Path) -> Settings:
    return load_settings(home=str(tmp_path / "home"), user_id="alice", embedder="none", port=free_port(),
                         database_url="")


# --- the process: never breaks the agent ---------------------------------------------------------------
@pytest.mark.parametrize("stdin", ["this is not json", "", "[1, 2]", '{"hook_event_name": "Stop"}'])
def test_bad_input_exits_0_with_one_line_on_stderr(tmp_path: Path, stdin: str) -> None:
    t0 = time.monotonic()
    r = run_hook(hook_env(tmp_path), stdin)
    assert r.returncode == 0
    assert r.stdout == ""
    assert r.stderr.startswith("gieok hook claude-code: ") and r.stderr.count("\n") == 1
    assert time.monotonic() - t0 < 10
    assert "gieok hook claude-code" in (tmp_path / "hooks" / "hook.log").read_text("utf-8")


def test_unreadable_database_is_reported_not_raised(tmp_path: Path, project: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    env = hook_env(tmp_path, GIEOK_DATABASE_URL=f"sqlite:///{blocker}/sub/memory.db")
    r = run_hook(env, {"session_id": "s", "hook_event_name": "UserPromptSubmit", "cwd": str(project),
                       "prompt": "hello"})
    assert r.returncode == 0 and r.stdout == ""
    assert "file/sub" in r.stderr      # names the path it could not create


def test_watchdog_caps_a_stuck_hook(tmp_path: Path) -> None:
    code = ("import time; from gieok.capture import hooks; "
            "hooks.run('claude-code', lambda: time.sleep(30) or '', deadline_s=1.0); print('not reached')")
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-c", code], env=hook_env(tmp_path), capture_output=True, text=True,
                       timeout=20)
    assert r.returncode == 0
    assert time.monotonic() - t0 < 8
    assert "gave up after 1 s" in r.stderr and "not reached" not in r.stdout


# --- where ---------------------------------------------------------------------------------------------
def test_project_hint_reads_git_without_running_it(tmp_path: Path, project: Path) -> None:
    assert hook_messages.project_hint(str(project)) == "shop"
    plain = tmp_path / "notes" / "2026"
    plain.mkdir(parents=True)
    assert hook_messages.project_hint(str(plain)) == "2026"
    wt = tmp_path / "shop-feature"
    wt.mkdir()
    (wt / ".git").write_text(f"gitdir: {tmp_path / 'shop' / '.git' / 'worktrees' / 'shop-feature'}\n")
    assert hook_messages.project_hint(str(wt)) == "shop"
    sub = tmp_path / "shop" / "vendor" / "lib"
    sub.mkdir(parents=True)
    (sub / ".git").write_text("gitdir: ../../.git/modules/lib\n")
    assert hook_messages.project_hint(str(sub)) == "lib"


# --- Claude Code: a session as it happens ---------------------------------------------------------------
def test_claude_code_session_then_import_stores_nothing_twice(tmp_path: Path, project: Path) -> None:
    env = hook_env(tmp_path)
    db = tmp_path / "memory.db"
    tr = tmp_path / "t.jsonl"
    g = Growing(tr)

    r = run_hook(env, event("SessionStart", tr, project))
    assert r.returncode == 0 and r.stdout == "" and r.stderr == ""     # nothing remembered yet: nothing said

    g.to("u-01")
    assert run_hook(env, event("UserPromptSubmit", tr, project)).stderr == ""
    g.to("a-08s")                                   # the first turn, tools and all, plus a synthetic placeholder
    r = run_hook(env, event("Stop", tr, project))
    assert r.returncode == 0 and r.stdout == "" and r.stderr == ""

    g.to("u-09")
    second = json.loads(transcript_lines()[upto("u-09") - 1])["message"]["content"]
    assert run_hook(env, event("UserPromptSubmit", tr, project, prompt=second)).stderr == ""
    g.to("s-14")                                    # the reviewer subagent works (sidechain entries)
    r = run_hook(env, event("SubagentStop", tr, project))
    assert r.returncode == 0 and r.stderr == ""
    g.to("a-16")
    last = json.loads(transcript_lines()[upto("a-16") - 1])["message"]["content"][0]["text"]
    assert run_hook(env, event("Stop", tr, project, last_assistant_message=last)).stderr == ""
    g.to("u-17")
    assert run_hook(env, event("SessionEnd", tr, project)).stderr == ""

    got = rows(db)
    assert sorted((r["role"], r["is_subagent"]) for r in got) == [
        ("assistant", 0), ("assistant", 0), ("assistant", 1), ("system", 1), ("user", 0), ("user", 0)]
    u1, u2 = [r for r in got if r["role"] == "user"]
    a1, a2 = [r for r in got if r["role"] == "assistant" and not r["is_subagent"]]
    task, sub = [r for r in got if r["is_subagent"]]
    assert {r["agent_platform"] for r in got} == {"claude-code"}
    assert {r["session_id"] for r in got} == {SESSION}
    assert {r["project"] for r in got} == {"shop"}
    # the transcript's time, not the hook's
    assert a1["created_at"] == g.when("2026-11-28T09:00:08.410Z").strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    assert u1["content"].startswith("The checkout test") and u1["created_at"] < a1["created_at"]
    assert a1["agent_model"] == "claude-opus-4-5-20251101"
    assert a1["content"].startswith("I'll run the test a few times and read it.\n\n[tool: Bash] for i in")
    assert "[tool: Read] /home/dev/shop/tests/test_checkout.py" in a1["content"]
    assert a1["content"].endswith("I changed the fixture to integer cents.")
    assert "No response requested" not in a1["content"] and "Let me look at the test first" not in a1["content"]
    assert "1999 == 2000" not in a1["content"]                   # tool results are not stored
    assert u2["agent_model"] == "claude-opus-4-5-20251101"       # the prompt is tagged with the session's model
    assert "sk_test_51Hx" not in u2["content"] and "[REDACTED" in u2["content"]
    assert a2["content"].startswith("[tool: Task] (reviewer) Review payment retry") and "멱등성" in a2["content"]
    assert task["subagent_role"] == "reviewer" and task["content"].startswith("Review src/payments/retry.py")
    assert sub["subagent_role"] == "reviewer" and sub["subagent_model"] == "claude-haiku-4-5-20251001"
    assert sub["agent_model"] == "claude-opus-4-5-20251101"
    assert "charge twice" in sub["content"]

    # The same session imported later: every turn and prompt is already there.
    r = subprocess.run([GIEOK, "import", "claude-code", str(tr), "--no-progress"], env=env, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "stored 0" in r.stdout and "skipped 6" in r.stdout
    assert len(rows(db)) == 6

    # SessionStart now has something to say for this project and model.
    r = run_hook(env, event("SessionStart", tr, project, source="resume"))
    assert r.returncode == 0 and r.stderr == ""
    assert r.stdout.startswith("# Memory for alice (gieok)") and "integer cents" in r.stdout
    assert len(r.stdout) <= hook_messages.CONTEXT_MAX_CHARS


def test_stop_before_flush_stores_the_turn_whole_later(tmp_path: Path, project: Path,
                                                       hook_settings: Settings) -> None:
    tr = tmp_path / "t.jsonl"
    g = Growing(tr)
    g.to("u-07")        # Claude Code ran Stop, but the final text (a-08) is not in the file yet
    final = json.loads(transcript_lines()[upto("a-08") - 1])["message"]["content"][0]["text"]
    t0 = time.monotonic()
    hooks.handle_claude(event("Stop", tr, project, last_assistant_message=final), hook_settings)
    assert time.monotonic() - t0 >= hook_messages.FLUSH_WAIT_S * 0.9
    db = Path(hook_settings.home) / "memory.db"
    assert not db.exists() or rows(db) == []       # nothing half-stored

    g.to("u-09")
    hooks.handle_claude(event("UserPromptSubmit", tr, project, prompt="next"), hook_settings)
    turns = rows(db, "role='assistant'")
    assert len(turns) == 1 and turns[0]["content"].endswith("integer cents.")
    assert turns[0]["content"].startswith("I'll run the test")


def test_stop_waits_for_a_late_flush(tmp_path: Path, project: Path, hook_settings: Settings) -> None:
    tr = tmp_path / "t.jsonl"
    g = Growing(tr)
    g.to("u-07")
    final = json.loads(transcript_lines()[upto("a-08") - 1])["message"]["content"][0]["text"]
    late = threading.Timer(0.3, g.to, args=("a-08",))
    late.start()
    hooks.handle_claude(event("Stop", tr, project, last_assistant_message=final), hook_settings)
    late.join()
    turns = rows(Path(hook_settings.home) / "memory.db", "role='assistant'")
    assert len(turns) == 1 and turns[0]["content"].endswith("integer cents.")


def test_repeated_stop_reads_only_new_turns(tmp_path: Path, project: Path, hook_settings: Settings) -> None:
    tr = tmp_path / "t.jsonl"
    g = Growing(tr)
    g.to("a-08")
    hooks.handle_claude(event("Stop", tr, project, last_assistant_message=None), hook_settings)
    state = json.loads((Path(hook_settings.home) / "hooks" / f"{SESSION}.json").read_text())
    assert state["offset"] == tr.stat().st_size and state["model"] == "claude-opus-4-5-20251101"
    hooks.handle_claude(event("Stop", tr, project, last_assistant_message=None), hook_settings)
    state["offset"] = 0     # a lost cursor re-reads the whole file: the store's dedup keeps one copy
    (Path(hook_settings.home) / "hooks" / f"{SESSION}.json").write_text(json.dumps(state))
    hooks.handle_claude(event("Stop", tr, project, last_assistant_message=None), hook_settings)
    assert len(rows(Path(hook_settings.home) / "memory.db", "role='assistant'")) == 1


def test_a_turn_over_the_size_limit_is_split_not_lost(tmp_path: Path, project: Path) -> None:
    s = load_settings(home=str(tmp_path / "home"), user_id="alice", embedder="none", port=free_port(),
                      max_content_bytes=400)
    tr = tmp_path / "t.jsonl"
    long = "\n".join(f"line {i}: 결제 재시도 로직을 확인했습니다." for i in range(40))
    entry = {"type": "assistant", "uuid": "a1", "sessionId": SESSION, "timestamp": "2026-11-28T10:00:00.000Z",
             "message": {"role": "assistant", "model": "m", "content": [{"type": "text", "text": long}]}}
    tr.write_text(json.dumps(entry, ensure_ascii=False) + "\n", "utf-8")
    hooks.handle_claude(event("SessionEnd", tr, project), s)
    parts = rows(Path(s.home) / "memory.db")
    assert len(parts) > 1
    assert all(len(p["content"].encode()) <= 400 for p in parts)
    assert "".join(p["content"] for p in parts) == long


# --- Codex ---------------------------------------------------------------------------------------------
def test_codex_notify(tmp_path: Path, project: Path) -> None:
    env = hook_env(tmp_path)
    (tmp_path / ".codex").mkdir()
    (tmp_path / ".codex" / "config.toml").write_text('model = "gpt-5.5"\n')
    payload = (FIX / "codex" / "notify_turn.json").read_text("utf-8").replace("{cwd}", str(project))
    for _ in range(2):                                  # a re-sent turn is not stored twice
        r = run_hook(env, "", payload, platform="codex")
        assert r.returncode == 0 and r.stdout == "" and r.stderr == ""
    got = rows(tmp_path / "memory.db")
    assert [g["role"] for g in got] == ["user", "user", "assistant"]
    assert got[1]["content"] == "테스트도 같이 고쳐 주세요."
    assert {g["agent_platform"] for g in got} == {"codex"} and {g["agent_model"] for g in got} == {"gpt-5.5"}
    assert {g["session_id"] for g in got} == {"0199a7c4-5b2e-7d10-9f3a-2c4e6b8d0f12"}
    assert {g["project"] for g in got} == {"shop"}
    r = run_hook(env, "", '{"type": "approval-requested"}', platform="codex")
    assert r.returncode == 0 and r.stderr == "" and len(rows(tmp_path / "memory.db")) == 3
    r = run_hook(env, "", "not json", platform="codex")
    assert r.returncode == 0 and r.stderr.startswith("gieok hook codex: ")


# --- with a server running -----------------------------------------------------------------------------
@contextlib.contextmanager
def running_server(home: Path) -> Iterator[dict[str, str]]:
    """`gieok serve --transport http` for the database in `home`; yields its environment (GIEOK_PORT)."""
    import urllib.request
    env = hook_env(home)
    proc = subprocess.Popen([GIEOK, "serve", "--transport", "http", "--port", env["GIEOK_PORT"], "--no-librarian"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{env['GIEOK_PORT']}/health", timeout=0.5) as resp:
                if json.loads(resp.read()).get("ok"):
                    break
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(proc.stderr.read().decode() if proc.stderr else "server did not start")
        time.sleep(0.2)
    try:
        yield env
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[dict[str, str], Path]]:
    home = tmp_path / "server-home"
    with running_server(home) as env:
        yield env, home / "memory.db"


# A token the server redacts and the hook is told not to: a redacted row went through the server.
FAKE_TOKEN = "gh" + "p_" + "Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LmZx9Q"


def test_hook_talks_to_a_running_server_of_its_own_store(tmp_path: Path, project: Path,
                                                         server: tuple[dict[str, str], Path]) -> None:
    server_env, server_db = server
    env = {**server_env, "GIEOK_REDACT_SECRETS": "false"}
    tr = tmp_path / "t.jsonl"
    g = Growing(tr)
    g.to("u-01")
    prompt = f"{EVENTS['UserPromptSubmit']['prompt']} my token is {FAKE_TOKEN}"
    assert run_hook(env, event("UserPromptSubmit", tr, project, prompt=prompt)).stderr == ""
    g.to("a-08")
    assert run_hook(env, event("Stop", tr, project)).stderr == ""
    got = rows(server_db)
    assert [r["role"] for r in got] == ["user", "assistant"]
    assert FAKE_TOKEN not in got[0]["content"] and "[REDACTED:github_token]" in got[0]["content"]
    r = run_hook(env, event("SessionStart", tr, project, source="resume"))
    assert r.returncode == 0 and r.stderr == ""
    assert "integer cents" in r.stdout and "once in ten runs" in r.stdout


def test_hook_ignores_a_server_of_another_store(tmp_path: Path, project: Path,
                                                server: tuple[dict[str, str], Path]) -> None:
    """Two servers, two stores: a hook configured for store B, with server A on its port, writes to B itself;
    pointed at B's server, it goes through that one."""
    server_env, server_db = server
    other_home = tmp_path / "other-home"
    with running_server(other_home) as other_env:
        mine = {**server_env, "GIEOK_DATABASE_URL": f"sqlite:///{other_home / 'memory.db'}",
                "GIEOK_REDACT_SECRETS": "false"}
        tr = tmp_path / "t.jsonl"
        Growing(tr).to("u-01")
        prompt = f"token {FAKE_TOKEN}"
        assert run_hook(mine, event("UserPromptSubmit", tr, project, prompt=prompt)).stderr == ""
        assert rows(server_db) == []                        # server A never saw it
        direct = rows(other_home / "memory.db")
        assert [r["content"] for r in direct] == [prompt]   # written directly: not redacted by a server
        r = run_hook(mine, event("SessionStart", tr, project, source="resume"))
        assert r.returncode == 0 and r.stderr == ""
        assert "integer cents" not in r.stdout              # no context from A's store either
        through_b = {**mine, "GIEOK_PORT": other_env["GIEOK_PORT"]}
        assert run_hook(through_b, event("UserPromptSubmit", tr, project, prompt=prompt + " again")).stderr == ""
        assert rows(server_db) == []
        assert [r["content"] for r in rows(other_home / "memory.db")][-1] == "token [REDACTED:github_token] again"


def test_context_endpoint(server: tuple[dict[str, str], Path]) -> None:
    import urllib.error
    import urllib.request
    env, _ = server
    body = json.dumps({"content": "I prefer pytest over unittest", "session_id": "s1", "project": "shop",
                       "platform": "claude-code", "model": "opus-4-7"}).encode()
    base = f"http://127.0.0.1:{env['GIEOK_PORT']}"
    req = urllib.request.Request(base + "/v1/messages", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=5) as resp:
        assert json.loads(resp.read())["stored"][0]["inserted"] is True
    with urllib.request.urlopen(base + "/v1/context?platform=claude-code&model=opus-4-7&project=shop&budget=500",
                                timeout=5) as resp:
        block = json.loads(resp.read())
    assert "pytest over unittest" in block["text"] and block["budget"] == 500
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(base + "/v1/context?budget=many", timeout=5)
    assert err.value.code == 400


def test_console_script_is_where_the_tests_expect_it() -> None:
    assert shutil.which(GIEOK) or Path(GIEOK).exists()

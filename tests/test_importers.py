"""Importers: Claude Code transcripts (a file or a projects tree with subagents) and a ChatGPT export, through
the real CLI into a real SQLite file; original times, roles, models and sessions kept; nothing stored twice."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from gieok.capture.importers import (
    BatchWriter,
    claude_code_files,
    import_sources,
    read_lines,
    split_content,
    stream_items,
    tool_line,
)
from gieok.memory.ingest import MessageIn
from gieok.memory.service import MemoryService

GIEOK = str(Path(sys.executable).with_name("gieok"))
FIX = Path(__file__).parent / "fixtures"
PROJECTS = FIX / "claude_code" / "projects"
S1 = "3f6d2c1e-8b4a-4f0e-9c2d-7a1b5e9f0c31"
S2 = "9a1c7e44-2d3b-4c5f-8e6a-0b9d1f2c3e47"
CHATGPT = FIX / "chatgpt" / "conversations.json"


def cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIEOK_")}
    env.update(GIEOK_HOME=str(tmp_path), GIEOK_USER_ID="alice", GIEOK_EMBEDDER="none", HOME=str(tmp_path))
    r = subprocess.run([GIEOK, *args], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r


def rows(tmp_path: Path, where: str = "1=1") -> list[dict[str, Any]]:
    with sqlite3.connect(tmp_path / "memory.db") as con:
        con.row_factory = sqlite3.Row
        return [dict(r) for r in con.execute(f"SELECT * FROM memory WHERE {where} ORDER BY created_at, id")]


def test_claude_code_projects_tree(tmp_path: Path) -> None:
    r = cli(tmp_path, "import", "claude-code", str(PROJECTS), "--no-progress")
    assert r.stdout.strip() == "read 10, stored 10, skipped 0 already present"
    got = rows(tmp_path)
    s1 = [g for g in got if g["session_id"] == S1]
    s2 = [g for g in got if g["session_id"] == S2]
    assert [(g["role"], g["is_subagent"]) for g in s1] == [
        ("user", 0), ("assistant", 0), ("user", 0), ("assistant", 0), ("system", 1), ("assistant", 1)]
    assert [g["created_at"] for g in s1] == [
        "2026-11-28T09:00:05.120000Z", "2026-11-28T09:00:08.410000Z", "2026-11-28T09:02:10.004000Z",
        "2026-11-28T09:02:13.500000Z", "2026-11-28T09:02:13.700000Z", "2026-11-28T09:02:16.100000Z"]
    assert {g["agent_platform"] for g in got} == {"claude-code"}
    assert {g["project"] for g in got} == {"shop"}                  # /home/dev/shop: no repo here, the dir name
    assert s1[1]["agent_model"] == "claude-opus-4-5-20251101"
    assert json.loads(s1[1]["meta"])["title"] == "Fix flaky checkout test and review payment retry"
    assert "[REDACTED" in s1[2]["content"] and "sk_test_51Hx" not in s1[2]["content"]
    assert "[tool: Task] (reviewer) Review payment retry" in s1[3]["content"] and "이중 결제" in s1[3]["content"]
    assert s1[5]["subagent_role"] == "reviewer" and s1[5]["subagent_model"] == "claude-haiku-4-5-20251001"
    assert all("/clear" not in g["content"] and "No response requested" not in g["content"] for g in got)
    # new layout: <session>/subagents/agent-<id>.jsonl, role known from the main transcript's Task call
    sub = [g for g in s2 if g["is_subagent"]]
    assert [(g["role"], g["subagent_role"], g["agent_model"]) for g in sub] == [
        ("system", "researcher", "claude-sonnet-4-5-20250929"),
        ("assistant", "researcher", "claude-sonnet-4-5-20250929")]
    assert sub[1]["subagent_model"] == "claude-haiku-4-5-20251001"

    again = cli(tmp_path, "import", "claude-code", str(PROJECTS / "-home-dev-shop" / f"{S1}.jsonl"), "--progress")
    assert "stored 0, skipped 6 already present" in again.stdout
    assert len(rows(tmp_path)) == 10


def test_chatgpt_export(tmp_path: Path) -> None:
    r = cli(tmp_path, "import", "chatgpt", str(CHATGPT), "--no-progress")
    assert r.stdout.strip() == "read 6, stored 6, skipped 0 already present"
    got = rows(tmp_path)
    bread = [g for g in got if g["session_id"] == "6745a1b0-1c2d-8003-9e4f-5a6b7c8d9e0f"]
    assert [g["role"] for g in bread] == ["user", "assistant", "user", "assistant"]
    assert bread[1]["content"].startswith("Around 70%")       # the kept regeneration, not the first answer
    assert bread[0]["created_at"] == datetime.fromtimestamp(1764061210.5, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    assert all("print(4" not in g["content"] for g in got)     # code sent to the python tool is not conversation
    assert {g["agent_platform"] for g in got} == {"chatgpt"}
    assert bread[1]["agent_model"] == "gpt-4o"
    assert json.loads(bread[0]["meta"])["title"] == "Sourdough hydration"
    jeju = [g for g in got if g["agent_model"] == "gpt-4o-mini"]
    assert len(jeju) == 2 and "렌터카" in jeju[0]["content"]

    assert "stored 0, skipped 6" in cli(tmp_path, "import", "chatgpt", str(CHATGPT), "--no-progress").stdout
    r = cli(tmp_path, "import", "chatgpt", str(CHATGPT), "--all-branches", "--no-progress")
    assert "stored 1, skipped 6" in r.stdout
    alt = rows(tmp_path, "content LIKE 'Start at 65%'")
    assert len(alt) == 1 and json.loads(alt[0]["meta"])["branch"] == "alternate"


def test_bad_paths_say_what_to_do(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIEOK_")}
    env.update(GIEOK_HOME=str(tmp_path), HOME=str(tmp_path))
    r = subprocess.run([GIEOK, "import", "claude-code", str(tmp_path / "missing")], env=env, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2 and "does not exist" in r.stderr
    bad = tmp_path / "conversations.json"
    bad.write_text("{not json")
    r = subprocess.run([GIEOK, "import", "chatgpt", str(bad)], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "conversations.json" in r.stderr


# --- the pieces ----------------------------------------------------------------------------------------
def test_turns_follow_user_entries_not_tool_results(tmp_path: Path) -> None:
    lines, end = read_lines(PROJECTS / "-home-dev-shop" / f"{S1}.jsonl")
    main = [ln for ln in lines if not ln.entry.get("isSidechain")]
    items = stream_items(main)
    assert [i.role for i in items] == ["user", "assistant", "user", "assistant"]
    assert items[1].closed and items[3].closed        # the Korean turn is closed by the meta caveat entry
    assert end == (PROJECTS / "-home-dev-shop" / f"{S1}.jsonl").stat().st_size


def test_a_half_written_last_line_waits(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    p.write_text('{"type": "user", "message": {"content": "hi"}}\n{"type": "assist')
    lines, end = read_lines(p, final=False)
    assert len(lines) == 1 and end == p.read_text().index("\n") + 1     # the next read starts at the half line
    assert len(read_lines(p, end, final=False)[0]) == 0


def test_tool_lines_are_short() -> None:
    line = tool_line({"name": "Bash", "input": {"command": "echo " + "x" * 500, "description": "d"}})
    assert line.startswith("[tool: Bash] echo xxx") and len(line) <= 160
    assert tool_line({"name": "Glob", "input": {}}) == "[tool: Glob]"


def test_split_content_keeps_every_character() -> None:
    text = "\n".join(f"{i} 기억 memory" for i in range(300))
    parts = split_content(text, 100)
    assert "".join(parts) == text and all(len(p.encode()) <= 100 for p in parts)
    assert split_content("short", 100) == ["short"]


async def test_hooked_prompts_match_imported_ones_one_to_one(svc: MemoryService) -> None:
    t = datetime(2026, 11, 28, 9, 0, tzinfo=UTC)
    # the hook stored "yes" when it was typed, a moment before the transcript's time for it
    await svc.ingest(MessageIn(content="yes", user_id="alice", session_id="s", created_at=t))
    writer = BatchWriter(svc.store, max_bytes=65536, redact_secrets=True)
    msgs = [MessageIn(content="yes", user_id="alice", session_id="s", created_at=t + timedelta(seconds=2)),
            MessageIn(content="yes", user_id="alice", session_id="s", created_at=t + timedelta(minutes=3)),
            MessageIn(content="", user_id="alice", session_id="s", created_at=t)]
    counts = await import_sources(writer, [msgs], lambda batch: batch, label="test", progress=False)
    assert (counts.read, counts.stored, counts.duplicates, counts.invalid) == (3, 1, 1, 1)
    assert "content" in counts.errors[0]
    stored = await svc.store.list_memories(svc.filters("alice", session_id="s"), limit=10, newest_first=False)
    assert [m.created_at for m in stored] == [t, t + timedelta(minutes=3)]


def test_projects_tree_lists_main_sessions_before_their_subagents() -> None:
    files = claude_code_files(PROJECTS)
    assert [f.name for f in files] == [f"{S1}.jsonl", f"{S2}.jsonl", "agent-5e7f0a2b.jsonl"]


@pytest.mark.parametrize("path", [PROJECTS / "-home-dev-shop" / f"{S2}.jsonl"])
def test_a_single_file(tmp_path: Path, path: Path) -> None:
    r = cli(tmp_path, "import", "claude-code", str(path), "--no-progress")
    assert "stored 2" in r.stdout

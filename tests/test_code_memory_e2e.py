"""End to end, on both backends: a scratch git repository, a Claude Code session (a transcript this test writes
as Claude Code would) in which the user pastes a real traceback and the agent edits the file, captured by the
real `gieok hook claude-code`; the librarian; a later commit that rewrites the file; the librarian again; and
`load_context` over MCP showing the memory as possibly stale with the right reason. Then a second session
pastes the same error from another checkout (other paths, other line numbers) and `search_memory` /
`load_context` put the earlier fix first."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mcp import Client

from gieok.app.runtime import open_service
from gieok.core.settings import load_settings
from gieok.mcp.server import build_server
from tests.test_anchors import git
from tests.test_hooks import free_port
from tests.test_mcp_e2e import data

GIEOK = str(Path(sys.executable).with_name("gieok"))
BUGGY = "import json\n\n\ndef load_config(text):\n    return json.loads(text)[\"retries\"]\n"
FIXED = ("import json\n\nDEFAULTS = {\"retries\": 3}\n\n\ndef load_config(text):\n    try:\n"
         "        return json.loads(text)[\"retries\"]\n    except ValueError:\n        return DEFAULTS[\"retries\"]\n")
REWRITE = ("import tomllib\n\n\ndef load_config(text):\n    data = tomllib.loads(text)\n"
           "    return int(data.get(\"retries\", 3))\n")
FIX_TEXT = "Fixed: load_config now falls back to the defaults when settings.json is not valid JSON."


def project(root: Path, pad: int = 0) -> Path:
    """The shop project with its bug; `pad` blank lines on top of each file move every line number."""
    (root / "billing").mkdir(parents=True)
    (root / "billing" / "__init__.py").write_text("", "utf-8")
    (root / "billing" / "config.py").write_text("\n" * pad + BUGGY, "utf-8")
    (root / "main.py").write_text("\n" * pad + "from billing.config import load_config\n\n"
                                  "print(load_config(open('settings.json').read()))\n", "utf-8")
    (root / "settings.json").write_text("{retries: 3}\n", "utf-8")
    return root


def crash(root: Path) -> str:
    r = subprocess.run([sys.executable, "main.py"], cwd=root, capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and "JSONDecodeError" in r.stderr
    return r.stderr


class Transcript:
    """A Claude Code transcript file, appended to as the session goes."""

    def __init__(self, path: Path, session: str, cwd: Path, model: str) -> None:
        self.path, self.session, self.cwd, self.model = path, session, str(cwd), model
        self.n = 0
        path.write_text("", "utf-8")

    def add(self, kind: str, content: Any) -> None:
        self.n += 1
        now = datetime.now(UTC)       # as Claude Code stamps entries: when written
        msg: dict[str, Any] = {"role": kind, "content": content}
        if kind == "assistant":
            msg["model"] = self.model
        e = {"type": kind, "uuid": f"{self.session}-{self.n}", "sessionId": self.session, "cwd": self.cwd,
             "timestamp": now.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z", "isSidechain": False, "message": msg}
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(e, ensure_ascii=False) + "\n")


def hook(env: dict[str, str], event: dict[str, Any]) -> None:
    r = subprocess.run([GIEOK, "hook", "claude-code"], input=json.dumps(event), env=env, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and r.stderr == "", r.stderr


async def librarian(settings: Any, *, check: bool = True) -> None:
    async with open_service(settings, with_embedder=False) as svc:
        await svc.processor.run_once()
        if check:
            await svc.processor.check_anchors()


async def test_memory_goes_stale_and_the_fix_is_found_again(db_url: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIEOK_")}
    env.update(GIEOK_HOME=str(home), GIEOK_DATABASE_URL=db_url, GIEOK_USER_ID="alice", GIEOK_EMBEDDER="none",
               GIEOK_PORT=str(free_port()), HOME=str(home), OMP_NUM_THREADS="1",
               GIT_AUTHOR_NAME="A", GIT_AUTHOR_EMAIL="a@example.com", GIT_COMMITTER_NAME="A",
               GIT_COMMITTER_EMAIL="a@example.com")
    settings = load_settings(home=str(home), database_url=db_url, user_id="alice", embedder="none", librarian=False)
    repo = project(tmp_path / "alice" / "shop")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "shop")

    # --- session 1: the user pastes the crash, the agent reads and fixes billing/config.py -----------------
    trace_a = crash(repo)
    s1 = Transcript(tmp_path / "s1.jsonl", "session-1", repo, "claude-opus-4-5")
    base1 = {"session_id": "session-1", "transcript_path": str(s1.path), "cwd": str(repo)}
    prompt1 = f"The nightly job crashes:\n\n```\n{trace_a}```\nCan you fix it?"
    s1.add("user", prompt1)
    hook(env, {**base1, "hook_event_name": "UserPromptSubmit", "prompt": prompt1})
    config = repo / "billing" / "config.py"
    s1.add("assistant", [{"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": str(config)}}])
    s1.add("user", [{"type": "tool_result", "tool_use_id": "t1", "content": BUGGY}])
    s1.add("assistant", [{"type": "tool_use", "id": "t2", "name": "Edit", "input": {
        "file_path": str(config), "old_string": BUGGY, "new_string": FIXED}}])
    config.write_text(FIXED, "utf-8")                     # Claude Code applies the edit
    s1.add("user", [{"type": "tool_result", "tool_use_id": "t2", "content": "The file has been updated."}])
    s1.add("assistant", [{"type": "text", "text": FIX_TEXT}])
    hook(env, {**base1, "hook_event_name": "Stop", "last_assistant_message": FIX_TEXT})
    git(repo, "commit", "-qam", "config: fall back to defaults")   # the user commits the agent's fix

    await librarian(settings)
    async with Client(build_server(settings, run_librarian=False)) as client:
        ctx = data(await client.call_tool("load_context", {"project": "shop"}))
    items = {i["role"]: i for i in ctx["sections"]["recent"]}
    assert items["assistant"]["content"].endswith(FIX_TEXT) and "possibly_stale" not in items["assistant"]
    # The pasted trace named billing/config.py as it was when it crashed; the fix changed it since.
    assert items["user"]["stale_reason"].startswith("billing/config.py changed in the latest commit")

    # --- later: the file is rewritten ------------------------------------------------------------------
    config.write_text(REWRITE, "utf-8")
    git(repo, "commit", "-qam", "config: TOML")
    (repo / "NOTES.md").write_text("notes\n", "utf-8")
    git(repo, "add", "NOTES.md")
    git(repo, "commit", "-qm", "notes")
    await librarian(settings)

    async with Client(build_server(settings, run_librarian=False)) as client:
        ctx = data(await client.call_tool("load_context", {"project": "shop"}))
        stale = data(await client.call_tool("search_memory", {"stale": "only", "file": "billing/config.py"}))
        fresh = data(await client.call_tool("search_memory", {"stale": "exclude", "file": "config.py"}))
    [fix_item] = [i for i in ctx["sections"]["recent"] if i["content"].endswith(FIX_TEXT)]
    reason = fix_item["stale_reason"]
    assert fix_item["possibly_stale"] is True
    assert reason.startswith("billing/config.py changed 1 commit ago (+")
    assert f"⚠ possibly stale: {reason}" in ctx["text"]
    turn = next(r for r in stale["results"] if r["content"].endswith(FIX_TEXT))
    assert turn["possibly_stale"] and turn["stale_reason"] == reason
    assert {"path": "billing/config.py", "repo": "shop", "status": "changed"}.items() <= turn["anchors"][0].items()
    assert fresh["results"] == []                     # every memory about config.py is stale now

    # --- session 2, from another checkout: the same crash, other paths and line numbers -------------------
    other = project(tmp_path / "ci" / "build-381" / "shop", pad=3)
    trace_b = crash(other)
    assert trace_b != trace_a and str(other) in trace_b
    s2 = Transcript(tmp_path / "s2.jsonl", "session-2", other, "claude-sonnet-4-5")
    prompt2 = f"CI fails with this, seen it before?\n{trace_b}"
    s2.add("user", prompt2)
    hook(env, {"session_id": "session-2", "transcript_path": str(s2.path), "cwd": str(other),
               "hook_event_name": "UserPromptSubmit", "prompt": prompt2})
    await librarian(settings, check=False)               # session 2's prompt is fingerprinted too

    async with Client(build_server(settings, run_librarian=False)) as client:
        found = data(await client.call_tool("search_memory", {"query": prompt2}))
        ctx2 = data(await client.call_tool("load_context", {"query": prompt2, "project": "shop"}))
    first = found["results"][0]
    assert first["session_id"] == "session-1" and first["role"] == "user"
    assert first["recall_reason"][0] == "same error as the query (JSONDecodeError in config.py:load_config)"
    assert first["fixed_by"]["content"].endswith(FIX_TEXT) and first["fixed_by"]["session_id"] == "session-1"
    assert found["results"][1]["session_id"] == "session-2"     # the question being asked: no answer yet
    seen = ctx2["sections"]["same_error"]
    assert seen[0]["id"] == first["id"] and seen[0]["fixed_by"]["id"] == first["fixed_by"]["id"]
    assert ctx2["text"].index("## Seen this error before") < ctx2["text"].index("## Recent")
    said = ctx2["text"].split("## Seen this error before", 1)[1].split("\n## ", 1)[0]
    assert "↳ we saw this error before; the answer then: [tool: Read]" in said and FIX_TEXT in said

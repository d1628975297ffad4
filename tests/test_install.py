"""`gieok install|uninstall claude-code|codex`: our entries go in beside the user's, twice is once, uninstall takes
out only ours, and the installed hook command really runs. HOME, CODEX_HOME and GIEOK_HOME are temp dirs."""

from __future__ import annotations

import json
import os
import shlex
import sqlite3
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

GIEOK = str(Path(sys.executable).with_name("gieok"))

USER_SETTINGS = {
    "model": "opus",
    "permissions": {"allow": ["Bash(pytest:*)"]},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/guard.sh"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "say done", "timeout": 5}]}],
    },
    "statusLine": {"type": "command", "command": "~/bin/status.sh"},
}
CLAUDE_JSON = {"numStartups": 42, "projects": {"/home/dev/shop": {"allowedTools": []}},
               "mcpServers": {"github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/"}}}
CODEX_TOML = """# my codex settings
model = "gpt-5.5"
approval_policy = "on-request"

[mcp_servers.docs]
command = "npx"
args = ["-y", "docs-mcp"]

[profiles.fast]
model = "gpt-5.5-mini"
"""


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith(("GIEOK_", "CODEX_"))}
    e.update(HOME=str(tmp_path), GIEOK_HOME=str(tmp_path / "gieok-home"), CODEX_HOME=str(tmp_path / ".codex"),
             GIEOK_USER_ID="alice", GIEOK_PORT="9", OMP_NUM_THREADS="1")
    return e


def gieok(env: dict[str, str], *args: str, cwd: Path | None = None, ok: int = 0) -> subprocess.CompletedProcess[str]:
    r = subprocess.run([GIEOK, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=60)
    assert r.returncode == ok, r.stdout + r.stderr
    return r


def test_claude_code_user_scope(tmp_path: Path, env: dict[str, str]) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps(USER_SETTINGS, indent=4) + "\n")
    claude_json = tmp_path / ".claude.json"
    claude_json.write_text(json.dumps(CLAUDE_JSON, indent=2) + "\n")
    original = (settings.read_text(), claude_json.read_text())

    r = gieok(env, "install", "claude-code", "--user")
    assert "added hooks SessionStart, UserPromptSubmit, Stop, SubagentStop, SessionEnd" in r.stdout
    data = json.loads(settings.read_text())
    assert settings.read_text().startswith('{\n    "model"')        # the user's indentation and key order
    assert data["model"] == "opus" and data["statusLine"] == USER_SETTINGS["statusLine"]
    assert data["hooks"]["PreToolUse"] == USER_SETTINGS["hooks"]["PreToolUse"]
    stop = data["hooks"]["Stop"]
    assert stop[0] == USER_SETTINGS["hooks"]["Stop"][0] and len(stop) == 2
    ours = stop[1]["hooks"][0]
    assert ours["type"] == "command" and ours["timeout"] == 10
    assert ours["command"].endswith("hook claude-code") and f"GIEOK_HOME={tmp_path / 'gieok-home'}" in ours["command"]
    mcp = json.loads(claude_json.read_text())
    assert mcp["numStartups"] == 42 and mcp["mcpServers"]["github"] == CLAUDE_JSON["mcpServers"]["github"]
    assert mcp["mcpServers"]["gieok"]["args"][-1] == "serve"
    assert mcp["mcpServers"]["gieok"]["env"]["GIEOK_HOME"] == str(tmp_path / "gieok-home")

    before = (settings.read_text(), claude_json.read_text())
    r = gieok(env, "install", "claude-code")                     # --user is the default; twice is once
    assert "already installed" in r.stderr
    assert (settings.read_text(), claude_json.read_text()) == before

    # the command written into settings.json is what Claude Code will run: run it the same way (a shell)
    project = tmp_path / "shop"
    (project / ".git").mkdir(parents=True)
    ev = {"session_id": "s1", "hook_event_name": "UserPromptSubmit", "cwd": str(project), "prompt": "hi 기억"}
    run = subprocess.run(["sh", "-c", ours["command"]], input=json.dumps(ev), env={"PATH": os.environ["PATH"]},
                         capture_output=True, text=True, timeout=30)
    assert run.returncode == 0 and run.stderr == ""
    with sqlite3.connect(tmp_path / "gieok-home" / "memory.db") as db:
        assert db.execute("SELECT content, project, agent_platform FROM memory").fetchall() == [
            ("hi 기억", "shop", "claude-code")]

    r = gieok(env, "uninstall", "claude-code", "--user")
    assert "removed gieok hooks" in r.stdout and "removed MCP server 'gieok'" in r.stdout
    assert (settings.read_text(), claude_json.read_text()) == original
    assert "nothing of gieok's" in gieok(env, "uninstall", "claude-code").stderr


def test_claude_code_project_scope(tmp_path: Path, env: dict[str, str]) -> None:
    proj = tmp_path / "shop"
    proj.mkdir()
    r = gieok(env, "install", "claude-code", "--project", cwd=proj)
    assert "approve 'gieok'" in r.stderr
    hooks = json.loads((proj / ".claude" / "settings.json").read_text())["hooks"]
    assert sorted(hooks) == ["SessionEnd", "SessionStart", "Stop", "SubagentStop", "UserPromptSubmit"]
    server = json.loads((proj / ".mcp.json").read_text())["mcpServers"]["gieok"]
    assert server["type"] == "stdio" and Path(server["command"]).is_absolute()
    assert not (tmp_path / ".claude").exists() and not (tmp_path / ".claude.json").exists()
    gieok(env, "uninstall", "claude-code", "--project", cwd=proj)
    # The project had neither file: uninstall leaves nothing behind, not `{}` and `{"mcpServers": {}}`.
    assert not (proj / ".claude").exists() and not (proj / ".mcp.json").exists()


def test_project_scope_goes_to_the_repository_root(tmp_path: Path, env: dict[str, str]) -> None:
    repo = tmp_path / "shop"
    sub = repo / "src" / "payments"
    sub.mkdir(parents=True)
    (repo / ".git").mkdir()
    (repo / ".mcp.json").write_text(json.dumps({"mcpServers": {"docs": {"command": "docs-mcp"}}}, indent=4))
    (repo / ".claude").mkdir()
    (repo / ".claude" / "notes.md").write_text("mine")
    r = gieok(env, "install", "claude-code", "--project", cwd=sub)
    assert f"repository root {repo}" in r.stderr
    assert not (sub / ".claude").exists() and not (sub / ".mcp.json").exists()
    assert "gieok" in json.loads((repo / ".mcp.json").read_text())["mcpServers"]
    assert "hooks" in json.loads((repo / ".claude" / "settings.json").read_text())
    gieok(env, "uninstall", "claude-code", "--project", cwd=sub)
    # What was there before stays; only what install created goes.
    assert json.loads((repo / ".mcp.json").read_text()) == {"mcpServers": {"docs": {"command": "docs-mcp"}}}
    assert (repo / ".claude" / "notes.md").read_text() == "mine"
    assert not (repo / ".claude" / "settings.json").exists()


def test_a_foreign_gieok_server_and_bad_json_are_left_alone(tmp_path: Path, env: dict[str, str]) -> None:
    claude_json = tmp_path / ".claude.json"
    claude_json.write_text(json.dumps({"mcpServers": {"gieok": {"command": "docker", "args": ["run", "x"]}}}))
    r = gieok(env, "install", "claude-code", ok=1)
    assert "not gieok's" in r.stderr
    assert json.loads(claude_json.read_text())["mcpServers"]["gieok"]["command"] == "docker"
    gieok(env, "uninstall", "claude-code")
    assert json.loads(claude_json.read_text())["mcpServers"]["gieok"]["command"] == "docker"

    settings = tmp_path / ".claude" / "settings.json"
    settings.write_text('{"hooks": ')
    r = gieok(env, "install", "claude-code", ok=2)
    assert "not valid JSON" in r.stderr and settings.read_text() == '{"hooks": '


def test_codex(tmp_path: Path, env: dict[str, str]) -> None:
    cfg = tmp_path / ".codex" / "config.toml"
    cfg.parent.mkdir()
    cfg.write_text(CODEX_TOML)
    r = gieok(env, "install", "codex")
    assert "notify =" in r.stdout and "[mcp_servers.gieok]" in r.stdout
    doc = tomllib.loads(cfg.read_text())
    before = tomllib.loads(CODEX_TOML)
    assert doc["model"] == "gpt-5.5" and doc["profiles"] == before["profiles"]
    assert doc["mcp_servers"]["docs"] == before["mcp_servers"]["docs"]
    assert doc["notify"][-2:] == ["hook", "codex"] and f"GIEOK_HOME={tmp_path / 'gieok-home'}" in doc["notify"]
    assert doc["mcp_servers"]["gieok"]["args"][-1] == "serve"
    assert doc["mcp_servers"]["gieok"]["env"] == {"GIEOK_HOME": str(tmp_path / "gieok-home"), "GIEOK_USER_ID": "alice",
                                                  "GIEOK_PORT": "9"}
    text = cfg.read_text()
    assert text.index("notify =") < text.index("[mcp_servers.docs]")   # top level, not inside a table
    assert "already installed" in gieok(env, "install", "codex").stderr and cfg.read_text() == text

    # what Codex will run: the notify argv with the turn as the last argument
    project = tmp_path / "shop"
    project.mkdir()
    turn = {"type": "agent-turn-complete", "thread-id": "t1", "turn-id": "1", "cwd": str(project),
            "input-messages": ["rename it"], "last-assistant-message": "renamed"}
    run = subprocess.run([*doc["notify"], json.dumps(turn)], env={"PATH": os.environ["PATH"], "HOME": str(tmp_path),
                         "CODEX_HOME": str(tmp_path / ".codex")}, capture_output=True, text=True, timeout=30)
    assert run.returncode == 0 and run.stderr == ""
    with sqlite3.connect(tmp_path / "gieok-home" / "memory.db") as db:
        assert db.execute("SELECT role, agent_model FROM memory ORDER BY created_at").fetchall() == [
            ("user", "gpt-5.5"), ("assistant", "gpt-5.5")]

    gieok(env, "uninstall", "codex")
    assert cfg.read_text() == CODEX_TOML


def test_codex_keeps_the_users_notify_program(tmp_path: Path, env: dict[str, str]) -> None:
    cfg = tmp_path / ".codex" / "config.toml"
    cfg.parent.mkdir()
    mine = 'notify = ["python3", "/home/dev/.codex/notify.py"]\n'
    cfg.write_text(mine)
    r = gieok(env, "install", "codex", ok=1)
    assert "left alone" in r.stderr and "hook codex" in r.stderr
    doc = tomllib.loads(cfg.read_text())
    assert doc["notify"] == ["python3", "/home/dev/.codex/notify.py"] and "gieok" in doc["mcp_servers"]
    gieok(env, "uninstall", "codex")
    assert cfg.read_text() == mine


def test_codex_fresh_and_without_carried_env(tmp_path: Path, env: dict[str, str]) -> None:
    env = {k: v for k, v in env.items() if k not in ("GIEOK_HOME", "GIEOK_USER_ID", "GIEOK_PORT")}
    gieok(env, "install", "codex")
    doc = tomllib.loads((tmp_path / ".codex" / "config.toml").read_text())
    assert shlex.join(doc["notify"]).endswith("hook codex") and Path(doc["notify"][0]).name.startswith("gieok")
    assert "env" not in doc["mcp_servers"]["gieok"]
    gieok(env, "uninstall", "codex")
    assert tomllib.loads((tmp_path / ".codex" / "config.toml").read_text()) == {}

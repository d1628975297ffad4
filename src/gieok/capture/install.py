"""`gieok install|uninstall claude-code|codex`: write our hook and MCP server entries into the agent's own
settings, next to the user's, and take out only ours again.

- Claude Code: hooks go in `settings.json` (`./.claude/` with --project, `~/.claude/` with --user) under
  `hooks.<Event>[].hooks[] = {type: command, command, timeout}`; the MCP server goes in `./.mcp.json`
  (--project) or the top-level `mcpServers` of `~/.claude.json` (--user), where `claude mcp add` puts them.
- Codex: `notify = [...]` and a `[mcp_servers.gieok]` table in `$CODEX_HOME/config.toml` (default `~/.codex`).
  Codex runs a single notify program: one the user already has is never replaced (we say how to chain ours).
Our entries are recognised by their command (`… gieok … hook claude-code`, `… gieok … serve`), so a moved
virtualenv is still ours. Files are written atomically (temp file + rename), JSON keeps its key order and
indentation; the TOML is edited as text (the stdlib has no TOML writer), checked by parsing it back, and our
lines are marked so uninstall finds them. GIEOK_HOME / GIEOK_DATABASE_URL / GIEOK_USER_ID / GIEOK_HOST /
GIEOK_PORT set at install time are written into the entries: the agent's environment may not have them.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from gieok.core.errors import ConfigError

HOOK_EVENTS = ("SessionStart", "UserPromptSubmit", "Stop", "SubagentStop", "SessionEnd")
HOOK_TIMEOUT_S = 10      # Claude Code's own cap; ours (5 s) fires first
SERVER_NAME = "gieok"
CARRIED_ENV = ("GIEOK_HOME", "GIEOK_DATABASE_URL", "GIEOK_USER_ID", "GIEOK_HOST", "GIEOK_PORT")
NOTIFY_MARK = "# added by gieok"
BLOCK_BEGIN = "# >>> gieok: added by `gieok install codex`, removed by `gieok uninstall codex`"
BLOCK_END = "# <<< gieok"
Scope = Literal["project", "user"]


@dataclass(slots=True)
class Report:
    changes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    ok: bool = True      # False when part of the job was left undone on purpose (see notes)


# --- what to run -------------------------------------------------------------------------------------------
def gieok_argv() -> list[str]:
    """An absolute command for this gieok: the console script beside this interpreter, else on PATH, else
    `python -m gieok.cli`. Agents start hooks with a bare environment, so a relative `gieok` may not resolve."""
    beside = Path(sys.executable).with_name("gieok")
    if beside.exists():
        return [str(beside)]
    found = shutil.which("gieok")
    if found:
        return [str(Path(found).resolve())]
    return [sys.executable, "-m", "gieok.cli"]


def carried_env() -> dict[str, str]:
    return {k: os.environ[k] for k in CARRIED_ENV if os.environ.get(k)}


def _with_env(argv: list[str]) -> list[str]:
    env = carried_env()
    return ["env", *(f"{k}={v}" for k, v in env.items()), *argv] if env else argv


def hook_command(platform: str = "claude-code") -> str:
    return shlex.join(_with_env([*gieok_argv(), "hook", platform]))


def _is_our_hook(cmd: Any) -> bool:
    return isinstance(cmd, str) and "gieok" in cmd and cmd.rstrip().endswith("hook claude-code")


def _is_our_server(entry: Any) -> bool:
    if not isinstance(entry, dict):
        return False
    args = [str(a) for a in entry.get("args") or []]
    return "gieok" in " ".join([str(entry.get("command", "")), *args]) and "serve" in args


def _server_entry(**extra: Any) -> dict[str, Any]:
    argv = gieok_argv()
    entry: dict[str, Any] = {**extra, "command": argv[0], "args": [*argv[1:], "serve"]}
    if carried_env():
        entry["env"] = carried_env()
    return entry


# --- JSON files, kept as the user wrote them ---------------------------------------------------------------
def _read_json(path: Path) -> tuple[dict[str, Any], int | str]:
    if not path.exists():
        return {}, 2
    text = path.read_text(encoding="utf-8")
    if not text.strip():
        return {}, 2
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{path} is not valid JSON ({exc}); fix it, then run the install again") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path} does not hold a JSON object; fix it, then run the install again")
    m = re.search(r"^([ \t]+)\S", text, re.M)
    indent: int | str = 2 if m is None else ("\t" if "\t" in m.group(1) else len(m.group(1)))
    return data, indent


def write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.gieok-{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    if path.exists():
        os.chmod(tmp, path.stat().st_mode & 0o7777)
    os.replace(tmp, path)


def _write_json(path: Path, data: dict[str, Any], indent: int | str) -> None:
    write_atomic(path, json.dumps(data, indent=indent, ensure_ascii=False) + "\n")


def _write_or_remove(path: Path, data: dict[str, Any], indent: int | str) -> None:
    """After taking ours out: a file left holding nothing (`{}`) was only there for us, so it goes."""
    if data:
        _write_json(path, data, indent)
    else:
        path.unlink(missing_ok=True)


# --- Claude Code -------------------------------------------------------------------------------------------
def project_root(cwd: Path) -> Path:
    """The root of the git repository `cwd` is in (where Claude Code looks for `.claude/` and `.mcp.json`),
    or `cwd` itself outside a repository. A worktree's root is the worktree (`.git` is a file there)."""
    here = cwd.resolve()
    return next((d for d in [here, *here.parents] if (d / ".git").exists()), here)


def claude_paths(scope: Scope, *, cwd: Path | None = None, home: Path | None = None) -> tuple[Path, Path]:
    """(settings.json, the file holding mcpServers) for a scope."""
    if scope == "project":
        base = project_root(cwd or Path.cwd())
        return base / ".claude" / "settings.json", base / ".mcp.json"
    h = home or Path.home()
    return h / ".claude" / "settings.json", h / ".claude.json"


def _dict_at(data: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    value = data.setdefault(key, {})
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: {key!r} is not an object; fix it, then run the install again")
    return value


def install_claude(scope: Scope, *, cwd: Path | None = None, home: Path | None = None) -> Report:
    rep = Report()
    settings_path, mcp_path = claude_paths(scope, cwd=cwd, home=home)
    data, indent = _read_json(settings_path)
    hooks = _dict_at(data, "hooks", settings_path)
    cmd = hook_command()
    added, updated = [], []
    for event in HOOK_EVENTS:
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise ConfigError(f"{settings_path}: hooks.{event} is not a list; fix it, then install again")
        ours = [(g, h) for g in groups if isinstance(g, dict) for h in g.get("hooks") or []
                if isinstance(h, dict) and _is_our_hook(h.get("command"))]
        if not ours:
            groups.append({"hooks": [{"type": "command", "command": cmd, "timeout": HOOK_TIMEOUT_S}]})
            added.append(event)
            continue
        first = ours[0][1]
        if first.get("command") != cmd or first.get("timeout") != HOOK_TIMEOUT_S:
            first.update(type="command", command=cmd, timeout=HOOK_TIMEOUT_S)
            updated.append(event)
        for g, h in ours[1:]:         # an earlier install left a copy: one hook per event is enough
            g["hooks"].remove(h)
            updated.append(event)
        hooks[event] = [g for g in groups if not isinstance(g, dict) or g.get("hooks")]
    if added or updated:
        _write_json(settings_path, data, indent)
        if added:
            rep.changes.append(f"{settings_path}: added hooks {', '.join(added)}")
        if updated:
            rep.changes.append(f"{settings_path}: updated hooks {', '.join(dict.fromkeys(updated))}")

    mdata, mindent = _read_json(mcp_path)
    servers = _dict_at(mdata, "mcpServers", mcp_path)
    entry = _server_entry(type="stdio")
    current = servers.get(SERVER_NAME)
    if current is not None and not _is_our_server(current):
        rep.ok = False
        rep.notes.append(f"{mcp_path}: an MCP server named {SERVER_NAME!r} that is not gieok's exists; left "
                         "it alone (rename it and install again to add ours)")
    elif current != entry:
        servers[SERVER_NAME] = entry
        _write_json(mcp_path, mdata, mindent)
        rep.changes.append(f"{mcp_path}: {'updated' if current else 'added'} MCP server {SERVER_NAME!r} "
                           f"({shlex.join([entry['command'], *entry['args']])})")
    if scope == "project" and rep.changes:
        here = (cwd or Path.cwd()).resolve()
        if settings_path.parent.parent != here:
            rep.notes.append(f"installed at the repository root {settings_path.parent.parent}, where Claude Code "
                             f"reads project settings (you ran it in {here})")
        rep.notes.append("Claude Code asks once before it starts a project's MCP servers: approve 'gieok'.")
    if not rep.changes and rep.ok:
        rep.notes.append("already installed; nothing changed")
    return rep


def uninstall_claude(scope: Scope, *, cwd: Path | None = None, home: Path | None = None) -> Report:
    rep = Report()
    settings_path, mcp_path = claude_paths(scope, cwd=cwd, home=home)
    data, indent = _read_json(settings_path)
    hooks = data.get("hooks")
    removed: list[str] = []
    if isinstance(hooks, dict):
        for event in list(hooks):
            groups = hooks[event]
            if not isinstance(groups, list):
                continue
            for g in groups:
                if isinstance(g, dict) and isinstance(g.get("hooks"), list):
                    keep = [h for h in g["hooks"] if not (isinstance(h, dict) and _is_our_hook(h.get("command")))]
                    if len(keep) != len(g["hooks"]):
                        removed.append(event)
                        g["hooks"] = keep
            hooks[event] = [g for g in groups if not (isinstance(g, dict) and g.get("hooks") == [])]
            if not hooks[event]:
                del hooks[event]
        if not hooks:
            del data["hooks"]
    if removed:
        _write_or_remove(settings_path, data, indent)
        rep.changes.append(f"{settings_path}: removed gieok hooks from {', '.join(dict.fromkeys(removed))}")
    mdata, mindent = _read_json(mcp_path)
    servers = mdata.get("mcpServers")
    if isinstance(servers, dict) and _is_our_server(servers.get(SERVER_NAME)):
        del servers[SERVER_NAME]
        if not servers:
            del mdata["mcpServers"]
        _write_or_remove(mcp_path, mdata, mindent)
        rep.changes.append(f"{mcp_path}: removed MCP server {SERVER_NAME!r}")
    if scope == "project":
        with contextlib.suppress(OSError):    # `.claude/`, if install made it and nothing else is in it
            settings_path.parent.rmdir()
    if not rep.changes:
        rep.notes.append("nothing of gieok's was installed there")
    return rep


# --- Codex -------------------------------------------------------------------------------------------------
def codex_home() -> Path:
    return Path(os.environ.get("CODEX_HOME") or "~/.codex").expanduser()


def _toml_value(v: Any) -> str:
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return json.dumps(str(v), ensure_ascii=False)   # a JSON string is a TOML basic string


def _is_our_notify(v: Any) -> bool:
    return isinstance(v, list) and any("gieok" in str(x) for x in v) and [str(x) for x in v[-2:]] == ["hook", "codex"]


_HEADER = re.compile(r"^\s*\[\[?\s*[A-Za-z0-9_.\"' -]+\]\]?\s*(#.*)?$")


def _without_ours(doc: dict[str, Any], *, notify: bool, server: bool) -> dict[str, Any]:
    d = dict(doc)
    if notify:
        d.pop("notify", None)
    if server and isinstance(d.get("mcp_servers"), dict):
        d["mcp_servers"] = {k: v for k, v in d["mcp_servers"].items() if k != SERVER_NAME}
    if d.get("mcp_servers") == {}:
        del d["mcp_servers"]
    return d


def _strip_block(lines: list[str]) -> list[str]:
    out: list[str] = []
    inside = False
    for ln in lines:
        if ln.strip() == BLOCK_BEGIN:
            inside = True
            if out and not out[-1].strip():
                out.pop()       # the blank line we put before the block
            continue
        if inside:
            inside = ln.strip() != BLOCK_END
            continue
        out.append(ln)
    return out


def install_codex() -> Report:
    rep = Report()
    path = codex_home() / "config.toml"
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    try:
        before = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML ({exc}); fix it, then install again") from None
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    notify = [shutil.which("env") or "/usr/bin/env", *_with_env([*gieok_argv(), "hook", "codex"])[1:]] \
        if carried_env() else [*gieok_argv(), "hook", "codex"]
    notify_line = f"notify = {_toml_value(notify)}  {NOTIFY_MARK}\n"
    current = before.get("notify")
    wrote_notify = False
    if current is None or (_is_our_notify(current) and any(ln.rstrip().endswith(NOTIFY_MARK) for ln in lines)):
        if current != notify:
            lines = [ln for ln in lines if not (ln.lstrip().startswith("notify") and ln.rstrip().endswith(NOTIFY_MARK))]
            at = next((i for i, ln in enumerate(lines) if _HEADER.match(ln)), len(lines))
            lines.insert(at, notify_line)
            wrote_notify = True
    elif not _is_our_notify(current):
        rep.ok = False
        rep.notes.append(f"{path}: Codex already runs a notify program ({shlex.join(map(str, current))}); it was "
                         "left alone, since Codex runs only one. To capture with gieok as well, end that program "
                         f"with: {shlex.join(_with_env([*gieok_argv(), 'hook', 'codex']))} \"$1\"  (Codex passes "
                         "the turn as the last argument)")
    servers: dict[str, Any] = before["mcp_servers"] if isinstance(before.get("mcp_servers"), dict) else {}
    entry = _server_entry()
    have = servers.get(SERVER_NAME)
    wrote_server = False
    if have is not None and not _is_our_server(have):
        rep.ok = False
        rep.notes.append(f"{path}: an MCP server named {SERVER_NAME!r} that is not gieok's exists; left it alone")
    elif have != entry and (have is None or BLOCK_BEGIN in text):
        lines = _strip_block(lines)
        block = [f"\n{BLOCK_BEGIN}\n", f"[mcp_servers.{SERVER_NAME}]\n", f"command = {_toml_value(entry['command'])}\n",
                 f"args = {_toml_value(entry['args'])}\n"]
        if entry.get("env"):
            block += [f"[mcp_servers.{SERVER_NAME}.env]\n",
                      *(f"{k} = {_toml_value(v)}\n" for k, v in entry["env"].items())]
        lines += [*block, f"{BLOCK_END}\n"]
        wrote_server = True
    if wrote_notify or wrote_server:
        new = "".join(lines)
        try:
            after = tomllib.loads(new)
        except tomllib.TOMLDecodeError:
            after = None
        if after is None or _without_ours(after, notify=wrote_notify, server=wrote_server) != \
                _without_ours(before, notify=wrote_notify, server=wrote_server):
            raise ConfigError(f"could not add gieok to {path} safely; add by hand:\n{notify_line}"
                              f"[mcp_servers.{SERVER_NAME}]\ncommand = {_toml_value(entry['command'])}\n"
                              f"args = {_toml_value(entry['args'])}")
        write_atomic(path, new)
        if wrote_notify:
            rep.changes.append(f"{path}: notify = {shlex.join(notify)}")
        if wrote_server:
            server_cmd = shlex.join([entry["command"], *entry["args"]])
            rep.changes.append(f"{path}: [mcp_servers.{SERVER_NAME}] ({server_cmd})")
    if not rep.changes and rep.ok:
        rep.notes.append("already installed; nothing changed")
    return rep


def uninstall_codex() -> Report:
    rep = Report()
    path = codex_home() / "config.toml"
    if not path.exists():
        rep.notes.append(f"{path} does not exist; nothing to remove")
        return rep
    text = path.read_text(encoding="utf-8")
    try:
        before = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML ({exc}); fix it, then uninstall again") from None
    lines = text.splitlines(keepends=True)
    kept = [ln for ln in lines if not (ln.lstrip().startswith("notify") and ln.rstrip().endswith(NOTIFY_MARK))]
    drop_notify = len(kept) != len(lines)
    kept = _strip_block(kept)
    drop_server = BLOCK_BEGIN in text
    if not (drop_notify or drop_server):
        rep.notes.append("nothing of gieok's was installed there")
        return rep
    new = "".join(kept)
    if _without_ours(tomllib.loads(new), notify=drop_notify, server=drop_server) != \
            _without_ours(before, notify=drop_notify, server=drop_server):
        raise ConfigError(f"could not remove gieok from {path} safely: the marked lines were edited; remove "
                          f"them by hand")
    write_atomic(path, new)
    what = [x for x, d in (("notify", drop_notify), (f"[mcp_servers.{SERVER_NAME}]", drop_server)) if d]
    rep.changes.append(f"{path}: removed {' and '.join(what)}")
    return rep

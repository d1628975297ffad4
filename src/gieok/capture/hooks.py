"""Agent hooks: Claude Code (`gieok hook claude-code`, the event JSON on stdin) and Codex (`gieok hook codex`,
the notify JSON as the last argument) turned into memories.

A hook runs on every prompt, so it must never block or break the agent:
- the whole run is capped at `HOOK_DEADLINE_S` (a watchdog exits 0); any error exits 0 with one line on stderr,
  also appended to `<GIEOK_HOME>/hooks/hook.log`, since agents hide a hook's stderr;
- stdout stays empty except for SessionStart, whose stdout Claude Code adds to the model's context;
- when a server runs (`gieok serve --transport http`) the hook talks to it (connect timeout 0.3 s) instead of
  opening the database, but only when its `/health` reports the same store (`serves_our_store`): a server of
  another database on the same port is ignored; it opens the database itself when nothing (right) answers;
- imports stay light: the store (numpy) is only imported when no server answers, the service and the
  embedder only for SessionStart without a server.

Claude Code events:
- SessionStart: prints the load_context block for claude-code, the session's model and the project, within
  `CONTEXT_MAX_CHARS` (Claude Code replaces longer hook output with a short preview).
- UserPromptSubmit: stores the prompt (role user, time = now), and any finished turn not yet stored.
- Stop: stores the assistant turns written since the last capture; a per-stream cursor (byte offset) lives in
  `<GIEOK_HOME>/hooks/`. Claude Code may run Stop before the last entry reaches the transcript
  (anthropics/claude-code#15813): when `last_assistant_message` is not in the transcript yet the hook waits up
  to `FLUSH_WAIT_S`, then leaves that turn for the next event, so a turn is stored whole, never in halves.
- SubagentStop: the same for the subagent's transcript (`agent_transcript_path`, or the sidechain entries of
  `transcript_path`); rows are marked is_subagent, with `agent_type` as subagent_role and the model it used.
- SessionEnd: stores whatever is left.
Re-reading is harmless: a turn always gets the same content and time, and the store dedups on them.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from gieok.capture.importers import CLAUDE, Item, expand, read_lines, stream_items
from gieok.memory.ingest import MessageIn

HOOK_DEADLINE_S = 5.0
CONNECT_TIMEOUT_S = 0.3
REPLY_TIMEOUT_S = 2.0
FLUSH_WAIT_S = 0.8
LOCK_WAIT_S = 1.5
CONTEXT_MAX_CHARS = 9500
STATE_TTL_DAYS = 30
_LOG_MAX_BYTES = 1 << 20


class HookError(Exception):
    """A problem worth one line on stderr; the hook still exits 0."""


# --- entry point -------------------------------------------------------------------------------------------
def run(platform: str, read_input: Callable[[], str], *, deadline_s: float = HOOK_DEADLINE_S) -> int:
    """`gieok hook <platform>`: handle one event. Always returns 0, so the agent never sees a failure."""
    _arm_watchdog(deadline_s)
    settings: Any = None
    try:
        from gieok.core.settings import load_settings
        settings = load_settings()
        raw = read_input()
        if platform == "claude-code":
            out = handle_claude(_parse(raw, "a Claude Code hook event"), settings)
        elif platform == "codex":
            handle_codex(_parse(raw, "a Codex notify payload"), settings)
            out = None
        else:
            raise HookError(f"unknown platform {platform!r}: use claude-code or codex")
        if out:
            sys.stdout.write(out)
            sys.stdout.flush()
    except Exception as exc:  # a hook must never break the agent: say what went wrong, exit 0
        _report(settings, platform, exc)
    return 0


def read_stdin() -> str:
    if sys.stdin is None or sys.stdin.isatty():
        raise HookError("no event on stdin: the agent pipes its hook event JSON in")
    return sys.stdin.read()


def _parse(raw: str, what: str) -> dict[str, Any]:
    try:
        data = json.loads(raw)
    except ValueError:
        raise HookError(f"input is not {what} (expected a JSON object, got {raw[:40]!r})") from None
    if not isinstance(data, dict):
        raise HookError(f"input is not {what} (expected a JSON object)")
    return data


def _arm_watchdog(seconds: float) -> None:
    def give_up() -> None:
        try:
            sys.stderr.write(f"gieok hook: gave up after {seconds:g} s so the agent is not held up\n")
            sys.stderr.flush()
        finally:
            os._exit(0)
    timer = threading.Timer(seconds, give_up)
    timer.daemon = True
    timer.start()


def _report(settings: Any, platform: str, exc: Exception) -> None:
    line = f"gieok hook {platform}: {exc if isinstance(exc, HookError) else f'{type(exc).__name__}: {exc}'}"
    line = " ".join(line.split())[:500]
    sys.stderr.write(line + "\n")
    sys.stderr.flush()
    if settings is None:
        return
    try:
        log = Path(settings.home) / "hooks" / "hook.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        if log.exists() and log.stat().st_size > _LOG_MAX_BYTES:
            log.replace(log.with_suffix(".log.1"))
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(f"{datetime.now(UTC).isoformat()} {line}\n")
    except OSError:
        pass


# --- where: project hint -----------------------------------------------------------------------------------
def project_hint(cwd: str) -> str:
    """The git repository's name when `cwd` is inside one (read from `.git`, without running git: this runs
    on every prompt), else the directory's name. A worktree names its main repository."""
    try:
        here = Path(cwd).expanduser().resolve()
    except (OSError, RuntimeError):
        return Path(cwd).name
    for d in [here, *here.parents][:64]:
        git = d / ".git"
        try:
            if git.is_dir():
                return d.name
            if git.is_file():
                target = git.read_text(encoding="utf-8", errors="replace").strip()
                m = re.match(r"gitdir:\s*(.+)", target)
                if m and "/worktrees/" in m.group(1).replace("\\", "/"):
                    main_git = Path(m.group(1).replace("\\", "/").split("/worktrees/")[0])
                    return (main_git if main_git.is_absolute() else d / main_git).resolve().parent.name
                return d.name
        except OSError:
            break
    return here.name or str(here)


# --- cursors -----------------------------------------------------------------------------------------------
def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)[:120] or "_"


@dataclass(slots=True)
class Cursor:
    path: str = ""
    offset: int = 0
    model: str = ""
    turns: list[str] | None = None     # Codex: turn ids already stored


class StreamState:
    """The cursor of one stream (a session's main transcript, one subagent, one Codex thread) in a small
    JSON file, guarded by a lock file so two hooks of the same stream take turns."""

    def __init__(self, home: Path, *parts: str) -> None:
        self.file = Path(home) / "hooks" / (".".join(_safe(p) for p in parts if p) + ".json")

    def load(self) -> Cursor:
        try:
            d = json.loads(self.file.read_text(encoding="utf-8"))
            return Cursor(str(d.get("path", "")), int(d.get("offset", 0)), str(d.get("model", "")), d.get("turns"))
        except (OSError, ValueError, TypeError, AttributeError):
            return Cursor()

    def save(self, c: Cursor) -> None:
        self.file.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.file.with_name(f"{self.file.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"path": c.path, "offset": c.offset, "model": c.model,
                                   **({"turns": c.turns} if c.turns is not None else {})}), encoding="utf-8")
        os.replace(tmp, self.file)

    @contextmanager
    def locked(self) -> Iterator[None]:
        self.file.parent.mkdir(parents=True, exist_ok=True)
        with open(self.file.with_suffix(".lock"), "a+") as fh:
            try:
                import fcntl
            except ImportError:  # Windows: no advisory locks; dedup keeps a double read harmless
                yield
                return
            until = time.monotonic() + LOCK_WAIT_S
            while True:
                try:
                    fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > until:
                        break   # go on unlocked rather than hold the agent up
                    time.sleep(0.02)
            yield


def prune_states(home: Path, days: float = STATE_TTL_DAYS) -> None:
    cutoff = time.time() - days * 86400
    try:
        for f in (Path(home) / "hooks").iterdir():
            if f.suffix in (".json", ".lock") and f.stat().st_mtime < cutoff:
                f.unlink(missing_ok=True)
    except OSError:
        pass


# --- reading new turns -------------------------------------------------------------------------------------
def _norm(s: str) -> str:
    return " ".join(s.split())


def new_items(path: Path, cur: Cursor, keep: Callable[[dict[str, Any]], bool], *, mode: str,
              last_message: str | None = None) -> tuple[list[Item], int]:
    """Items of a stream after the cursor, and the offset to store once they are saved.
    mode "end": everything read is finished. "stop": the last turn is finished when `last_message` is in it
    (waiting up to FLUSH_WAIT_S for it to be flushed). "prompt": the last turn is finished unless it ends on a
    tool call. An unfinished last turn is left for the next event: the offset stays at its start."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise HookError(f"cannot read the transcript {path}: {exc.strerror}") from None
    offset = cur.offset if cur.path == str(path) and cur.offset <= size else 0
    want = _norm(last_message or "")
    wait_until = time.monotonic() + (FLUSH_WAIT_S if mode == "stop" and want else 0)
    while True:
        lines, end = read_lines(path, offset, final=False)
        items = stream_items(ln for ln in lines if keep(ln.entry))
        tail = items[-1] if items and items[-1].role == "assistant" and not items[-1].closed else None
        if mode == "end":
            done = True
        elif want:
            done = tail is not None and want in _norm(tail.text)
        else:
            done = tail is None or not tail.tail_is_tool
        if done:
            return items, end
        if time.monotonic() >= wait_until:
            return (items[:-1], tail.start) if tail is not None else (items, end)
        time.sleep(0.05)


# --- Claude Code -------------------------------------------------------------------------------------------
def handle_claude(ev: dict[str, Any], settings: Any) -> str | None:
    name = str(ev.get("hook_event_name") or "")
    session = str(ev.get("session_id") or "")
    if not name or not session:
        raise HookError("event has no hook_event_name/session_id: is this a Claude Code hook event?")
    project = project_hint(str(ev.get("cwd") or os.getcwd()))
    transcript = Path(str(ev["transcript_path"])).expanduser() if ev.get("transcript_path") else None
    main = StreamState(settings.home, session)

    if name == "SubagentStop":
        _capture_subagent(ev, settings, session, project, transcript, main)
        return None
    with main.locked():
        cur = main.load()
        if name == "SessionStart" and ev.get("model"):
            cur.model = str(ev["model"])
        msgs: list[MessageIn] = []
        new_offset = None
        if transcript is not None and transcript.exists():
            mode = {"Stop": "stop", "UserPromptSubmit": "prompt"}.get(name, "end")
            items, new_offset = new_items(transcript, cur, lambda e: not e.get("isSidechain"), mode=mode,
                                          last_message=ev.get("last_assistant_message") if name == "Stop" else None)
            for it in items:
                if it.role == "assistant":      # prompts were stored when submitted (UserPromptSubmit)
                    cur.model = it.model or cur.model
                    msgs.append(_turn_message(settings, it, session, project, agent_model=it.model))
        if name == "UserPromptSubmit" and str(ev.get("prompt") or "").strip():
            msgs.append(MessageIn(content=str(ev["prompt"]), user_id=settings.user_id, role="user",
                                  agent_platform=CLAUDE, agent_model=cur.model, session_id=session, project=project,
                                  created_at=datetime.now(UTC)))
        errors = deliver(settings, [p for m in msgs for p in expand(m, settings.max_content_bytes)])
        if transcript is not None and new_offset is not None:
            cur.path, cur.offset = str(transcript), new_offset
        main.save(cur)
    if errors:
        raise HookError(f"{len(errors)} message(s) refused: {errors[0]}")
    if name == "SessionStart":
        prune_states(settings.home)
        return session_context(settings, model=cur.model, project=project)
    return None


def _turn_message(settings: Any, it: Item, session: str, project: str, **kw: Any) -> MessageIn:
    return MessageIn(content=it.text, user_id=settings.user_id, role=it.role, agent_platform=CLAUDE,
                     session_id=it.session_id or session, project=project, created_at=it.created_at,
                     meta={"uuid": it.uuid}, **kw)


def _capture_subagent(ev: dict[str, Any], settings: Any, session: str, project: str, transcript: Path | None,
                      main: StreamState) -> None:
    agent_id = str(ev.get("agent_id") or "")
    role = str(ev.get("agent_type") or "")
    own = ev.get("agent_transcript_path")
    path = Path(str(own)).expanduser() if own else transcript
    if path is None or not path.exists():
        raise HookError("SubagentStop without a readable agent_transcript_path/transcript_path")

    def keep(e: dict[str, Any]) -> bool:   # in the old layout subagents share the main file as sidechains
        return bool(own) or (bool(e.get("isSidechain")) and (not agent_id or e.get("agentId") == agent_id))

    state = StreamState(settings.home, session, f"agent-{agent_id or 'sidechain'}")
    main_model = main.load().model
    with state.locked():
        cur = state.load()
        items, offset = new_items(path, cur, keep, mode="stop", last_message=ev.get("last_assistant_message"))
        msgs: list[MessageIn] = []
        for it in items:
            m = _turn_message(settings, it, session, project, agent_model=main_model, is_subagent=True,
                              subagent_role=role, subagent_model=it.model if it.role == "assistant" else "")
            m.meta["agent_id"] = agent_id
            if it.role == "user":           # the main agent's task for the subagent, not the user's words
                m.role = "system"
                m.meta["subagent_task"] = True
            msgs.append(m)
        errors = deliver(settings, [p for m in msgs for p in expand(m, settings.max_content_bytes)])
        cur.path, cur.offset = str(path), offset
        state.save(cur)
    if errors:
        raise HookError(f"{len(errors)} message(s) refused: {errors[0]}")


# --- Codex -------------------------------------------------------------------------------------------------
def handle_codex(p: dict[str, Any], settings: Any) -> None:
    """Codex runs its `notify` program after each turn with the user's inputs and the last answer; it gives no
    times or model, so the rows are stamped now (inputs first) and the model comes from Codex's config."""
    if p.get("type") != "agent-turn-complete":
        return
    thread = str(p.get("thread-id") or p.get("thread_id") or "")
    turn = str(p.get("turn-id") or p.get("turn_id") or "")
    project = project_hint(str(p.get("cwd") or os.getcwd()))
    model = _codex_model() or settings.agent_model
    inputs = [s for s in p.get("input-messages") or p.get("input_messages") or [] if isinstance(s, str) and s.strip()]
    last = p.get("last-assistant-message") or p.get("last_assistant_message")
    state = StreamState(settings.home, "codex", thread or "no-thread")
    with state.locked():
        cur = state.load()
        seen = list(cur.turns or [])
        if turn and turn in seen:
            return              # Codex re-sent a turn it already reported
        now = datetime.now(UTC)
        texts = [("user", s) for s in inputs] + ([("assistant", last)] if isinstance(last, str) and last.strip()
                                                 else [])
        msgs = [MessageIn(content=text, user_id=settings.user_id, role=role, agent_platform="codex",
                          agent_model=model, session_id=thread, project=project,
                          created_at=now + timedelta(microseconds=i), meta={"turn_id": turn} if turn else {})
                for i, (role, text) in enumerate(texts)]
        errors = deliver(settings, [x for m in msgs for x in expand(m, settings.max_content_bytes)])
        cur.turns = ([*seen, turn] if turn else seen)[-100:]
        state.save(cur)
    if errors:
        raise HookError(f"{len(errors)} message(s) refused: {errors[0]}")


def _codex_model() -> str:
    from gieok.capture.install import codex_home
    try:
        import tomllib
        with open(codex_home() / "config.toml", "rb") as fh:
            return str(tomllib.load(fh).get("model") or "")
    except (OSError, ValueError):
        return ""


# --- talking to a server, or to the database ---------------------------------------------------------------
def _http(settings: Any, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes] | None:
    """(status, body) from the local server, or None when no server answers in time."""
    import http.client
    host = settings.host if settings.host not in ("", "0.0.0.0", "::") else "127.0.0.1"
    conn = http.client.HTTPConnection(host, int(settings.port), timeout=CONNECT_TIMEOUT_S)
    try:
        conn.connect()
        if conn.sock is not None:
            conn.sock.settimeout(REPLY_TIMEOUT_S)
        conn.request(method, path, body=body, headers={"Content-Type": "application/json"} if body else {})
        resp = conn.getresponse()
        return resp.status, resp.read()
    except (OSError, http.client.HTTPException):
        return None
    finally:
        conn.close()


def serves_our_store(settings: Any) -> bool:
    """Does the server answering on our port serve the database this hook is configured for? Its `/health`
    names its store (`gieok.core.store_id`); another run's server on the same port must not receive our rows
    (nor give us its context). False when nothing answers."""
    from gieok.core.store_id import store_fingerprint
    res = _http(settings, "GET", "/health")
    if res is None or res[0] != 200:
        return False
    try:
        health = json.loads(res[1])
    except ValueError:
        return False
    return isinstance(health, dict) and health.get("store") == store_fingerprint(settings.resolved_database_url)


def _wire(m: MessageIn) -> dict[str, Any]:
    when = m.created_at.isoformat() if isinstance(m.created_at, datetime) else m.created_at
    return {"content": m.content, "user_id": m.user_id, "role": m.role, "platform": m.agent_platform,
            "model": m.agent_model, "session_id": m.session_id, "project": m.project, "created_at": when,
            "subagent_role": m.subagent_role, "subagent_model": m.subagent_model, "meta": m.meta}


def deliver(settings: Any, msgs: list[MessageIn]) -> list[str]:
    """Store messages through the running server, else directly. Returns the refusals (bad input)."""
    if not msgs:
        return []
    res = None
    if serves_our_store(settings):
        res = _http(settings, "POST", "/v1/messages", json.dumps([_wire(m) for m in msgs]).encode())
    if res is not None and res[0] == 200:
        return []
    # No server, or it refused part of the batch: the direct path stores what is valid and names the rest.
    return asyncio.run(_insert_direct(settings, msgs))


async def _insert_direct(settings: Any, msgs: list[MessageIn]) -> list[str]:
    # The hot path of MemoryService.ingest without importing the service: that pulls in retrieval and the
    # embedder (~0.5 s), and a hook process has no librarian to wake.
    from gieok.core.errors import InvalidInput
    from gieok.memory.ingest import prepare
    from gieok.store import open_store
    store = open_store(settings.resolved_database_url, busy_timeout_ms=settings.busy_timeout_ms)
    await store.open()
    errors: list[str] = []
    try:
        for m in msgs:
            try:
                row, text = prepare(m, max_bytes=settings.max_content_bytes, redact_secrets=settings.redact_secrets)
            except InvalidInput as exc:
                errors.append(str(exc))
                continue
            await store.insert_memory(row, text)
    finally:
        await store.close()
    return errors


def session_context(settings: Any, *, model: str, project: str) -> str | None:
    budget = max(100, min(settings.token_budget, int(CONTEXT_MAX_CHARS / settings.chars_per_token)))
    from urllib.parse import urlencode
    q = urlencode({"platform": CLAUDE, "model": model, "project": project, "budget": budget,
                   "user_id": settings.user_id})
    res = _http(settings, "GET", f"/v1/context?{q}") if serves_our_store(settings) else None
    if res is not None and res[0] == 200:
        block = json.loads(res[1])
    else:
        block = asyncio.run(_context_direct(settings, model=model, project=project, budget=budget))
    if not block.get("sections"):
        return None             # an empty memory says nothing worth a place in the context
    return str(block.get("text", ""))[:CONTEXT_MAX_CHARS]


async def _context_direct(settings: Any, *, model: str, project: str, budget: int) -> dict[str, Any]:
    from gieok.app.runtime import open_service
    from gieok.core.models import Identity
    from gieok.memory.context import load_context
    async with open_service(settings, with_embedder=False) as svc:
        ident = Identity(user_id=settings.user_id, agent_platform=CLAUDE, agent_model=model.lower(),
                         project=project)
        return (await load_context(svc, ident, project=project, token_budget=budget)).to_dict()


def main(argv: list[str] | None = None) -> int:
    """`python -m gieok.capture.hooks claude-code|codex [payload]`: the hook without the CLI around it."""
    args = sys.argv[1:] if argv is None else argv
    platform = args[0] if args else ""
    if platform == "codex" and len(args) > 1:
        return run(platform, lambda: args[-1])
    return run(platform, read_stdin)


if __name__ == "__main__":
    sys.exit(main())

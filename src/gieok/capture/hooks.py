"""Agent hooks: Claude Code (`gieok hook claude-code`, the event JSON on stdin) and Codex (`gieok hook codex`,
the notify JSON as the last argument) turned into memories.

A hook runs on every prompt, so it must never block or break the agent:
- the whole run is capped at `HOOK_DEADLINE_S` (a watchdog exits 0); any error exits 0 with one line on stderr,
  also appended to `<GIEOK_HOME>/hooks/hook.log`, since agents hide a hook's stderr;
- stdout stays empty except for SessionStart, whose stdout Claude Code adds to the model's context;
- when a server runs (`gieok serve --transport http`) the hook talks to it (`gieok.capture.server_client`,
  connect timeout 0.3 s) instead of opening the database — only when its `/health` reports the
  same store, so a server of another database on the same port is ignored — and opens the database itself
  when nothing answers;
- the path to a running server is light: settings from `gieok.capture.hook_config` (no pydantic-settings),
  transcripts from `gieok.capture.transcript`, messages as plain JSON dicts, a socket for HTTP; the settings
  object, the store (numpy) and the service are imported only when no server answers (`gieok bench hook`
  measures both paths against a bare interpreter start);
- what a turn says about code travels in its row's meta: anchors to the files it touched or named (the
  repository, HEAD and blob ids read from `.git`, no subprocess: `gieok.core.anchors`) and excerpts of tool
  output that shows an error; the librarian indexes both.

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

import _thread
import os
import sys
import time

from gieok.capture.fastjson import dumps, loads
from gieok.capture.hook_config import HookConfig
from gieok.capture.server_client import server_for
from gieok.capture.transcript import CLAUDE, code_meta, read_lines, split_content, stream_items
from gieok.core.anchors import gather, mentions

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from contextlib import AbstractContextManager
    from typing import Any

    from gieok.capture.hook_config import HookSettings
    from gieok.capture.transcript import Item
    from gieok.core.settings import Settings

HOOK_DEADLINE_S = 5.0
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
    cfg: HookSettings | None = None
    try:
        cfg = HookConfig.from_env() or _settings()
        raw = read_input()
        if platform == "claude-code":
            out = handle_claude(_parse(raw, "a Claude Code hook event"), cfg)
        elif platform == "codex":
            handle_codex(_parse(raw, "a Codex notify payload"), cfg)
            out = None
        else:
            raise HookError(f"unknown platform {platform!r}: use claude-code or codex")
        if out:
            sys.stdout.write(out)
            sys.stdout.flush()
    except Exception as exc:  # a hook must never break the agent: say what went wrong, exit 0
        _report(cfg, platform, exc)
    return 0


def _settings(cfg: HookSettings | None = None) -> Settings:
    """The full settings, for the paths that open the database (they import pydantic anyway)."""
    from gieok.core.settings import Settings, load_settings
    return cfg if isinstance(cfg, Settings) else load_settings()


def read_stdin() -> str:
    if sys.stdin is None or sys.stdin.isatty():
        raise HookError("no event on stdin: the agent pipes its hook event JSON in")
    return sys.stdin.read()


def _parse(raw: str, what: str) -> dict[str, Any]:
    try:
        data = loads(raw)
    except ValueError:
        raise HookError(f"input is not {what} (expected a JSON object, got {raw[:40]!r})") from None
    if not isinstance(data, dict):
        raise HookError(f"input is not {what} (expected a JSON object)")
    return data


def _arm_watchdog(seconds: float) -> None:
    # A bare `_thread` rather than `threading.Timer`: the same OS thread without importing `threading` on
    # every prompt, and like a daemon thread it never keeps the process alive.
    def give_up() -> None:
        time.sleep(seconds)
        try:
            sys.stderr.write(f"gieok hook: gave up after {seconds:g} s so the agent is not held up\n")
            sys.stderr.flush()
        finally:
            os._exit(0)
    _thread.start_new_thread(give_up, ())


def _report(cfg: HookSettings | None, platform: str, exc: Exception) -> None:
    line = f"gieok hook {platform}: {exc if isinstance(exc, HookError) else f'{type(exc).__name__}: {exc}'}"
    line = " ".join(line.split())[:500]
    sys.stderr.write(line + "\n")
    sys.stderr.flush()
    if cfg is None:
        return
    try:
        log = os.path.join(os.fspath(cfg.home), "hooks", "hook.log")
        os.makedirs(os.path.dirname(log), exist_ok=True)
        if os.path.exists(log) and os.path.getsize(log) > _LOG_MAX_BYTES:
            os.replace(log, log[:-4] + ".log.1")
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(f"{_iso_now()} {line}\n")
    except OSError:
        pass


def _iso(us: int) -> str:
    """An ISO 8601 UTC time from microseconds since the epoch (without importing datetime)."""
    sec, frac = divmod(us, 1_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec)) + f".{frac:06d}+00:00"


def _iso_now(offset_us: int = 0) -> str:
    return _iso(time.time_ns() // 1000 + offset_us)


# --- where: project hint -----------------------------------------------------------------------------------
def project_hint(cwd: str) -> str:
    """The git repository's name when `cwd` is inside one (read from `.git`, without running git: this runs
    on every prompt), else the directory's name. A worktree names its main repository."""
    try:
        here = os.path.realpath(os.path.expanduser(cwd))
    except (OSError, ValueError):
        return os.path.basename(cwd)
    d = here
    for _ in range(64):
        git = os.path.join(d, ".git")
        try:
            if os.path.isdir(git):
                return os.path.basename(d)
            if os.path.isfile(git):
                with open(git, encoding="utf-8", errors="replace") as fh:
                    target = fh.read().strip()
                gitdir = target[7:].strip().replace("\\", "/") if target.startswith("gitdir:") else ""
                if "/worktrees/" in gitdir:
                    main_git = gitdir.split("/worktrees/")[0]
                    main_git = main_git if os.path.isabs(main_git) else os.path.join(d, main_git)
                    return os.path.basename(os.path.dirname(os.path.realpath(main_git)))
                return os.path.basename(d)
        except OSError:
            break
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    return os.path.basename(here) or here


# --- cursors -----------------------------------------------------------------------------------------------
def _safe(name: str) -> str:
    return "".join(c if c.isascii() and (c.isalnum() or c in "._-") else "_" for c in name[:120]) or "_"


class Cursor:
    __slots__ = ("model", "offset", "path", "turns")

    def __init__(self, path: str = "", offset: int = 0, model: str = "", turns: list[str] | None = None) -> None:
        self.path = path
        self.offset = offset
        self.model = model
        self.turns = turns          # Codex: turn ids already stored


class StreamState:
    """The cursor of one stream (a session's main transcript, one subagent, one Codex thread) in a small
    JSON file, guarded by a lock file so two hooks of the same stream take turns."""

    def __init__(self, home: Any, *parts: str) -> None:
        self.file = os.path.join(os.fspath(home), "hooks", ".".join(_safe(p) for p in parts if p) + ".json")

    def load(self) -> Cursor:
        try:
            with open(self.file, encoding="utf-8") as fh:
                d = loads(fh.read())
            return Cursor(str(d.get("path", "")), int(d.get("offset", 0)), str(d.get("model", "")), d.get("turns"))
        except (OSError, ValueError, TypeError, AttributeError):
            return Cursor()

    def save(self, c: Cursor) -> None:
        os.makedirs(os.path.dirname(self.file), exist_ok=True)
        tmp = f"{self.file}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(dumps({"path": c.path, "offset": c.offset, "model": c.model,
                            **({"turns": c.turns} if c.turns is not None else {})}))
        os.replace(tmp, self.file)

    def locked(self) -> AbstractContextManager[None]:
        return _Lock(self.file[:-5] + ".lock")


class _Lock:
    """An advisory lock on a file (waits up to LOCK_WAIT_S, then goes on unlocked rather than hold the agent
    up; on Windows, which has no advisory locks, it does nothing: dedup keeps a double read harmless)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.fh: Any = None

    def __enter__(self) -> None:
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        self.fh = open(self.path, "a+")
        lockf = getattr(os, "lockf", None)    # POSIX record locks: in `os`, no extension module to load
        if lockf is None:
            return
        until = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                lockf(self.fh.fileno(), os.F_TLOCK, 0)
                return
            except OSError:
                if time.monotonic() > until:
                    return
                time.sleep(0.02)

    def __exit__(self, *exc: object) -> None:
        self.fh.close()


def prune_states(home: Any, days: float = STATE_TTL_DAYS) -> None:
    cutoff = time.time() - days * 86400
    d = os.path.join(os.fspath(home), "hooks")
    try:
        for name in os.listdir(d):
            f = os.path.join(d, name)
            if name.endswith((".json", ".lock")) and os.path.getmtime(f) < cutoff:
                os.unlink(f)
    except OSError:
        pass


# --- reading new turns -------------------------------------------------------------------------------------
def _norm(s: str) -> str:
    return " ".join(s.split())


def new_items(path: str, cur: Cursor, keep: Callable[[dict[str, Any]], bool], *, mode: str,
              last_message: str | None = None) -> tuple[list[Item], int]:
    """Items of a stream after the cursor, and the offset to store once they are saved.
    mode "end": everything read is finished. "stop": the last turn is finished when `last_message` is in it
    (waiting up to FLUSH_WAIT_S for it to be flushed). "prompt": the last turn is finished unless it ends on a
    tool call. An unfinished last turn is left for the next event: the offset stays at its start."""
    try:
        size = os.path.getsize(path)
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


# --- messages ----------------------------------------------------------------------------------------------
# Messages are the JSON objects POST /v1/messages takes (`gieok.memory.ingest.message_from_json`), built here
# as dicts so the hook's path to a server needs no part of the service.
def message(cfg: HookSettings, content: str, *, role: str, platform: str, model: str = "", session_id: str = "",
            project: str = "", created_at: str | None = None, meta: dict[str, Any] | None = None,
            **extra: Any) -> dict[str, Any]:
    msg: dict[str, Any] = {"content": content, "user_id": cfg.user_id, "role": role, "platform": platform,
                           "model": model, "session_id": session_id, "project": project, "created_at": created_at,
                           "meta": meta or {}}
    msg.update(extra)
    return msg


def split_message(msg: dict[str, Any], max_bytes: int) -> list[dict[str, Any]]:
    """One message, or its pieces (1 µs apart, so they keep their order) when it is over the size limit."""
    pieces = split_content(msg["content"], max_bytes)
    if len(pieces) == 1:
        return [msg]
    base = _parse_time(msg.get("created_at"))
    return [{**msg, "content": p, "meta": {**msg["meta"], "part": f"{i + 1}/{len(pieces)}"},
             "created_at": _iso(base + i) if base is not None else None} for i, p in enumerate(pieces)]


def _parse_time(value: str | None) -> int | None:
    """Microseconds since the epoch of an ISO time (rare: only split messages need it)."""
    if not value:
        return None
    from datetime import UTC, datetime
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    dt = dt if dt.tzinfo else dt.replace(tzinfo=UTC)
    return int(dt.timestamp()) * 1_000_000 + dt.microsecond


def _with_code(meta: dict[str, Any], it: Item, cwd: str) -> dict[str, Any]:
    meta.update(code_meta(it, it.cwd or cwd, snapshot=True))
    return meta


# --- Claude Code -------------------------------------------------------------------------------------------
def handle_claude(ev: dict[str, Any], cfg: HookSettings) -> str | None:
    name = str(ev.get("hook_event_name") or "")
    session = str(ev.get("session_id") or "")
    if not name or not session:
        raise HookError("event has no hook_event_name/session_id: is this a Claude Code hook event?")
    cwd = str(ev.get("cwd") or os.getcwd())
    project = project_hint(cwd)
    transcript = os.path.expanduser(str(ev["transcript_path"])) if ev.get("transcript_path") else None
    main = StreamState(cfg.home, session)

    if name == "SubagentStop":
        _capture_subagent(ev, cfg, session, project, cwd, transcript, main)
        return None
    with main.locked():
        cur = main.load()
        if name == "SessionStart" and ev.get("model"):
            cur.model = str(ev["model"])
        msgs: list[dict[str, Any]] = []
        new_offset = None
        if transcript is not None and os.path.exists(transcript):
            mode = {"Stop": "stop", "UserPromptSubmit": "prompt"}.get(name, "end")
            items, new_offset = new_items(transcript, cur, lambda e: not e.get("isSidechain"), mode=mode,
                                          last_message=ev.get("last_assistant_message") if name == "Stop" else None)
            for it in items:
                if it.role == "assistant":      # prompts were stored when submitted (UserPromptSubmit)
                    cur.model = it.model or cur.model
                    msgs.append(_turn_message(cfg, it, session, project, cwd, model=it.model))
        prompt = str(ev.get("prompt") or "")
        if name == "UserPromptSubmit" and prompt.strip():
            meta: dict[str, Any] = {}
            anchors = gather(mentions(prompt), cwd)
            if anchors:
                meta["anchors"] = anchors
            msgs.append(message(cfg, prompt, role="user", platform=CLAUDE, model=cur.model, session_id=session,
                                project=project, created_at=_iso_now(), meta=meta))
        errors = deliver(cfg, [p for m in msgs for p in split_message(m, cfg.max_content_bytes)])
        if transcript is not None and new_offset is not None:
            cur.path, cur.offset = str(transcript), new_offset
        main.save(cur)
    if errors:
        raise HookError(f"{len(errors)} message(s) refused: {errors[0]}")
    if name == "SessionStart":
        prune_states(cfg.home)
        return session_context(cfg, model=cur.model, project=project)
    return None


def _turn_message(cfg: HookSettings, it: Item, session: str, project: str, cwd: str, **kw: Any) -> dict[str, Any]:
    return message(cfg, it.text, role=it.role, platform=CLAUDE, session_id=it.session_id or session,
                   project=project, created_at=it.created_at, meta=_with_code({"uuid": it.uuid}, it, cwd), **kw)


def _capture_subagent(ev: dict[str, Any], cfg: HookSettings, session: str, project: str, cwd: str,
                      transcript: str | None, main: StreamState) -> None:
    agent_id = str(ev.get("agent_id") or "")
    role = str(ev.get("agent_type") or "")
    own = ev.get("agent_transcript_path")
    path = os.path.expanduser(str(own)) if own else transcript
    if path is None or not os.path.exists(path):
        raise HookError("SubagentStop without a readable agent_transcript_path/transcript_path")

    def keep(e: dict[str, Any]) -> bool:   # in the old layout subagents share the main file as sidechains
        return bool(own) or (bool(e.get("isSidechain")) and (not agent_id or e.get("agentId") == agent_id))

    state = StreamState(cfg.home, session, f"agent-{agent_id or 'sidechain'}")
    main_model = main.load().model
    with state.locked():
        cur = state.load()
        items, offset = new_items(path, cur, keep, mode="stop", last_message=ev.get("last_assistant_message"))
        msgs: list[dict[str, Any]] = []
        for it in items:
            m = _turn_message(cfg, it, session, project, cwd, model=main_model, is_subagent=True,
                              subagent_role=role, subagent_model=it.model if it.role == "assistant" else "")
            m["meta"]["agent_id"] = agent_id
            if it.role == "user":           # the main agent's task for the subagent, not the user's words
                m["role"] = "system"
                m["meta"]["subagent_task"] = True
            msgs.append(m)
        errors = deliver(cfg, [p for m in msgs for p in split_message(m, cfg.max_content_bytes)])
        cur.path, cur.offset = str(path), offset
        state.save(cur)
    if errors:
        raise HookError(f"{len(errors)} message(s) refused: {errors[0]}")


# --- Codex -------------------------------------------------------------------------------------------------
def handle_codex(p: dict[str, Any], cfg: HookSettings) -> None:
    """Codex runs its `notify` program after each turn with the user's inputs and the last answer; it gives no
    times or model, so the rows are stamped now (inputs first) and the model comes from Codex's config. Its
    payload names no tool calls: anchors come from the files the texts mention."""
    if p.get("type") != "agent-turn-complete":
        return
    thread = str(p.get("thread-id") or p.get("thread_id") or "")
    turn = str(p.get("turn-id") or p.get("turn_id") or "")
    cwd = str(p.get("cwd") or os.getcwd())
    project = project_hint(cwd)
    model = _codex_model() or cfg.agent_model
    inputs = [s for s in p.get("input-messages") or p.get("input_messages") or [] if isinstance(s, str) and s.strip()]
    last = p.get("last-assistant-message") or p.get("last_assistant_message")
    state = StreamState(cfg.home, "codex", thread or "no-thread")
    with state.locked():
        cur = state.load()
        seen = list(cur.turns or [])
        if turn and turn in seen:
            return              # Codex re-sent a turn it already reported
        now = time.time_ns() // 1000
        texts = [("user", s) for s in inputs] + ([("assistant", last)] if isinstance(last, str) and last.strip()
                                                 else [])
        msgs = []
        for i, (role, text) in enumerate(texts):
            meta: dict[str, Any] = {"turn_id": turn} if turn else {}
            anchors = gather(mentions(text), cwd)
            if anchors:
                meta["anchors"] = anchors
            msgs.append(message(cfg, text, role=role, platform="codex", model=model, session_id=thread,
                                project=project, created_at=_iso(now + i), meta=meta))
        errors = deliver(cfg, [x for m in msgs for x in split_message(m, cfg.max_content_bytes)])
        cur.turns = ([*seen, turn] if turn else seen)[-100:]
        state.save(cur)
    if errors:
        raise HookError(f"{len(errors)} message(s) refused: {errors[0]}")


def _codex_model() -> str:
    home = os.path.expanduser(os.environ.get("CODEX_HOME") or "~/.codex")
    try:
        import tomllib
        with open(os.path.join(home, "config.toml"), "rb") as fh:
            return str(tomllib.load(fh).get("model") or "")
    except (OSError, ValueError):
        return ""


# --- talking to a server, or to the database ---------------------------------------------------------------
def deliver(cfg: HookSettings, msgs: list[dict[str, Any]]) -> list[str]:
    """Store messages through the running server, else directly. Returns the refusals (bad input)."""
    if not msgs:
        return []
    server = server_for(cfg)
    if server is not None:
        res = server.post_json("/v1/messages", msgs)
        if res is not None and res[0] == 200:
            return []
    # No server, or it refused part of the batch: the direct path stores what is valid and names the rest.
    import asyncio
    return asyncio.run(_insert_direct(_settings(cfg), msgs))


async def _insert_direct(settings: Settings, msgs: list[dict[str, Any]]) -> list[str]:
    # The hot path of MemoryService.ingest without importing the service: that pulls in retrieval and the
    # embedder (~0.5 s), and a hook process has no librarian to wake.
    from gieok.core.errors import InvalidInput
    from gieok.core.models import Identity
    from gieok.memory.ingest import message_from_json, prepare
    from gieok.store import open_store
    store = open_store(settings.resolved_database_url, busy_timeout_ms=settings.busy_timeout_ms)
    await store.open()
    errors: list[str] = []
    base = Identity(user_id=settings.user_id)
    try:
        for m in msgs:
            try:
                row, text = prepare(message_from_json(m, base), max_bytes=settings.max_content_bytes,
                                    redact_secrets=settings.redact_secrets)
            except InvalidInput as exc:
                errors.append(str(exc))
                continue
            await store.insert_memory(row, text)
    finally:
        await store.close()
    return errors


def session_context(cfg: HookSettings, *, model: str, project: str) -> str | None:
    budget = max(100, min(cfg.token_budget, int(CONTEXT_MAX_CHARS / cfg.chars_per_token)))
    q = _query({"platform": CLAUDE, "model": model, "project": project, "budget": budget, "user_id": cfg.user_id})
    server = server_for(cfg)
    res = server.get_json(f"/v1/context?{q}") if server is not None else None
    if res is not None and res[0] == 200 and isinstance(res[1], dict):
        block = res[1]
    else:
        import asyncio
        block = asyncio.run(_context_direct(_settings(cfg), model=model, project=project, budget=budget))
    if not block.get("sections"):
        return None             # an empty memory says nothing worth a place in the context
    return str(block.get("text", ""))[:CONTEXT_MAX_CHARS]


_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def _query(params: dict[str, Any]) -> str:
    """A URL query string, percent-encoded (RFC 3986): `urllib.parse` would import `re` and more on the hook's
    path to the server."""
    def enc(v: object) -> str:
        return "".join(chr(b) if b in _UNRESERVED else f"%{b:02X}" for b in str(v).encode("utf-8"))
    return "&".join(f"{enc(k)}={enc(v)}" for k, v in params.items())


async def _context_direct(settings: Settings, *, model: str, project: str, budget: int) -> dict[str, Any]:
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

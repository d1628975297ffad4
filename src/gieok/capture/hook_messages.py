"""The messages a hook stores, from the transcript to the store.

A stream (a session's main transcript, one subagent, one Codex thread) keeps its cursor in a small file under
`<GIEOK_HOME>/hooks/`, guarded by a lock so two hooks of a stream take turns; the turns written after it are
read, leaving an unfinished last turn for the next event; each becomes a message, the JSON object
POST /v1/messages takes, with its ISO time (no datetime on the light path) and the project its working
directory belongs to. `deliver` sends them to the running server (`gieok.capture.server_client`) when one
answers for this store, else stores them directly, without the service (and with the full settings, only then
imported); `session_context` gets SessionStart's context block the same way. `HookError` is the one exception
of the hooks: a problem worth one line on stderr, after which the hook still exits 0 (`gieok.capture.hooks.run`).

One module rather than three on purpose: every module on the hook's path is one more file to load on every
prompt (~0.1 ms each, `python -X importtime`).
"""

from __future__ import annotations

import os
import time

from gieok.capture.fastjson import dumps, loads
from gieok.capture.server_client import server_for
from gieok.capture.transcript import CLAUDE, code_meta, read_lines, split_content, stream_items

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from contextlib import AbstractContextManager
    from typing import Any

    from gieok.capture.hook_config import HookSettings
    from gieok.capture.transcript import Item
    from gieok.core.settings import Settings

FLUSH_WAIT_S = 0.8
LOCK_WAIT_S = 1.5
STATE_TTL_DAYS = 30
CONTEXT_MAX_CHARS = 9500


class HookError(Exception):
    """A problem worth one line on stderr; the hook still exits 0."""


def iso(us: int) -> str:
    """An ISO 8601 UTC time from microseconds since the epoch (without importing datetime)."""
    sec, frac = divmod(us, 1_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec)) + f".{frac:06d}+00:00"


def iso_now(offset_us: int = 0) -> str:
    return iso(time.time_ns() // 1000 + offset_us)


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
        write_whole(self.file, dumps({"path": c.path, "offset": c.offset, "model": c.model,
                                      **({"turns": c.turns} if c.turns is not None else {})}))

    def locked(self) -> AbstractContextManager[None]:
        return _Lock(self.file[:-5] + ".lock")


def write_whole(path: str, text: str, *, mode: int = 0o644) -> None:
    """Write `path` whole or not at all (a temp file beside it, then a rename): a reader never sees half."""
    d, name = os.path.split(path)
    tmp = os.path.join(d, f".{name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)


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
            elif name.startswith(".") and name.endswith(".tmp") and os.path.getmtime(f) < time.time() - 3600:
                os.unlink(f)        # a cursor a stopped hook never renamed into place (the next run rereads)
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
             "created_at": iso(base + i) if base is not None else None} for i, p in enumerate(pieces)]


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


def with_code(meta: dict[str, Any], it: Item, cwd: str) -> dict[str, Any]:
    meta.update(code_meta(it, it.cwd or cwd, snapshot=True))
    return meta


# --- where they go: the server, or the database ------------------------------------------------------------
def full_settings(cfg: HookSettings | None = None) -> Settings:
    """The full settings, for the paths that open the database (they import pydantic anyway)."""
    from gieok.core.settings import Settings, load_settings
    return cfg if isinstance(cfg, Settings) else load_settings()


# --- the outbox ----------------------------------------------------------------------------------------------
# Messages are written to `<GIEOK_HOME>/hooks/outbox/` before delivery and removed after it. A hook the watchdog
# stops (a loaded machine, a database another process holds) thereby loses nothing: a later hook run delivers
# what a stopped one left. Delivering twice is harmless (a message keeps its content and time; the store dedups).
# The files hold what the agent's own transcript holds, unredacted until stored: owner-only, and short-lived.
OUTBOX_DIR = "outbox"
OUTBOX_STALE_S = 6.0      # older than a hook's whole run (HOOK_DEADLINE_S): its writer has gone
OUTBOX_PER_RUN = 20


def _outbox(cfg: HookSettings) -> str:
    return os.path.join(os.fspath(cfg.home), "hooks", OUTBOX_DIR)


def outbox_put(cfg: HookSettings, msgs: list[dict[str, Any]]) -> str | None:
    """Keep `msgs` on disk until delivered; None when the disk refuses (delivery goes on without it)."""
    d = _outbox(cfg)
    path = os.path.join(d, f"{time.time_ns()}-{os.getpid()}.json")
    try:
        os.makedirs(d, mode=0o700, exist_ok=True)
        write_whole(path, dumps(msgs), mode=0o600)
        return path
    except OSError:
        return None


def outbox_done(path: str | None) -> None:
    if path is None:
        return
    try:
        os.unlink(path)
    except OSError:   # already gone (another hook delivered it): nothing left to do
        return


def outbox_left(cfg: HookSettings, *, older_than_s: float = OUTBOX_STALE_S) -> list[str]:
    """Files hooks that have gone left behind, oldest first."""
    d = _outbox(cfg)
    cutoff = time.time() - older_than_s
    try:
        _finish_writes(d, cutoff)
        names = sorted(n for n in os.listdir(d) if n.endswith(".json") and not n.startswith("."))
    except OSError:
        return []
    out = []
    for n in names:
        p = os.path.join(d, n)
        try:
            if os.stat(p).st_mtime < cutoff:
                out.append(p)
        except OSError:
            continue
    return out


def _finish_writes(d: str, cutoff: float) -> None:
    """A hook stopped between writing its outbox file and renaming it leaves the temp file (`write_whole`): a
    whole one is put in place for delivery, a half-written one is removed (it holds unredacted text)."""
    for n in os.listdir(d):
        if not (n.startswith(".") and n.endswith(".tmp")):
            continue
        p = os.path.join(d, n)
        try:
            if os.stat(p).st_mtime >= cutoff:
                continue            # its writer may still be at work
            with open(p, encoding="utf-8") as fh:
                whole = isinstance(loads(fh.read()), list)
        except OSError:
            continue
        except ValueError:
            whole = False
        try:
            if whole:
                os.replace(p, os.path.join(d, n[1:].rsplit(".", 2)[0]))   # ".{name}.{pid}.tmp" -> name
            else:
                os.unlink(p)
        except OSError:
            continue


def outbox_drain(cfg: HookSettings, *, until: float) -> int:
    """Deliver what stopped hooks left, while time.monotonic() < `until`. Each file is claimed by renaming it
    (one hook delivers it, not every hook at once); a claimer that dies leaves it to be claimed again later."""
    n = 0
    for path in outbox_left(cfg)[:OUTBOX_PER_RUN]:
        if time.monotonic() >= until:
            break
        claimed = f"{path[:-5]}.{os.getpid()}.json"
        try:
            os.replace(path, claimed)
            os.utime(claimed)       # fresh again: not stale while this hook delivers it
            with open(claimed, encoding="utf-8") as fh:
                msgs = loads(fh.read())
        except (OSError, ValueError):
            continue
        if isinstance(msgs, list):
            _deliver(cfg, [m for m in msgs if isinstance(m, dict)])
            n += 1
        outbox_done(claimed)
    return n


def deliver(cfg: HookSettings, msgs: list[dict[str, Any]]) -> list[str]:
    """Store messages through the running server, else directly, kept in the outbox until they are. Returns
    the refusals (bad input)."""
    if not msgs:
        return []
    kept = outbox_put(cfg, msgs)
    errors = _deliver(cfg, msgs)
    outbox_done(kept)
    return errors


def _deliver(cfg: HookSettings, msgs: list[dict[str, Any]]) -> list[str]:
    if not msgs:
        return []
    server = server_for(cfg)
    if server is not None:
        res = server.post_json("/v1/messages", msgs)
        if res is not None and res[0] == 200:
            return []
    # No server, or it refused part of the batch: the direct path stores what is valid and names the rest.
    import asyncio
    return asyncio.run(_insert_direct(full_settings(cfg), msgs))


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
        block = asyncio.run(_context_direct(full_settings(cfg), model=model, project=project, budget=budget))
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


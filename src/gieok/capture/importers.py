"""Reading agent histories: Claude Code transcripts (shared with the hooks) and ChatGPT exports, and the batch
import that stores them.

Decisions, and why:
- A Claude Code *turn* is everything the assistant wrote between two user entries that carry text (a prompt,
  a slash command, the stop-hook feedback Claude Code records as a meta user entry). One turn is one memory:
  its text blocks in order, and each tool call as one short line (`[tool: Bash] pytest -q`, cut at 160
  characters). Tool *results* and thinking blocks are not stored: results are bulky (whole files, command
  output) and the assistant's text says what mattered; thinking is the model's scratchpad.
- The hooks and this importer build turns with the same code, so a turn gets the same content and the same
  `created_at` (the transcript timestamp of the turn's first assistant entry) whichever path stores it, and
  importing a hooked session stores nothing twice (the store dedups on user, session, content hash, time).
- The hook stores a prompt when it is submitted, before the transcript has it, so its time differs a little
  from the transcript's. The importer therefore matches each message one-to-one with an already stored row
  of the same session and content hash within `PROMPT_WINDOW` before storing it.
- A subagent's task prompt was written by the main agent, not the user, so it is stored as role `system`
  on the subagent's rows: role `user` would let the librarian mistake it for a fact about the user.
- ChatGPT: only the branch the user kept (root → `current_node`) by default; regenerated answers and edited
  prompts the user moved away from come in with `all_branches=True`, marked `meta.branch = "alternate"`.

The hooks read transcripts through `gieok.capture.transcript` alone (their path must stay light); the
import and its writer live here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from gieok.capture.transcript import (
    CLAUDE,
    TOOL_LINE_CHARS,
    Item,
    Line,
    code_meta,
    is_prompt,
    read_lines,
    split_content,
    stream_items,
    tool_line,
)
from gieok.memory.ingest import MessageIn

CHATGPT = "chatgpt"
PROMPT_WINDOW = timedelta(minutes=5)

__all__ = ["CHATGPT", "CLAUDE", "PROMPT_WINDOW", "TOOL_LINE_CHARS", "BatchWriter", "ImportCounts", "Item", "Line",
           "chatgpt_messages", "claude_code_files", "claude_code_messages", "code_meta", "expand", "import_sources",
           "is_prompt", "load_chatgpt", "read_lines", "split_content", "stream_items", "tool_line"]


def expand(msg: MessageIn, max_bytes: int) -> list[MessageIn]:
    """One message, or its pieces (1 µs apart, so they keep their order) when it is over the size limit."""
    pieces = split_content(msg.content, max_bytes)
    if len(pieces) == 1:
        return [msg]
    base = _as_dt(msg.created_at)
    return [replace(msg, content=p, meta={**msg.meta, "part": f"{i + 1}/{len(pieces)}"},
                    created_at=base + timedelta(microseconds=i) if base else None) for i, p in enumerate(pieces)]


def _as_dt(value: str | datetime | None) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    from gieok.core.dates import parse_time
    try:
        return parse_time(value)
    except ValueError:
        return None


@dataclass(slots=True)
class _ClaudeSession:
    model: str = ""                                         # the main agent's latest model
    agent_types: dict[str, str] = field(default_factory=dict)  # agentId → subagent_type


def _agent_types(lines: list[Line]) -> dict[str, str]:
    """agentId → subagent_type, from the Task/Agent tool calls and their results in the main transcript."""
    by_call: dict[str, str] = {}
    out: dict[str, str] = {}
    for ln in lines:
        content = (ln.entry.get("message") or {}).get("content")
        if not isinstance(content, list):
            continue
        for b in content:
            if not isinstance(b, dict):
                continue
            inp = b.get("input")
            if b.get("type") == "tool_use" and isinstance(inp, dict) and isinstance(inp.get("subagent_type"), str):
                by_call[str(b.get("id"))] = inp["subagent_type"]
            elif b.get("type") == "tool_result" and str(b.get("tool_use_id")) in by_call:
                res = ln.entry.get("toolUseResult")
                if isinstance(res, dict) and res.get("agentId"):
                    out[str(res["agentId"])] = by_call[str(b.get("tool_use_id"))]
    return out


def claude_code_files(path: Path) -> list[Path]:
    """A transcript, or every transcript under a projects directory (main sessions sort before their
    `<session>/subagents/` files, so subagent rows know the main model and their role)."""
    if path.is_dir():
        return sorted((p for p in path.rglob("*.jsonl") if p.is_file()), key=lambda p: ("subagents" in p.parts, p))
    return [path]


def claude_code_messages(path: Path, user_id: str, project_of: Callable[[str], str],
                         sessions: dict[str, _ClaudeSession] | None = None) -> Iterator[MessageIn]:
    """Every prompt and assistant turn of one transcript file, with its original time, model and session."""
    sessions = sessions if sessions is not None else {}
    lines, _ = read_lines(path, final=True)
    title = next((str(ln.entry.get("summary")) for ln in reversed(lines) if ln.entry.get("type") == "summary"
                  and ln.entry.get("summary")), "")
    streams: dict[str, list[Line]] = {}
    for ln in lines:
        e = ln.entry
        if e.get("type") not in ("user", "assistant"):
            continue
        key = f"sub:{e.get('agentId') or path.stem}" if e.get("isSidechain") else "main"
        streams.setdefault(key, []).append(ln)
    for key, stream in sorted(streams.items(), key=lambda kv: kv[0] != "main"):
        sid = next((str(ln.entry["sessionId"]) for ln in stream if ln.entry.get("sessionId")), path.stem)
        sess = sessions.setdefault(sid, _ClaudeSession())
        if key == "main":
            sess.agent_types.update(_agent_types(stream))
        for it in stream_items(stream):
            meta: dict[str, Any] = {"uuid": it.uuid, **({"title": title} if title else {}),
                                    **code_meta(it, it.cwd, snapshot=False)}
            msg = MessageIn(content=it.text, user_id=user_id, role=it.role, agent_platform=CLAUDE,
                            session_id=sid, project=project_of(it.cwd) if it.cwd else "", created_at=it.created_at,
                            meta=meta)
            if key == "main":
                if it.role == "assistant":
                    sess.model = it.model or sess.model
                msg.agent_model = it.model if it.role == "assistant" else sess.model
            else:
                agent_id = key[4:]
                msg.is_subagent = True
                msg.agent_model = sess.model
                msg.subagent_model = it.model
                msg.subagent_role = sess.agent_types.get(agent_id, "")
                msg.meta["agent_id"] = agent_id
                if it.role == "user":
                    msg.role = "system"
                    msg.meta["subagent_task"] = True
            yield msg


# --- ChatGPT export ----------------------------------------------------------------------------------------
def _epoch(value: Any) -> datetime | None:
    try:
        return datetime.fromtimestamp(float(value), tz=UTC)
    except (TypeError, ValueError, OverflowError, OSError):
        return None


def _chatgpt_text(message: dict[str, Any]) -> str:
    content = message.get("content") or {}
    if content.get("content_type") not in ("text", "multimodal_text"):
        return ""    # code, execution output, browsing, thoughts: tool traffic, not conversation
    return "\n".join(p for p in content.get("parts") or [] if isinstance(p, str)).strip()


def _active_path(mapping: dict[str, Any], current: str | None) -> list[str]:
    if not current or current not in mapping:
        leaves = [k for k, n in mapping.items() if not n.get("children")]
        current = max(leaves, key=lambda k: ((mapping[k].get("message") or {}).get("create_time") or 0),
                      default=None)
    path: list[str] = []
    seen: set[str] = set()
    while current and current in mapping and current not in seen:
        seen.add(current)
        path.append(current)
        current = mapping[current].get("parent")
    return path[::-1]


def chatgpt_messages(conv: dict[str, Any], user_id: str, *, all_branches: bool = False) -> Iterator[MessageIn]:
    """The messages of one exported conversation, oldest first."""
    mapping: dict[str, Any] = conv.get("mapping") or {}
    sid = str(conv.get("conversation_id") or conv.get("id") or "")
    title = str(conv.get("title") or "")
    active = _active_path(mapping, conv.get("current_node"))
    on_path = set(active)
    order = active if not all_branches else active + [k for k in mapping if k not in on_path]
    default_model = str(conv.get("default_model_slug") or "")
    start = _epoch(conv.get("create_time"))
    out: list[MessageIn] = []
    for i, node_id in enumerate(order):
        m = mapping[node_id].get("message")
        if not isinstance(m, dict):
            continue
        role = (m.get("author") or {}).get("role")
        meta_in = m.get("metadata") or {}
        if role not in ("user", "assistant") or meta_in.get("is_visually_hidden_from_conversation") \
                or m.get("recipient", "all") != "all":
            continue
        text = _chatgpt_text(m)
        if not text:
            continue
        when = _epoch(m.get("create_time")) or (start + timedelta(microseconds=i) if start else None)
        model = str(meta_in.get("model_slug") or default_model)
        meta: dict[str, Any] = {"node_id": node_id, **({"title": title} if title else {})}
        if node_id not in on_path:
            meta["branch"] = "alternate"
        out.append(MessageIn(content=text, user_id=user_id, role=role, agent_platform=CHATGPT, agent_model=model,
                             session_id=sid, created_at=when, meta=meta))
    out.sort(key=lambda x: x.created_at or datetime.min.replace(tzinfo=UTC))
    yield from out


KIND_HINTS = {
    "ndjson": "it looks like a gieok export: import it with `gieok import ndjson {path}`",
    "claude-code": "it looks like a Claude Code transcript: import it with `gieok import claude-code {path}`",
    "chatgpt": "it looks like a ChatGPT export: import it with `gieok import chatgpt {path}`",
}


def guess_kind(path: Path) -> str | None:
    """Which importer a file is for, from its first JSON value: a gieok export (ndjson rows with id, user_id and
    content), a Claude Code transcript (lines with a type and a sessionId or message), a ChatGPT export (a list
    of conversations with a mapping). None when it is none of these. Used only to say what to run instead."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(1 << 16)
    except OSError:
        return None
    text = head.decode("utf-8", errors="replace").lstrip()
    if text.startswith("["):
        return "chatgpt" if '"mapping"' in text else None
    first = text.split("\n", 1)[0]
    try:
        entry = json.loads(first)
    except ValueError:
        return None
    if not isinstance(entry, dict):
        return None
    if {"id", "user_id", "content"} <= set(entry):
        return "ndjson"
    if entry.get("type") in ("user", "assistant", "summary", "system") and \
            ({"sessionId", "message", "leafUuid"} & set(entry)):
        return "claude-code"
    if "conversations" in entry or "mapping" in entry:
        return "chatgpt"
    return None


def wrong_kind_hint(path: Path, expected: str) -> str:
    """' (…; it looks like X: import it with …)' when `path` is for another importer, else ''."""
    kind = guess_kind(path) if path.is_file() else None
    return f"; {KIND_HINTS[kind].format(path=path)}" if kind and kind != expected else ""


def load_chatgpt(path: Path) -> list[dict[str, Any]]:
    from gieok.core.errors import InvalidInput
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InvalidInput("path", f"cannot read {path} as a ChatGPT export ({exc}); pass the "
                                   "conversations.json from the export zip"
                                   f"{wrong_kind_hint(path, 'chatgpt')}") from None
    if isinstance(data, dict) and isinstance(data.get("conversations"), list):
        data = data["conversations"]
    if not isinstance(data, list):
        raise InvalidInput("path", f"{path} is not a ChatGPT conversations.json (expected a list)"
                                   f"{wrong_kind_hint(path, 'chatgpt')}")
    return [c for c in data if isinstance(c, dict)]


# --- storing -----------------------------------------------------------------------------------------------
@dataclass(slots=True)
class ImportCounts:
    read: int = 0
    stored: int = 0
    duplicates: int = 0
    invalid: int = 0
    errors: list[str] = field(default_factory=list)    # the first few refusals, to show the user

    def to_dict(self) -> dict[str, Any]:
        return {"read": self.read, "stored": self.stored, "duplicates": self.duplicates, "invalid": self.invalid,
                "errors": self.errors}


class BatchWriter:
    """Prepares messages on the hot-path rules (validation, redaction, hashing) and inserts them in batches,
    skipping what the store already has (see the module docstring for the one-to-one prompt matching)."""

    def __init__(self, store: Any, *, max_bytes: int, redact_secrets: bool, batch: int = 500) -> None:
        self.store = store
        self.max_bytes = max_bytes
        self.redact_secrets = redact_secrets
        self.batch = batch
        self.counts = ImportCounts()
        self._buf: list[tuple[Any, str]] = []
        self._known: dict[tuple[str, str], dict[str, list[datetime]]] = {}

    async def _existing(self, user_id: str, session_id: str) -> dict[str, list[datetime]]:
        key = (user_id, session_id)
        if key not in self._known:
            from gieok.core.models import SearchFilters
            rows = await self.store.list_memories(SearchFilters(user_id=user_id, session_id=session_id,
                                                                include_archived=True),
                                                  limit=1_000_000, newest_first=False)
            known: dict[str, list[datetime]] = {}
            for r in rows:
                if r.created_at is not None:
                    known.setdefault(r.content_hash, []).append(r.created_at)
            self._known[key] = known
        return self._known[key]

    async def add(self, msg: MessageIn) -> None:
        from gieok.core.errors import InvalidInput
        from gieok.memory.ingest import prepare
        for part in expand(msg, self.max_bytes):
            self.counts.read += 1
            try:
                row, text = prepare(part, max_bytes=self.max_bytes, redact_secrets=self.redact_secrets)
            except InvalidInput as exc:
                self.counts.invalid += 1
                if len(self.counts.errors) < 5:
                    self.counts.errors.append(str(exc))
                continue
            if row.session_id and row.created_at is not None:
                times = (await self._existing(row.user_id, row.session_id)).get(row.content_hash)
                if times:
                    best = min(times, key=lambda t: abs(t - row.created_at))  # type: ignore[operator]
                    if abs(best - row.created_at) <= PROMPT_WINDOW:
                        times.remove(best)      # one stored row stands for one message, never more
                        self.counts.duplicates += 1
                        continue
            self._buf.append((row, text))
            if len(self._buf) >= self.batch:
                await self.flush()

    async def flush(self) -> None:
        if not self._buf:
            return
        n = int(await self.store.insert_many(self._buf))
        self.counts.stored += n
        self.counts.duplicates += len(self._buf) - n
        self._buf = []


async def import_sources(writer: BatchWriter, sources: list[Any], messages_of: Callable[[Any], Iterable[MessageIn]],
                         *, label: str, progress: bool) -> ImportCounts:
    """Feed every source (a file, a conversation) through the writer, with a progress bar on stderr."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=Console(stderr=True), disable=not progress, transient=True) as bar:
        task = bar.add_task(label, total=len(sources))
        for src in sources:
            for msg in messages_of(src):
                await writer.add(msg)
            bar.advance(task)
        await writer.flush()
    return writer.counts

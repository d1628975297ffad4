"""Reading Claude Code transcripts: entries, prompts and assistant turns, shared by the hooks and the importer
(`gieok.capture.importers` has the decisions: what a turn is, why tool results are not stored).

Besides its text, a turn keeps what later steps need from its tool traffic without storing the traffic:
- the files its tool calls named (`Edit`, `MultiEdit`, `Write`, `Read`, `NotebookEdit`), as `FileRef`s
  with the edit's new text or the read's line range (anchors, `gieok.core.anchors`);
- short excerpts of tool results that show an error (a stack trace, a failing test), at most
  `MAX_TOOL_ERRORS` of `MAX_TOOL_ERROR_CHARS` each: the librarian fingerprints them, so a turn that ran
  into an error and fixed it is found by the next paste of that error.

This module is on the hook's path to a running server: no `json` (`gieok.capture.fastjson`), no `re`, no
dataclasses or typing at run time (their imports alone cost a noticeable part of a hook's budget).
"""

from __future__ import annotations

from gieok.capture.fastjson import dumps, loads
from gieok.core.anchors import FileRef, gather, mentions

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from os import PathLike
    from typing import Any

CLAUDE = "claude-code"
TOOL_LINE_CHARS = 160
MAX_TOOL_ERRORS = 3
MAX_TOOL_ERROR_CHARS = 4000
# Claude Code's own wrappers around slash commands and interruptions: turn boundaries, never memories.
_NOISE_PREFIXES = ("<command-name>", "<command-message>", "<command-args>", "<local-command-stdout>",
                   "<local-command-stderr>", "<system-reminder>", "Caveat: The messages below were generated",
                   "[Request interrupted by user")
_TOOL_KEYS = ("command", "file_path", "notebook_path", "path", "pattern", "url", "query", "description", "prompt")
FILE_TOOLS = {"Edit": "edit", "MultiEdit": "edit", "Write": "write", "Read": "read", "NotebookEdit": "notebook"}
# Cheap substring checks for "this tool output shows an error"; the librarian parses for real.
_ERROR_MARKERS = ("Traceback (most recent call last)", "Error:", "Exception", "panicked at", "panic:", "error[E",
                  "FAILED", "fatal error:", "Caused by:")


class Line:
    __slots__ = ("end", "entry", "start")

    def __init__(self, start: int, end: int, entry: dict[str, Any]) -> None:
        self.start = start      # byte offset of the line
        self.end = end          # byte offset just after it
        self.entry = entry


def read_lines(path: str | PathLike[str], offset: int = 0, *, final: bool = True) -> tuple[list[Line], int]:
    """JSON entries from `offset`, and the offset after the last complete line. A last line without its
    newline is still being written unless `final` (a finished file), so it is left for the next read."""
    with open(path, "rb") as fh:
        fh.seek(offset)
        data = fh.read()
    out: list[Line] = []
    pos = 0
    while pos < len(data):
        nl = data.find(b"\n", pos)
        if nl < 0:
            if not final:
                break
            nl = len(data)
        raw = data[pos:nl].strip()
        if raw:
            try:
                entry = loads(raw)
            except ValueError:
                entry = None
            if isinstance(entry, dict):
                out.append(Line(offset + pos, offset + nl + 1, entry))
        pos = nl + 1
    return out, offset + min(pos, len(data))


class Item:
    """A prompt (role user) or an assistant turn read from one stream of a transcript."""

    __slots__ = ("closed", "created_at", "cwd", "end", "files", "model", "role", "session_id", "start",
                 "tail_is_tool", "text", "tool_errors", "uuid")

    def __init__(self, role: str, text: str, created_at: str | None, uuid: str, start: int, end: int, *,
                 model: str = "", cwd: str = "", session_id: str = "") -> None:
        self.role = role
        self.text = text
        self.created_at = created_at
        self.uuid = uuid
        self.start = start
        self.end = end
        self.model = model
        self.cwd = cwd
        self.session_id = session_id
        self.closed = True          # a later user entry ended it (assistant turns only)
        self.tail_is_tool = False   # the turn's last block so far is a tool call: it cannot be over yet
        self.files: list[FileRef] = []
        self.tool_errors: list[str] = []


def _user_text(entry: dict[str, Any]) -> str | None:
    """The text of a user entry, or None when it only carries tool results (not a turn boundary)."""
    content = (entry.get("message") or {}).get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    texts = [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
    if texts:
        return "\n\n".join(t for t in texts if isinstance(t, str))
    return None if any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content) else ""


def is_prompt(entry: dict[str, Any], text: str) -> bool:
    """A user entry worth remembering: typed by a person, not a wrapper Claude Code wrote."""
    s = text.strip()
    return bool(s) and not entry.get("isMeta") and not entry.get("isCompactSummary") \
        and not s.startswith(_NOISE_PREFIXES)


def tool_line(block: dict[str, Any]) -> str:
    name = str(block.get("name") or "tool")
    inp: dict[str, Any] = block["input"] if isinstance(block.get("input"), dict) else {}
    detail = next((str(inp[k]) for k in _TOOL_KEYS if isinstance(inp.get(k), str) and inp[k].strip()), "")
    if not detail and inp:
        detail = dumps(inp)
    if isinstance(inp.get("subagent_type"), str):
        detail = f"({inp['subagent_type']}) {detail}"
    detail = " ".join(detail.split())
    line = f"[tool: {name}] {detail}".rstrip()
    return line if len(line) <= TOOL_LINE_CHARS else line[:TOOL_LINE_CHARS - 1] + "…"


def tool_files(block: dict[str, Any]) -> list[FileRef]:
    """The files a tool call names, with what locates its lines (an edit's new text, a read's range)."""
    via = FILE_TOOLS.get(str(block.get("name") or ""))
    inp = block.get("input")
    if via is None or not isinstance(inp, dict):
        return []
    path = inp.get("file_path") or inp.get("notebook_path")
    if not isinstance(path, str) or not path.strip():
        return []
    if via == "read":
        offset, limit = inp.get("offset"), inp.get("limit")
        if isinstance(offset, int) and offset > 0:
            end = offset + limit - 1 if isinstance(limit, int) and limit > 0 else None
            return [FileRef(path, via, offset, end)]
        return [FileRef(path, via)]
    if via == "edit":
        many = inp.get("edits")
        edits: list[Any] = many if isinstance(many, list) else [inp]
        refs = [FileRef(path, via, new_text=e["new_string"]) for e in edits
                if isinstance(e, dict) and isinstance(e.get("new_string"), str)]
        return refs or [FileRef(path, via)]
    return [FileRef(path, via)]


def _result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def error_excerpt(text: str) -> str | None:
    """A bounded excerpt of tool output that shows an error, or None. The start and the end are kept: a
    Node error leads with its message, a Python traceback ends with it."""
    if not any(m in text for m in _ERROR_MARKERS):
        return None
    if len(text) <= MAX_TOOL_ERROR_CHARS:
        return text
    head = MAX_TOOL_ERROR_CHARS // 4
    return text[:head] + "\n…\n" + text[-(MAX_TOOL_ERROR_CHARS - head - 3):]


def stream_items(lines: Iterable[Line]) -> list[Item]:
    """Prompts and assistant turns of ONE stream (the caller filters main vs a subagent), in order."""
    items: list[Item] = []
    turn: Item | None = None
    parts: list[str] = []

    def close(closed: bool) -> None:
        nonlocal turn
        if turn is not None and parts:
            turn.text = "\n\n".join(parts)
            turn.closed = closed
            items.append(turn)
        turn = None
        parts.clear()

    for ln in lines:
        e = ln.entry
        kind = e.get("type")
        msg: dict[str, Any] = e["message"] if isinstance(e.get("message"), dict) else {}
        if kind == "user":
            text = _user_text(e)
            if text is None:        # tool results belong to the running turn
                if turn is not None and len(turn.tool_errors) < MAX_TOOL_ERRORS:
                    for b in msg.get("content") or []:
                        if isinstance(b, dict) and b.get("type") == "tool_result":
                            excerpt = error_excerpt(_result_text(b))
                            if excerpt and len(turn.tool_errors) < MAX_TOOL_ERRORS:
                                turn.tool_errors.append(excerpt)
                continue
            close(True)
            if is_prompt(e, text):
                items.append(Item("user", text.strip(), e.get("timestamp"), str(e.get("uuid", "")), ln.start,
                                  ln.end, cwd=str(e.get("cwd", "")), session_id=str(e.get("sessionId", ""))))
        elif kind == "assistant":
            model = str(msg.get("model") or "")
            if model == "<synthetic>" or e.get("isApiErrorMessage"):
                continue            # Claude Code's own placeholders ("No response requested."), not the model
            if turn is None:
                turn = Item("assistant", "", e.get("timestamp"), str(e.get("uuid", "")), ln.start, ln.end,
                            cwd=str(e.get("cwd", "")), session_id=str(e.get("sessionId", "")))
            turn.end = ln.end
            turn.model = model or turn.model
            content = msg.get("content")
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
            for b in blocks:
                if not isinstance(b, dict):
                    continue
                if b.get("type") == "text" and str(b.get("text", "")).strip():
                    parts.append(str(b["text"]).strip())
                    turn.tail_is_tool = False
                elif b.get("type") == "tool_use":
                    parts.append(tool_line(b))
                    turn.files.extend(tool_files(b))
                    turn.tail_is_tool = True
    close(False)
    return items


def split_content(text: str, max_bytes: int) -> list[str]:
    """Pieces of at most `max_bytes` UTF-8 bytes, cut at line ends where possible: a long turn is kept whole
    across rows rather than refused by the 64 KiB limit."""
    if len(text.encode("utf-8")) <= max_bytes:
        return [text]
    pieces: list[str] = []
    rest = text
    while rest:
        cut = len(rest.encode("utf-8")[:max_bytes].decode("utf-8", "ignore"))
        if cut < len(rest):
            nl = rest.rfind("\n", 0, cut)
            cut = nl + 1 if nl > cut // 2 else cut
        pieces.append(rest[:cut])
        rest = rest[cut:]
    return [p for p in pieces if p.strip()]


def code_meta(it: Item, cwd: str, *, snapshot: bool) -> dict[str, Any]:
    """What a turn says about code, for its row's meta: anchors to the files it touched or named, and the
    error excerpts of its tool results (fingerprinted by the librarian). With `snapshot=False` (an old
    transcript) anchors name repository and path only: the files have moved on since."""
    out: dict[str, Any] = {}
    refs = [*it.files, *mentions(it.text)]
    if refs and cwd:
        anchors = gather(refs, cwd, snapshot=snapshot)
        if anchors:
            out["anchors"] = anchors
    if it.tool_errors:
        out["tool_errors"] = list(it.tool_errors)
    return out

"""Export (ndjson, markdown, csv) and the lossless ndjson import."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from typing import Any

from gieok.core.columns import COLUMN_NAMES, TIME_COLUMNS
from gieok.core.dates import parse_time
from gieok.core.errors import InvalidInput
from gieok.core.models import Memory
from gieok.core.text import row_index_text
from gieok.store.base import MemoryRows

# ndjson carries every column (`Memory.to_dict`); CSV, for spreadsheets, the ones a person reads, in reading order.
CSV_COLS = ("id", "created_at", "role", "kind", "agent_platform", "agent_model", "subagent_role", "session_id",
            "project", "p_tags", "d_tags", "is_pinned", "importance", "title", "content")
_KNOWN = frozenset(COLUMN_NAMES)


def memory_to_json(m: Memory) -> str:
    return json.dumps(m.to_dict(), ensure_ascii=False)


def memory_from_json(line: str, lineno: int = 0) -> Memory:
    try:
        d: dict[str, Any] = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"line {lineno}", f"not JSON: {exc.msg}") from None
    if not isinstance(d, dict) or "id" not in d or "content" not in d or "user_id" not in d:
        raise InvalidInput(f"line {lineno}", "each line must be an exported memory with id, user_id and content")
    for k in TIME_COLUMNS:
        if d.get(k):
            d[k] = parse_time(d[k], f"line {lineno}: {k}")
    return Memory(**{k: v for k, v in d.items() if k in _KNOWN})


def render(rows: Iterable[Memory], fmt: str) -> str:
    if fmt == "ndjson":
        return "".join(memory_to_json(m) + "\n" for m in rows)
    if fmt == "markdown":
        out = ["# gieok export\n"]
        for m in rows:
            when = m.created_at.isoformat() if m.created_at else ""
            tags = ", ".join(m.p_tags + m.d_tags)
            out.append(f"## {m.title or m.kind} — {when}\n\n*{m.role}*"
                       f"{' · ' + m.agent_platform if m.agent_platform else ''}"
                       f"{' · ' + m.agent_model if m.agent_model else ''}"
                       f"{' · tags: ' + tags if tags else ''}{' · pinned' if m.is_pinned else ''} · `{m.id}`\n\n"
                       f"{m.content}\n")
        return "\n".join(out)
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow(CSV_COLS)
        for m in rows:
            d = m.to_dict()
            w.writerow(["|".join(d[c]) if isinstance(d[c], list) else d[c] for c in CSV_COLS])
        return buf.getvalue()
    raise InvalidInput("format", f"{fmt!r} is not one of ndjson, markdown, csv")


async def export_text(store: MemoryRows, user_id: str | None, fmt: str, *, limit: int | None = None) -> tuple[str, int]:
    if fmt not in ("ndjson", "markdown", "csv"):
        raise InvalidInput("format", f"{fmt!r} is not one of ndjson, markdown, csv")
    rows: list[Memory] = []
    async for m in store.iter_memories(user_id):
        rows.append(m)
        if limit and len(rows) >= limit:
            break
    return render(rows, fmt), len(rows)


async def import_ndjson(store: MemoryRows, lines: Iterable[str], *, batch: int = 500) -> tuple[int, int]:
    """Import exported rows exactly as they were (ids, times, tags, statuses). Returns (read, inserted).
    Rows already present (same id or same user/session/hash/time) are skipped. Embeddings are not in the
    export: imported rows go back to embed_status='pending' and the librarian re-embeds them."""
    read = inserted = 0
    buf: list[tuple[Memory, str]] = []
    existing: set[str] = set()
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        m = memory_from_json(line, lineno)
        read += 1
        m.embed_status = "pending" if m.embed_status == "ok" else m.embed_status
        m.embedding_model = ""
        m.lease_until = None
        buf.append((m, row_index_text(m.title, m.content)))
        if len(buf) >= batch:
            inserted += await _flush(store, buf, existing)
    inserted += await _flush(store, buf, existing)
    return read, inserted


async def _flush(store: MemoryRows, buf: list[tuple[Memory, str]], existing: set[str]) -> int:
    if not buf:
        return 0
    present = {m.id for m in await store.get_memories([m.id for m, _ in buf])}
    rows = [(m, t) for m, t in buf if m.id not in present and m.id not in existing]
    existing.update(m.id for m, _ in rows)
    n = await store.insert_many(rows)
    buf.clear()
    return int(n)

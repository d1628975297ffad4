"""How a `Memory` becomes a SQLite row and back: JSON text for tags and `meta`, ISO text for times, 0/1 for
booleans. The column list is `gieok.core.columns`; this module only knows SQLite's spelling of the types."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from gieok.core.columns import COLUMN_NAMES, names
from gieok.core.dates import from_iso, iso
from gieok.core.models import Memory

MEMORY_COLS = COLUMN_NAMES
JSON_COLS = names("tags", "json")
BOOL_COLS = names("bool")
TIME_COLS = names("time")
SELECT = ", ".join("m." + c for c in MEMORY_COLS)
# The WHERE lets SQLite answer from the partial index on embed_gen instead of scanning the table (a full scan
# per librarian batch cost 7× throughput at 1M rows).
MAX_GEN = "SELECT COALESCE((SELECT embed_gen FROM memory WHERE embed_gen > 0 ORDER BY embed_gen DESC LIMIT 1), 0)"


def tags_sql(col: str, ph: str) -> str:
    return f"EXISTS (SELECT 1 FROM json_each({col}) WHERE value = {ph})"


def db_value(col: str, value: Any) -> Any:
    if col in JSON_COLS:
        return json.dumps(value, ensure_ascii=False)
    if col in TIME_COLS:
        return iso(value)
    if col in BOOL_COLS:
        return int(bool(value))
    return value


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False) if value else ("[]" if isinstance(value, list) else "{}")


# Hot path (every insert): one precomputed converter per column instead of per-value type checks.
CONVERTERS: tuple[tuple[str, Callable[[Any], Any] | None], ...] = tuple(
    (c, _json if c in JSON_COLS else iso if c in TIME_COLS else int if c in BOOL_COLS else None)
    for c in MEMORY_COLS)


def insert_params(m: Memory) -> list[Any]:
    return [conv(getattr(m, c)) if conv else getattr(m, c) for c, conv in CONVERTERS]


def row_to_memory(row: tuple[Any, ...]) -> Memory:
    d = dict(zip(MEMORY_COLS, row, strict=False))
    for c in JSON_COLS:
        d[c] = json.loads(d[c])
    for c in BOOL_COLS:
        d[c] = bool(d[c])
    for c in TIME_COLS:
        d[c] = from_iso(d[c])
    return Memory(**d)

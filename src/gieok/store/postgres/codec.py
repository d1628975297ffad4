"""How a `Memory` becomes a PostgreSQL row and back: text[] for tags, jsonb for `meta`, native booleans and
timestamptz. The column list is `gieok.core.columns`; this module only knows PostgreSQL's spelling."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from psycopg.types.json import Jsonb

from gieok.core.columns import COLUMN_NAMES, names
from gieok.core.models import Memory
from gieok.store.base import Vector

MEMORY_COLS = COLUMN_NAMES
TAG_COLS = names("tags")
JSON_COLS = names("json")
SELECT = ", ".join("m." + c for c in MEMORY_COLS)
CASTS = {**{c: "::text[]" for c in TAG_COLS}, **{c: "::jsonb" for c in JSON_COLS}}


def json_dumps(obj: Any) -> str:
    # Job results may hold datetimes and the like: stored as text, as SQLite's json.dumps(default=str) does.
    return json.dumps(obj, ensure_ascii=False, default=str)


def tags_sql(col: str, ph: str) -> str:
    # `@>` rather than `= ANY(…)`: only the containment operator can use the GIN index on the tag arrays.
    return f"{col} @> ARRAY[{ph}]::text[]"


def db_value(col: str, value: Any) -> Any:
    if col in JSON_COLS:
        return Jsonb(value)
    if col in TAG_COLS:
        return list(value)
    return value


def ts(value: Any) -> Any:
    """A time as a query parameter: as it is (psycopg adapts datetimes to timestamptz)."""
    return value


def row_to_memory(row: tuple[Any, ...]) -> Memory:
    d = dict(zip(MEMORY_COLS, row, strict=False))
    for c in TAG_COLS:
        d[c] = list(d[c] or [])
    return Memory(**d)


def vec(value: Any) -> Vector:
    return np.asarray(value.to_numpy() if hasattr(value, "to_numpy") else value, dtype=np.float32)


# A vector beside text-format columns: pgvector's binary form as bytea (`vector_send`: a 2-byte dimension, 2
# unused bytes, then big-endian float32s), since its text form is parsed number by number in Python.
SENT_VECTOR = "vector_send(m.embedding)"


def sent_vector(value: bytes | None) -> Vector | None:
    if value is None:
        return None
    return np.frombuffer(value, dtype=">f4", offset=4).astype(np.float32)


"""The columns of a memory row, described once.

Both backends build their column lists and value conversions from this table, export/import reads its
time fields from it, and `Store.update_memory` refuses what it does not mark updatable. The dataclasses a
program holds (`Memory`, `Identity`, `MessageIn`) stay hand-written so that type checkers see their fields;
`tests/test_columns.py` fails when they and this table disagree, and each backend's `check()` reports a
database whose `memory` table lacks one of these columns.

Columns only a backend knows (its row sequence, indexed text, vector, lease owner) are not listed here: they
never leave the backend.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# text, numbers and booleans are plain values; `tags` is a list of strings, `json` an object (`meta`), `time`
# an aware UTC datetime or None.
ColumnType = Literal["text", "bool", "int", "float", "tags", "json", "time"]


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type: ColumnType
    identity: bool = False   # who is speaking and where: a field of `Identity`, the scope rows are written in
    given: bool = False      # a client may set it on a new message: a field of `MessageIn`
    updatable: bool = False  # `Store.update_memory` may change it (ids, owner and creation time never change)


def _c(name: str, type_: ColumnType, flags: str = "") -> Column:
    # flags: i = identity, g = given by the client, u = updatable
    return Column(name, type_, identity="i" in flags, given="g" in flags, updatable="u" in flags)


MEMORY_COLUMNS: tuple[Column, ...] = (
    _c("id", "text", "g"),
    _c("user_id", "text", "ig"),
    _c("agent_platform", "text", "ig"),
    _c("agent_model", "text", "ig"),
    _c("is_subagent", "bool", "ig"),
    _c("subagent_model", "text", "ig"),
    _c("subagent_role", "text", "ig"),
    _c("session_id", "text", "ig"),
    _c("role", "text", "g"),
    _c("project", "text", "igu"),
    _c("p_tags", "tags", "gu"),
    _c("d_tags", "tags", "gu"),
    _c("privacy_scope", "text", "gu"),
    _c("team", "text", "gu"),            # the team a `team`-scoped row is shared with ('' otherwise)
    _c("kind", "text", "gu"),
    _c("title", "text", "gu"),
    _c("content", "text", "gu"),
    _c("source", "text", "gu"),
    _c("importance", "float", "gu"),
    _c("is_pinned", "bool", "gu"),
    _c("content_hash", "text", "u"),
    _c("embedding_model", "text"),
    _c("tag_status", "text", "u"),
    _c("embed_status", "text", "u"),
    _c("cold_attempts", "int", "u"),
    _c("cold_error", "text", "u"),
    _c("lease_until", "time", "u"),
    _c("view_count", "int", "u"),
    _c("cite_count", "int", "u"),
    _c("edit_count", "int", "u"),
    _c("shown_count", "int", "u"),       # appearances in search results; a view is an explicit open
    _c("last_accessed_at", "time", "u"),
    _c("next_review_at", "time", "u"),
    _c("review_interval_days", "float", "u"),
    _c("is_active", "bool", "u"),
    _c("archived_at", "time", "u"),
    _c("deleted_at", "time", "u"),
    _c("created_at", "time", "g"),
    _c("updated_at", "time", "u"),
    _c("meta", "json", "gu"),
)


def names(*types: ColumnType) -> tuple[str, ...]:
    """The memory columns of these types (all of them when none is given), in table order."""
    return tuple(c.name for c in MEMORY_COLUMNS if not types or c.type in types)


COLUMN_NAMES: tuple[str, ...] = names()
COLUMN_TYPES: dict[str, ColumnType] = {c.name: c.type for c in MEMORY_COLUMNS}
TIME_COLUMNS: tuple[str, ...] = names("time")
IDENTITY_COLUMNS: tuple[str, ...] = tuple(c.name for c in MEMORY_COLUMNS if c.identity)
GIVEN_COLUMNS: tuple[str, ...] = tuple(c.name for c in MEMORY_COLUMNS if c.given)
UPDATABLE: frozenset[str] = frozenset(c.name for c in MEMORY_COLUMNS if c.updatable)

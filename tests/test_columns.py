"""One description of the memory columns (`gieok.core.columns`): the dataclasses, both backends' column lists,
export/import and the ingest forms must agree with it."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime

from gieok.core import columns
from gieok.core.columns import COLUMN_NAMES, GIVEN_COLUMNS, IDENTITY_COLUMNS, MEMORY_COLUMNS, TIME_COLUMNS, UPDATABLE
from gieok.core.models import Identity, Memory
from gieok.memory import export
from gieok.memory.ingest import FIELDS, MessageIn
from gieok.store import base
from gieok.store.postgres import codec as pg_codec
from gieok.store.sqlite import codec as sqlite_codec

# The annotation each column type is declared with on `Memory` (the module uses postponed annotations).
ANNOTATION = {"text": "str", "bool": "bool", "int": "int", "float": "float", "tags": "list[str]",
              "json": "dict[str, Any]", "time": "datetime | None"}


def fields(cls: type) -> dict[str, str]:
    return {f.name: str(f.type) for f in dataclasses.fields(cls)}


def test_memory_has_exactly_the_columns_with_their_types() -> None:
    assert len(set(COLUMN_NAMES)) == len(COLUMN_NAMES)
    assert fields(Memory) == {c.name: ANNOTATION[c.type] for c in MEMORY_COLUMNS}


def test_identity_is_the_identity_columns() -> None:
    assert list(fields(Identity)) == list(IDENTITY_COLUMNS)
    assert all(fields(Identity)[c] == fields(Memory)[c] for c in IDENTITY_COLUMNS)


def test_message_in_is_the_given_columns() -> None:
    got = fields(MessageIn)
    assert set(got) == set(GIVEN_COLUMNS)
    # Same types as the row, except what the client may leave out or send as text.
    loose = {"id": "str | None", "created_at": "str | datetime | None"}
    assert {c: t for c, t in got.items() if c not in loose} == {c: fields(Memory)[c] for c in got if c not in loose}
    assert {c: got[c] for c in loose} == loose
    assert set(IDENTITY_COLUMNS) <= set(GIVEN_COLUMNS)


def test_the_json_ingest_form_takes_given_columns_and_two_short_names() -> None:
    assert set(FIELDS) - set(GIVEN_COLUMNS) == {"platform", "model"}


def test_updatable_columns() -> None:
    assert base.UPDATABLE is UPDATABLE
    # Who owns a row, where it was said and when it was made never change after the insert.
    assert not UPDATABLE & {"id", "user_id", "session_id", "agent_platform", "agent_model", "created_at"}
    assert {"content", "p_tags", "deleted_at", "meta", "project"} <= UPDATABLE


def test_both_backends_select_every_column() -> None:
    assert sqlite_codec.MEMORY_COLS == pg_codec.MEMORY_COLS == COLUMN_NAMES
    want = ", ".join("m." + c for c in COLUMN_NAMES)
    assert sqlite_codec.SELECT == pg_codec.SELECT == want
    assert set(sqlite_codec.JSON_COLS) == set(pg_codec.CASTS) == {"p_tags", "d_tags", "meta"}
    assert set(sqlite_codec.TIME_COLS) == set(TIME_COLUMNS) == {c for c, t in fields(Memory).items()
                                                                if t == "datetime | None"}
    assert set(sqlite_codec.BOOL_COLS) == {"is_subagent", "is_pinned", "is_active"}


def test_sqlite_codec_round_trips_every_column() -> None:
    t = datetime(2026, 11, 1, 9, 30, 15, 123456, tzinfo=UTC)
    m = Memory(id="0190", user_id="alice", content="내일 회의", is_subagent=True, p_tags=["gieok"],
               d_tags=["db", "회의"], meta={"cwd": "/x", "n": 1}, is_pinned=True, importance=0.7, view_count=3,
               lease_until=t,
               last_accessed_at=t, next_review_at=t, archived_at=t, deleted_at=t, created_at=t, updated_at=t,
               review_interval_days=6.0, is_active=False)
    row = tuple(sqlite_codec.insert_params(m))
    assert len(row) == len(COLUMN_NAMES)
    assert sqlite_codec.row_to_memory(row) == m


def test_export_reads_what_it_writes() -> None:
    t = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
    m = Memory(id="0190", user_id="alice", content="hello", created_at=t, updated_at=t, next_review_at=t,
               p_tags=["a"], meta={"k": "v"})
    line = export.memory_to_json(m)
    assert set(json.loads(line)) == set(COLUMN_NAMES)
    assert export.memory_from_json(line) == m
    assert set(export.CSV_COLS) <= set(COLUMN_NAMES)


def test_export_ignores_fields_it_does_not_know() -> None:
    # A newer gieok's export may carry columns this one lacks; import keeps the rest.
    d = {"id": "0190", "user_id": "alice", "content": "x", "created_at": "2026-11-01T09:00:00Z", "colour": "blue"}
    m = export.memory_from_json(json.dumps(d))
    assert m.created_at == datetime(2026, 11, 1, 9, 0, tzinfo=UTC) and not hasattr(m, "colour")


def test_names_filters_by_type() -> None:
    assert columns.names("tags") == ("p_tags", "d_tags")
    assert columns.names() == COLUMN_NAMES

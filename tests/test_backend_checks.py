"""Backend knowledge stays in the backend: `gieok doctor` prints each store's own checks, and `bench hook`
counts rows through the store, on SQLite and on PostgreSQL alike."""

from __future__ import annotations

import sqlite3

import psycopg

from gieok.app.doctor import run_checks
from gieok.bench.hook import count_rows
from gieok.core.columns import COLUMN_NAMES
from gieok.core.settings import Settings
from gieok.memory.ingest import MessageIn
from gieok.memory.service import MemoryService


def _drop_column(url: str, column: str) -> None:
    """Damage the schema behind gieok's back, as a hand-made "fix" might."""
    if url.startswith("sqlite:///"):
        with sqlite3.connect(url[len("sqlite:///"):]) as con:
            con.execute(f"ALTER TABLE memory DROP COLUMN {column}")
    else:
        with psycopg.connect(url, autocommit=True) as con:
            con.execute(f"ALTER TABLE memory DROP COLUMN {column}")


async def test_doctor_prints_the_backends_own_checks(settings: Settings, svc: MemoryService) -> None:
    lines: list[str] = []
    assert await run_checks(settings, lines.append), lines
    out = "\n".join(lines)
    if settings.resolved_database_url.startswith("sqlite"):
        assert "[ok] SQLite 3." in out and "with FTS5" in out
    else:
        assert "[ok] PostgreSQL " in out and "vector 0." in out and "pg_trgm" in out
    assert f"[ok] the memory table has all {len(COLUMN_NAMES)} columns" in out


async def test_doctor_names_a_missing_column(settings: Settings, svc: MemoryService) -> None:
    _drop_column(settings.resolved_database_url, "review_interval_days")
    lines: list[str] = []
    assert not await run_checks(settings, lines.append)
    out = "\n".join(lines)
    assert "[FAIL] the memory table lacks columns review_interval_days" in out and "fix: " in out


async def test_count_rows_counts_every_row_through_the_store(settings: Settings, svc: MemoryService) -> None:
    a, _ = await svc.ingest(MessageIn(content="오늘 회의 메모", user_id="alice"))
    await svc.ingest(MessageIn(content="a note from bob", user_id="bob"))
    await svc.forget(a, "alice")
    assert await count_rows(settings.resolved_database_url) == 2     # deleted rows too, as `count(*)` did

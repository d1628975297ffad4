"""Identity resolution order, and migrations that are all-or-nothing."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from gieok.core.errors import StoreError
from gieok.core.models import Identity
from gieok.mcp.identity import platform_from_client, resolve_identity
from gieok.store.sqlite import SQLiteStore
from gieok.store.sqlite import migrations as sqlite_migrations

BASE = Identity(user_id="alice", agent_platform="", agent_model="env-model")


def test_identity_order_args_headers_env_client() -> None:
    ident = resolve_identity(BASE, headers=None, client_name="claude-code", args={})
    assert (ident.agent_platform, ident.agent_model) == ("claude-code", "env-model")
    ident = resolve_identity(BASE, headers={"X-Gieok-Platform": "Codex", "X-Gieok-Model": "GPT-5.5",
                                            "X-Gieok-Subagent-Role": " Reviewer "},
                             client_name="claude-code", args={})
    assert (ident.agent_platform, ident.agent_model, ident.subagent_role, ident.is_subagent) == (
        "codex", "gpt-5.5", "reviewer", True)
    ident = resolve_identity(BASE, headers={"x-gieok-platform": "codex"}, client_name=None,
                             args={"platform": "Cursor", "model": "Sonnet"})
    assert (ident.agent_platform, ident.agent_model) == ("cursor", "sonnet")
    assert platform_from_client("codex-mcp-client") == "codex"
    assert platform_from_client("Some New Client") == "some new client"


async def test_migrations_from_empty_and_idempotent(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    store = SQLiteStore(url)
    await store.open()
    assert await store.schema_version() == len(sqlite_migrations.MIGRATIONS)
    await store.close()
    store = SQLiteStore(url)
    await store.open()   # a second open applies nothing twice
    rows = store.db.execute("SELECT version, name FROM migration_history ORDER BY version").fetchall()
    assert [r[0] for r in rows] == [v for v, _, _ in sqlite_migrations.MIGRATIONS]
    mode = store.db.execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal" and store.db.execute("PRAGMA busy_timeout").fetchone()[0] == 5000
    await store.close()


async def test_failed_migration_leaves_database_unchanged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def m999_broken(db: sqlite3.Connection) -> None:
        db.execute("CREATE TABLE half_done (x INTEGER)")
        db.execute("THIS IS NOT SQL")

    monkeypatch.setattr(sqlite_migrations, "MIGRATIONS", [*sqlite_migrations.MIGRATIONS, (999, "broken", m999_broken)])
    store = SQLiteStore(f"sqlite:///{tmp_path / 'b.db'}")
    with pytest.raises(StoreError, match="migration 999_broken failed"):
        await store.open()
    con = sqlite3.connect(tmp_path / "b.db")
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert "half_done" not in tables and "memory" not in tables   # the whole upgrade rolled back

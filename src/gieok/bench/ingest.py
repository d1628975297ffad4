"""`gieok bench ingest`: the hot path against a bare INSERT into an identical table, measured in one run.

Both sides write to fresh SQLite files with the same schema (migrations included: same indexes, same
full-text trigger). The bare side inserts precomputed rows with one prepared statement; the product side
goes through `MemoryService.ingest` (validation, redaction, hashing, id, tokenising for full text).
"""

from __future__ import annotations

import random
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from gieok.app.runtime import open_service
from gieok.core.settings import load_settings
from gieok.memory.ingest import MessageIn, prepare
from gieok.store.sqlite import SQLiteStore

_WORDS = """memory agent session project database migration search vector index coffee meeting deploy review test build
회의 커피 데이터베이스 마이그레이션 배포 검토 오늘 내일 프로젝트""".split()


def _text(rng: random.Random, size: int) -> str:
    out: list[str] = []
    n = 0
    while n < size:
        w = rng.choice(_WORDS)
        out.append(w)
        n += len(w.encode()) + 1
    return " ".join(out)


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))]


async def run_ingest_bench(n: int = 10000, size: int = 500, echo: Any = print) -> dict[str, Any]:
    rng = random.Random(7)
    texts = [_text(rng, size) for _ in range(n)]
    with tempfile.TemporaryDirectory() as tmp:
        # Bare INSERT: same schema, rows prepared outside the timed region.
        bare_url = f"sqlite:///{Path(tmp) / 'bare.db'}"
        store = SQLiteStore(bare_url)
        await store.open()
        rows = [prepare(MessageIn(content=t, user_id="bench", session_id="s"), max_bytes=1 << 20) for t in texts]
        params = [store._insert_params(m, st) for m, st in rows]
        db = store.db
        sql = store._INSERT_SQL
        bare: list[float] = []
        for p in params:
            t0 = time.perf_counter()
            db.execute(sql, p)
            bare.append(time.perf_counter() - t0)
        await store.close()

        settings = load_settings(database_url=f"sqlite:///{Path(tmp) / 'gieok.db'}", user_id="bench",
                                 librarian=False)
        ours: list[float] = []
        async with open_service(settings, with_embedder=False) as svc:
            for t in texts:
                msg = MessageIn(content=t, user_id="bench", session_id="s", role="user", agent_platform="bench")
                t0 = time.perf_counter()
                await svc.ingest(msg)
                ours.append(time.perf_counter() - t0)
            stored = (await svc.store.stats("bench"))["total"]
    res = {
        "n": n, "bytes": size, "stored": stored,
        "ingest_p50_us": statistics.median(ours) * 1e6, "ingest_p99_us": _pct(ours, 99) * 1e6,
        "bare_p50_us": statistics.median(bare) * 1e6, "bare_p99_us": _pct(bare, 99) * 1e6,
    }
    res["p50_ratio"] = res["ingest_p50_us"] / res["bare_p50_us"]
    echo(f"sqlite {sqlite3.sqlite_version}, {n} single ingests of ~{size} bytes (WAL, synchronous=NORMAL)")
    echo(f"gieok ingest : p50 {res['ingest_p50_us']:8.1f} µs   p99 {res['ingest_p99_us']:8.1f} µs")
    echo(f"bare INSERT  : p50 {res['bare_p50_us']:8.1f} µs   p99 {res['bare_p99_us']:8.1f} µs")
    echo(f"ratio p50    : {res['p50_ratio']:.2f}x  (target ≤ 2.00x)  stored {stored}/{n}")
    return res

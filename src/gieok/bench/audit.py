"""`gieok bench audit`: what the audit log costs the hot path. The same ingests run with and without an audit
entry per write, in alternating blocks on one SQLite file (so machine noise hits both alike), with the audit
writer flushing in the background to that same database as `gieok serve` does. Reports p50 per ingest and wall
time per block, both ways."""

from __future__ import annotations

import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from gieok.app.runtime import open_service
from gieok.auth.audit import AuditLog, entry
from gieok.bench.ingest import _pct, _text
from gieok.core.principal import Principal
from gieok.core.settings import load_settings
from gieok.memory.ingest import MessageIn
from gieok.store import open_store

BLOCK = 250


async def run_audit_bench(n: int = 10000, size: int = 500, echo: Any = print) -> dict[str, Any]:
    rng = random.Random(11)
    texts = [_text(rng, size) for _ in range(n)]
    p = Principal("bench", teams=("eng",), key_id="0123456789ab", client="bench", via="apikey")
    with tempfile.TemporaryDirectory() as tmp:
        settings = load_settings(database_url=f"sqlite:///{Path(tmp) / 'gieok.db'}", user_id="bench",
                                 librarian=False)
        times: dict[bool, list[float]] = {False: [], True: []}
        walls: dict[bool, float] = {False: 0.0, True: 0.0}
        async with open_service(settings, with_embedder=False) as svc, anyio.create_task_group() as tg:
            log = AuditLog(svc.store)
            tg.start_soon(log.run)
            for start in range(0, n, BLOCK):
                audited = (start // BLOCK) % 2 == 1
                w0 = time.perf_counter()
                for i, t in enumerate(texts[start:start + BLOCK]):
                    msg = MessageIn(content=t, user_id="bench", session_id=f"s{start + i}", role="user")
                    t0 = time.perf_counter()
                    mid, _ = await svc.ingest(msg)
                    if audited:
                        log.record(entry(p, "POST /v1/messages", memory_ids=[mid]))
                    times[audited].append(time.perf_counter() - t0)
                walls[audited] += time.perf_counter() - w0
                await anyio.sleep(0)
            tg.cancel_scope.cancel()
        audit_rows = len(await _count(settings))
    res: dict[str, Any] = {"n": n, "audit_rows": audit_rows}
    for k, name in ((False, "plain"), (True, "audited")):
        res[f"{name}_p50_us"] = statistics.median(times[k]) * 1e6
        res[f"{name}_p99_us"] = _pct(times[k], 99) * 1e6
        res[f"{name}_per_s"] = len(times[k]) / walls[k]
    res["p50_overhead_pct"] = 100 * (res["audited_p50_us"] / res["plain_p50_us"] - 1)
    res["throughput_overhead_pct"] = 100 * (res["plain_per_s"] / res["audited_per_s"] - 1)
    echo(f"{n} ingests of ~{size} bytes, alternating blocks of {BLOCK} with/without an audit entry each; "
         f"{audit_rows} audit rows written by the background writer")
    echo(f"plain   : p50 {res['plain_p50_us']:7.1f} µs  p99 {res['plain_p99_us']:8.1f} µs  "
         f"{res['plain_per_s']:7.0f} ingests/s")
    echo(f"audited : p50 {res['audited_p50_us']:7.1f} µs  p99 {res['audited_p99_us']:8.1f} µs  "
         f"{res['audited_per_s']:7.0f} ingests/s")
    echo(f"audit cost: p50 {res['p50_overhead_pct']:+.1f}%  throughput {res['throughput_overhead_pct']:+.1f}%  "
         "(target: a few percent)")
    return res


async def _count(settings: Any) -> list[Any]:
    store = open_store(settings.resolved_database_url)
    await store.open()
    try:
        return await store.list_audit(limit=1_000_000)
    finally:
        await store.close()

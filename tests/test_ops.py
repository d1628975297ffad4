"""What operators see: /health, /ready and Prometheus /metrics on a real `gieok serve` (both backends) and a real
`gieok worker --port`, JSON logs, secrets from files, and the request middleware's refusal counters."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from datetime import timedelta
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from prometheus_client.parser import text_string_to_metric_families

from gieok.app.observability import QUEUE_CACHE_S, QueueProbe, readiness
from gieok.app.runtime import open_service
from gieok.core.dates import utcnow
from gieok.core.metrics import AUTH_FAILURES, RATE_LIMITED
from gieok.core.settings import load_settings, redacted_url, with_password
from gieok.mcp.ops_http import MetricsMiddleware
from gieok.memory.ingest import MessageIn
from tests.test_mcp_e2e import GIEOK, data, free_port, server_env


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(m: dict, name: str, **labels: str) -> float:
    return m.get((name, tuple(sorted(labels.items()))), 0.0)


def wait_http(url: str, proc: subprocess.Popen[bytes], timeout: float = 40) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError((proc.stderr.read() if proc.stderr else b"").decode())
        try:
            if httpx2.get(url, timeout=1).status_code in (200, 503):
                return
        except httpx2.HTTPError:
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer")


async def test_serve_health_ready_metrics_and_json_logs(db_url: str, tmp_path: Path) -> None:
    port = free_port()
    env = server_env(db_url, tmp_path, GIEOK_LOG_FORMAT="json", GIEOK_STATELESS_HTTP="true",
                     GIEOK_LIBRARIAN="false")
    proc = subprocess.Popen([GIEOK, "serve", "--transport", "http", "--port", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_http(base + "/health", proc)
        assert httpx2.get(base + "/health").json()["ok"] is True
        ready = httpx2.get(base + "/ready")
        assert ready.status_code == 200, ready.text
        checks = ready.json()["checks"]
        assert checks["database"] == "ok" and checks["schema"]["applied"] == checks["schema"]["expected"] >= 1
        r = httpx2.post(base + "/v1/messages", json={"content": "배포는 화요일에", "role": "user",
                                                     "session_id": "ops"}, timeout=10)
        assert r.status_code == 200
        async with httpx2.AsyncClient(timeout=30) as http, \
                Client(streamable_http_client(base + "/mcp", http_client=http)) as client:
            found = data(await client.call_tool("search_memory", {"query": "배포"}))
            assert found["results"]
            bad = await client.call_tool("search_memory", {"query": "x", "role": "robot"})
            assert bad.is_error
        httpx2.get(base + "/no/such/page")
        time.sleep(QUEUE_CACHE_S + 0.1)   # /ready read the queue before the POST; the gauges cache it briefly
        m = samples(httpx2.get(base + "/metrics").text)
        assert value(m, "gieok_http_requests_total", route="/v1/messages", method="POST", status="200") == 1
        assert value(m, "gieok_http_requests_total", route="unmatched", method="GET", status="404") == 1
        assert value(m, "gieok_http_request_duration_seconds_count", route="/mcp", method="POST") >= 2
        assert value(m, "gieok_tool_calls_total", tool="search_memory", outcome="ok") == 1
        assert value(m, "gieok_tool_calls_total", tool="search_memory", outcome="error") == 1
        assert value(m, "gieok_ingest_total", result="stored") == 1
        assert value(m, "gieok_search_duration_seconds_count", mode="keyword") >= 1
        assert value(m, "gieok_librarian_queue_rows", state="pending") == 1   # no librarian in this process
        assert value(m, "gieok_librarian_lag_seconds") >= 0
        assert value(m, "gieok_build_info", version="0.1.0") == 1
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    # uvicorn shuts down gracefully, then re-raises SIGTERM so the exit status says how it ended (143).
    assert proc.returncode in (0, -signal.SIGTERM)
    lines = [line for line in err.decode().splitlines() if line.strip()]
    logs = [json.loads(line) for line in lines if line.startswith("{")]
    assert logs and all({"time", "level", "logger", "message"} <= set(entry) for entry in logs)
    assert any(entry["logger"].startswith("mcp.") for entry in logs)   # the SDK's loggers share the format
    # Everything on stderr is JSON, the start-up banner too (one object, its addresses as fields).
    assert [line for line in lines if not line.startswith("{")] == []
    banner = [e for e in logs if e["message"] == "gieok is serving"]
    assert len(banner) == 1 and banner[0]["mcp"] == base + "/mcp" and banner[0]["auth"] == "none (loopback only)"


async def test_worker_port_serves_health_ready_metrics_and_stops_on_sigterm(db_url: str, tmp_path: Path) -> None:
    settings = load_settings(database_url=db_url, home=str(tmp_path), user_id="alice", embedder="none")
    async with open_service(settings, with_embedder=False) as svc:
        await svc.ingest(MessageIn(content="worker metrics probe", user_id="alice", role="user"))
    port = free_port()
    env = server_env(db_url, tmp_path)
    proc = subprocess.Popen([GIEOK, "worker", "--port", str(port)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_http(base + "/health", proc)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            m = samples(httpx2.get(base + "/metrics").text)
            if value(m, "gieok_librarian_rows_total", outcome="done") >= 1:
                break
            time.sleep(0.3)
        assert value(m, "gieok_librarian_rows_total", outcome="done") >= 1
        assert httpx2.get(base + "/ready").json()["checks"]["librarian"]["pending"] == 0
        assert httpx2.get(base + "/mcp").status_code == 404     # a worker serves no MCP
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=20)
    assert proc.returncode == 0


async def test_ready_fails_on_database_loss_and_on_librarian_lag(settings_kwargs: dict, tmp_path: Path) -> None:
    s = load_settings(**settings_kwargs, ready_max_lag_s=60)
    async with open_service(s, with_embedder=False) as svc:
        ok, body = await readiness(svc, s, QueueProbe())
        assert ok, body
        await svc.ingest(MessageIn(content="old and waiting", user_id="alice", role="user",
                                   created_at=(utcnow() - timedelta(hours=1)).isoformat()))
        ok, body = await readiness(svc, s, QueueProbe())
        assert not ok and "GIEOK_READY_MAX_LAG_S" in body["checks"]["librarian"]["problem"]
        assert body["checks"]["librarian"]["lag_seconds"] >= 3500
        lenient = load_settings(**settings_kwargs)          # lag reported, readiness kept
        ok, body = await readiness(svc, lenient, QueueProbe())
        assert ok and body["checks"]["librarian"]["pending"] == 1
        await svc.store.close()
        ok, body = await readiness(svc, s, QueueProbe())
        assert not ok and body["checks"]["database"].startswith("unreachable")
        await svc.store.open()   # open_service closes it again on exit
    ok, body = await readiness(None, s, QueueProbe())
    assert not ok and body["checks"] == {"service": "starting"}


@pytest.fixture
def settings_kwargs(db_url: str, tmp_path: Path) -> dict:
    return {"database_url": db_url, "home": str(tmp_path), "user_id": "alice", "embedder": "none",
            "librarian": False}


async def test_middleware_counts_refusals_by_route_template() -> None:
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    async def refuse(request):  # type: ignore[no-untyped-def]
        return PlainTextResponse("no", status_code=int(request.path_params["code"]))

    app = MetricsMiddleware(Starlette(routes=[Route("/refuse/{code}", refuse)]))
    before = (AUTH_FAILURES.labels("/refuse/{code}", "401")._value.get(),
              RATE_LIMITED.labels("/refuse/{code}")._value.get())
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://t") as c:
        for code in (401, 401, 429, 200):
            assert (await c.get(f"/refuse/{code}")).status_code == code
    assert AUTH_FAILURES.labels("/refuse/{code}", "401")._value.get() == before[0] + 2
    assert RATE_LIMITED.labels("/refuse/{code}")._value.get() == before[1] + 1


def test_secrets_come_from_files_and_never_reach_logs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "gieok_database_password").write_text("p@ss:w/rd\n")
    (tmp_path / "gieok_llm_api_key").write_text("sk-test")
    monkeypatch.setenv("GIEOK_SECRETS_DIR", str(tmp_path))
    monkeypatch.setenv("GIEOK_DATABASE_URL", "postgresql://gieok@db:5432/gieok?sslmode=require")
    s = load_settings()
    assert s.llm_api_key == "sk-test"
    assert s.resolved_database_url == "postgresql://gieok:p%40ss%3Aw%2Frd@db:5432/gieok?sslmode=require"
    assert redacted_url(s.resolved_database_url) == "postgresql://gieok:***@db:5432/gieok?sslmode=require"
    assert "p%40ss" not in repr(s)
    # A URL that already carries a password, or a SQLite URL, is left alone.
    assert with_password("postgresql://u:x@h/db", "y") == "postgresql://u:x@h/db"
    assert with_password("sqlite:////data/memory.db", "y") == "sqlite:////data/memory.db"
    monkeypatch.setenv("GIEOK_SECRETS_DIR", str(tmp_path / "missing"))
    assert load_settings().llm_api_key == ""


def test_healthcheck_command(tmp_path: Path) -> None:
    port = free_port()
    res = subprocess.run([GIEOK, "healthcheck", "--port", str(port)], capture_output=True, text=True,
                         env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout=30)
    assert res.returncode == 1 and f"127.0.0.1:{port}/health" in res.stderr


def test_with_auth_on_probes_and_metrics_are_public_and_refusals_counted(tmp_path: Path) -> None:
    port = free_port()
    env = server_env(f"sqlite:///{tmp_path / 'm.db'}", tmp_path, GIEOK_AUTH="apikey", GIEOK_LIBRARIAN="false")
    proc = subprocess.Popen([GIEOK, "serve", "--transport", "http", "--port", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_http(base + "/health", proc)
        assert httpx2.get(base + "/ready").status_code == 200            # probes carry no key
        refused = httpx2.post(base + "/v1/messages", json={"content": "x", "role": "user"})
        assert refused.status_code == 401
        bad_key = httpx2.get(base + "/v1/context", headers={"Authorization": "Bearer gk_nope"})
        assert bad_key.status_code == 401
        m = samples(httpx2.get(base + "/metrics").text)
        assert value(m, "gieok_auth_failures_total", route="/v1/messages", status="401") == 1
        assert value(m, "gieok_auth_failures_total", route="/v1/context", status="401") == 1
        assert value(m, "gieok_http_requests_total", route="/v1/messages", method="POST", status="401") == 1
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=20)

"""The operators' HTTP surface: request metrics for every route (an ASGI middleware around the whole app), the
`/health`, `/ready` and `/metrics` answers, and the small app `gieok worker` serves them from.

The middleware labels requests by route template (`/mcp`, `/v1/messages`, …), never by raw path, so a scan of
random URLs cannot grow the series; 401/403 and 429 answers also count as auth failures and rate-limit
refusals, whichever layer (the SDK's bearer auth, gieok's own checks) refused.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Match, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gieok import __version__
from gieok.app.observability import QueueProbe, metrics_payload, readiness
from gieok.core.metrics import AUTH_FAILURES, HTTP_LATENCY, HTTP_REQUESTS, RATE_LIMITED
from gieok.core.settings import Settings
from gieok.core.store_id import store_fingerprint
from gieok.memory.service import MemoryService

ServiceGetter = Callable[[], MemoryService | None]


class MetricsMiddleware:
    """Counts and times every HTTP request by route template, method and status."""

    def __init__(self, app: ASGIApp, routes: Sequence[BaseRoute] = ()) -> None:
        self.app = app
        # To name requests refused before routing (the auth gate's 401/429) by the route they asked for.
        self.routes = list(routes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500   # an exception before the response started is a 500 to the client
        t0 = time.perf_counter()

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            route = _route_label(scope, self.routes)
            method = scope.get("method", "GET")
            HTTP_REQUESTS.labels(route, method, str(status)).inc()
            HTTP_LATENCY.labels(route, method).observe(time.perf_counter() - t0)
            if status in (401, 403):
                AUTH_FAILURES.labels(route, str(status)).inc()
            elif status == 429:
                RATE_LIMITED.labels(route).inc()


def _route_label(scope: Scope, routes: list[BaseRoute]) -> str:
    # Starlette's router records the matched route in the (shared) scope; a request answered before routing
    # is matched here; paths no route knows share one label.
    route = scope.get("route")
    if route is None:
        route = next((r for r in routes if r.matches(scope)[0] != Match.NONE), None)
    path = getattr(route, "path", None)
    return str(path) if path else "unmatched"


async def health_response(svc: MemoryService | None) -> Response:
    # `store` lets a hook check that this server serves the database it was configured for.
    return JSONResponse({"ok": svc is not None, "version": __version__,
                         "store": store_fingerprint(svc.settings.resolved_database_url) if svc else None})


async def ready_response(svc: MemoryService | None, settings: Settings, probe: QueueProbe) -> Response:
    ok, body = await readiness(svc, settings, probe)
    return JSONResponse(body, status_code=200 if ok else 503)


async def metrics_response(svc: MemoryService | None, settings: Settings, probe: QueueProbe) -> Response:
    if not settings.metrics:
        return JSONResponse({"error": "metrics are off (GIEOK_METRICS=false)"}, status_code=404)
    body, content_type = await metrics_payload(svc, probe)
    return Response(body, media_type=content_type)


def ops_app(get_service: ServiceGetter, settings: Settings) -> ASGIApp:
    """/health, /ready and /metrics alone, for `gieok worker` (which has no MCP endpoint)."""
    probe = QueueProbe()

    async def health(_: Request) -> Response:
        return await health_response(get_service())

    async def ready(_: Request) -> Response:
        return await ready_response(get_service(), settings, probe)

    async def metrics(_: Request) -> Response:
        return await metrics_response(get_service(), settings, probe)

    routes: list[Any] = [Route("/health", health), Route("/ready", ready), Route("/metrics", metrics)]
    return MetricsMiddleware(Starlette(routes=routes))

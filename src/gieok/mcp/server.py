"""The MCP server (official SDK): its lifespan owns the service (store, embedder, librarian) and opens the team
server's authenticator and audit log on the same store; tools, resources and the prompt are registered from
their own modules; the plain HTTP routes sit beside `/mcp`.

With GIEOK_AUTH set, the SDK's `TokenVerifier`/`AuthSettings` guard `/mcp` and serve the protected-resource
metadata; `build_http_app` puts the HTTP gate (gieok.auth.http_gate) in front of every route.

Errors are raised (ToolError → an MCP error result), never returned as ordinary text.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from mcp.server import MCPServer
from starlette.types import ASGIApp

from gieok import __version__
from gieok.app.runtime import open_service
from gieok.auth.http_gate import HttpGate
from gieok.auth.sdk import GieokTokenVerifier, auth_settings
from gieok.auth.team import LOOPBACK, TeamAuth
from gieok.core.errors import ConfigError
from gieok.core.settings import Settings
from gieok.mcp import tools
from gieok.mcp.browser_guard import BrowserGuard
from gieok.mcp.http_routes import register_http_routes
from gieok.mcp.ops_http import MetricsMiddleware
from gieok.mcp.prompts import register_prompts
from gieok.mcp.resources import register_resources
from gieok.mcp.state import GieokMCP, ServiceSlot
from gieok.memory.service import MemoryService
from gieok.ui import mount_dashboard

INSTRUCTIONS = """gieok is your long-term memory. At the start of a task call `load_context` (with the task as
`query`) to recall who the user is and what happened recently. When you need something from the past, call
`search_memory` (filters: p_tag, date_range like "3d" or "last week", role="user" for what the user said).
When the user asks you to remember something, call `manage_knowledge` with action="add"."""


def build_server(settings: Settings, *, run_librarian: bool | None = None) -> GieokMCP:
    slot = ServiceSlot()
    team = TeamAuth(settings)

    @asynccontextmanager
    async def lifespan(_: MCPServer[MemoryService]) -> AsyncIterator[MemoryService]:
        run_lib = settings.librarian if run_librarian is None else run_librarian
        async with open_service(settings, run_librarian=run_lib) as svc, anyio.create_task_group() as tg:
            team.open(svc.store)
            assert team.audit is not None
            tg.start_soon(team.audit.run)
            slot.open(svc)
            try:
                yield svc
            finally:
                slot.close()
                await team.authenticator.flush_usage()
                team.close()
                tg.cancel_scope.cancel()   # the audit writer flushes what is left as it stops

    auth = {"token_verifier": GieokTokenVerifier(team), "auth": auth_settings(team)} if team.enabled else {}
    mcp = GieokMCP("gieok", version=__version__, instructions=INSTRUCTIONS, lifespan=lifespan, **auth)  # type: ignore[arg-type]
    mcp.team = team
    for tool in (*tools.DEFAULT, *(tools.MEMENTO if settings.tools == "full" else ())):
        mcp.tool(description=tools.description(tool))(tool)
    register_resources(mcp)
    register_prompts(mcp)
    register_http_routes(mcp, slot, team)
    if settings.ui:
        mount_dashboard(mcp, slot, team, settings)
    return mcp


def check_exposure(settings: Settings) -> None:
    """Refuse to serve HTTP beyond loopback without authentication: anyone who can reach the port could
    read, change and erase every user's memory."""
    if settings.host.strip("[]") not in {h.strip("[]") for h in LOOPBACK} and not settings.auth_modes:
        raise ConfigError(
            f"refusing to serve on {settings.host} without authentication: anyone who can reach the port could "
            "read and erase every user's memory. Turn auth on: GIEOK_AUTH=apikey and create a key with "
            "`gieok keys create --user <you> --role admin` (or GIEOK_AUTH=jwt with GIEOK_JWT_ISSUER, "
            "GIEOK_JWT_AUDIENCE and GIEOK_JWT_JWKS_URL), or serve on 127.0.0.1.")


def build_http_app(mcp: GieokMCP, settings: Settings) -> ASGIApp:
    """The Streamable HTTP app with the browser guard (Host, Origin/Sec-Fetch-Site, Content-Type) and then the
    gate (body limit, authentication, rate limit) in front of every route, the dashboard's included, all inside
    the request metrics (so refusals are counted too). GIEOK_STATELESS_HTTP drops server-side MCP sessions, so
    replicas behind a round-robin load balancer can each answer any request."""
    check_exposure(settings)
    # Stateless replicas answer each call with one JSON body: there is no session for a server-sent stream to
    # belong to, gieok's tools send no progress notifications, and the SSE framing cost ~10 ms a call under load.
    app = mcp.streamable_http_app(stateless_http=settings.stateless_http, host=settings.host,
                                  json_response=settings.stateless_http)
    guarded = BrowserGuard(HttpGate(app, mcp.team), bind_host=settings.host, allowed_hosts=settings.allowed_hosts,
                           allowed_origins=settings.allowed_origins)
    return MetricsMiddleware(guarded, routes=app.routes)

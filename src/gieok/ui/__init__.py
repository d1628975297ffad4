"""The memory dashboard at /ui: server-rendered pages (Jinja2) with htmx shipped inside the package — no CDN,
nothing fetched at run time. `mount_dashboard` adds it to the MCP server's HTTP app.

Layer: beside `mcp`; it uses the service, the store's browsing Protocol, the librarian's state and the team
server's authenticator, audit log and admin acts (gieok.auth)."""

from __future__ import annotations

from typing import Any, cast

from mcp.server import MCPServer

from gieok.auth.team import TeamAuth
from gieok.core.settings import Settings
from gieok.ui.app import Dashboard, ServiceSource
from gieok.ui.routes import dashboard_app
from gieok.ui.session import load_secret

__all__ = ["Dashboard", "mount_dashboard"]


def mount_dashboard(mcp: MCPServer[Any], slot: ServiceSource, team: TeamAuth, settings: Settings) -> Dashboard:
    """Serve the dashboard at /ui of `mcp`'s HTTP app, signing people in with `team`'s authenticator (with auth
    off: loopback only, no sign-in)."""
    dash = Dashboard(settings, slot, team, secret=load_secret(settings.ui_secret, settings.home))
    app = dashboard_app(dash)
    # The SDK's custom routes take an endpoint; a Starlette app is an ASGI endpoint that routes the full path.
    endpoint = cast(Any, app)
    for path in ("/ui", "/ui/{rest:path}"):
        mcp.custom_route(path, methods=["GET", "HEAD", "POST"], include_in_schema=False)(endpoint)
    return dash

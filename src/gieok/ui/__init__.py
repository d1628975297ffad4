"""The memory dashboard at /ui: server-rendered pages (Jinja2) with htmx shipped inside the package — no CDN,
nothing fetched at run time. `mount_dashboard` adds it to the MCP server's HTTP app.

Layer: beside `mcp`; it uses the service, the store's browsing Protocol and the librarian's state."""

from __future__ import annotations

from typing import Any, cast

from mcp.server import MCPServer

from gieok.core.settings import Settings
from gieok.ui.app import Dashboard, ServiceSource
from gieok.ui.audit import AuditSink
from gieok.ui.principal import CredentialVerifier, Principal
from gieok.ui.routes import dashboard_app
from gieok.ui.session import load_secret

__all__ = ["CredentialVerifier", "Dashboard", "Principal", "mount_dashboard"]


def mount_dashboard(mcp: MCPServer[Any], slot: ServiceSource, settings: Settings, *,
                    verifier: CredentialVerifier | None = None, audit: AuditSink | None = None) -> Dashboard:
    """Serve the dashboard at /ui of `mcp`'s HTTP app. `verifier` None: auth off (loopback only)."""
    dash = Dashboard(settings, slot, secret=load_secret(settings.ui_secret, settings.home), verifier=verifier,
                     audit=audit)
    app = dashboard_app(dash)
    # The SDK's custom routes take an endpoint; a Starlette app is an ASGI endpoint that routes the full path.
    endpoint = cast(Any, app)
    for path in ("/ui", "/ui/{rest:path}"):
        mcp.custom_route(path, methods=["GET", "HEAD", "POST"], include_in_schema=False)(endpoint)
    return dash

"""uvicorn for the Streamable HTTP app (gieok.mcp.server.build_http_app), with gieok's logging (text or JSON)
instead of uvicorn's own configuration."""

from __future__ import annotations

import uvicorn
from starlette.types import ASGIApp

from gieok.core.settings import Settings


def run_http(app: ASGIApp, settings: Settings) -> None:
    # log_config=None: uvicorn's loggers go through the root handler gieok configured (its format, JSON or not);
    # "warning" keeps one access line per request out of the logs.
    config = uvicorn.Config(app, host=settings.host, port=settings.port, log_config=None, log_level="warning",
                            timeout_graceful_shutdown=10)
    uvicorn.Server(config).run()

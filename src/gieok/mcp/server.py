"""The MCP server (official SDK): its lifespan owns the service (store, embedder, librarian); tools, resources
and the prompt are registered from their own modules; the plain HTTP routes sit beside `/mcp`.

Errors are raised (ToolError → an MCP error result), never returned as ordinary text.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from mcp.server import MCPServer

from gieok import __version__
from gieok.app.runtime import open_service
from gieok.core.settings import Settings
from gieok.mcp import tools
from gieok.mcp.http_routes import register_http_routes
from gieok.mcp.prompts import register_prompts
from gieok.mcp.resources import register_resources
from gieok.mcp.state import ServiceSlot
from gieok.memory.service import MemoryService

INSTRUCTIONS = """gieok is your long-term memory. At the start of a task call `load_context` (with the task as
`query`) to recall who the user is and what happened recently. When you need something from the past, call
`search_memory` (filters: p_tag, date_range like "3d" or "last week", role="user" for what the user said).
When the user asks you to remember something, call `manage_knowledge` with action="add"."""


def build_server(settings: Settings, *, run_librarian: bool | None = None) -> MCPServer[MemoryService]:
    slot = ServiceSlot()

    @asynccontextmanager
    async def lifespan(_: MCPServer[MemoryService]) -> AsyncIterator[MemoryService]:
        run_lib = settings.librarian if run_librarian is None else run_librarian
        async with open_service(settings, run_librarian=run_lib) as svc:
            slot.open(svc)
            try:
                yield svc
            finally:
                slot.close()

    mcp: MCPServer[MemoryService] = MCPServer("gieok", version=__version__, instructions=INSTRUCTIONS,
                                              lifespan=lifespan)
    for tool in (*tools.DEFAULT, *(tools.MEMENTO if settings.tools == "full" else ())):
        mcp.tool(description=tools.description(tool))(tool)
    register_resources(mcp)
    register_prompts(mcp)
    register_http_routes(mcp, slot)
    return mcp

"""The service the lifespan opened, for the plain HTTP routes: Starlette routes do not get the MCP lifespan
context, so the lifespan publishes the service here and the routes answer 503 until it is open."""

from __future__ import annotations

from typing import Any

from mcp.server import MCPServer
from mcp.server.mcpserver.context import Context
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import ValidationError

from gieok.auth.team import TeamAuth
from gieok.mcp.arg_errors import argument_errors
from gieok.memory.service import MemoryService


class ServiceSlot:
    """Holds the running service between the lifespan's start and end (None before and after)."""

    __slots__ = ("_svc",)

    def __init__(self) -> None:
        self._svc: MemoryService | None = None

    def open(self, svc: MemoryService) -> None:
        self._svc = svc

    def close(self) -> None:
        self._svc = None

    @property
    def service(self) -> MemoryService | None:
        return self._svc


class GieokMCP(MCPServer[MemoryService]):
    """The MCP server with the team server's authenticator, limiter and audit log, which tools reach through
    `ctx.mcp_server` (their lifespan context is the memory service)."""

    team: TeamAuth

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Context[MemoryService, Any] | None = None) -> Any:
        # Arguments the tool's schema refuses are the caller's mistake to fix: named field by field, as every
        # other bad input is, instead of the SDK's pydantic dump.
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(argument_errors(name, exc.__cause__)) from exc.__cause__
            raise


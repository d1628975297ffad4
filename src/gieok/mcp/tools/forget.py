"""`forget` (memento set): soft (hidden) or hard (erased from every table, index and export)."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context
from pydantic import Field

from gieok.mcp.deps import identity, service, tool_errors


@tool_errors
async def forget(ctx: Context, id: str,
                 hard: Annotated[bool, Field(description="Erase from every table, index and export.")] = False
                 ) -> dict[str, Any]:
    """Forget a memory: soft (hidden, recoverable by an operator) or hard (erased everywhere)."""
    svc = service(ctx)
    return await svc.forget(id, identity(ctx, svc).user_id, hard=hard)

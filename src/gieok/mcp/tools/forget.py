"""`forget` (memento set): soft (hidden) or hard (erased from every table, index and export)."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context
from pydantic import Field

from gieok.mcp.caller import caller
from gieok.mcp.deps import service, tool_errors


@tool_errors
async def forget(ctx: Context, id: str,
                 hard: Annotated[bool, Field(description="Erase from every table, index and export.")] = False
                 ) -> dict[str, Any]:
    """Forget a memory: soft (hidden, recoverable by an operator) or hard (erased everywhere)."""
    svc = service(ctx)
    c = await caller(ctx, svc, "forget")
    c.require_write()
    out = await svc.forget(id, c.ident.user_id, hard=hard, viewer=c.principal)
    c.audit(memory_ids=[id], detail="hard" if hard else "soft")
    return out

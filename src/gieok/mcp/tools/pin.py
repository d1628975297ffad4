"""`pin` (memento set): always loaded into context, never archived."""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import Context

from gieok.mcp.caller import caller
from gieok.mcp.deps import service, tool_errors


@tool_errors
async def pin(ctx: Context, id: str) -> dict[str, Any]:
    """Pin a memory: always loaded into context and never archived."""
    svc = service(ctx)
    c = await caller(ctx, svc, "pin")
    c.require_write()
    m = await svc.set_pinned(id, c.ident.user_id, True, viewer=c.principal)
    c.audit(memory_ids=[m.id])
    return {"id": m.id, "is_pinned": m.is_pinned}

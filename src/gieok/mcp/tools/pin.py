"""`pin` (memento set): always loaded into context, never archived."""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import Context

from gieok.mcp.deps import identity, service, tool_errors


@tool_errors
async def pin(ctx: Context, id: str) -> dict[str, Any]:
    """Pin a memory: always loaded into context and never archived."""
    svc = service(ctx)
    m = await svc.set_pinned(id, identity(ctx, svc).user_id, True)
    return {"id": m.id, "is_pinned": m.is_pinned}

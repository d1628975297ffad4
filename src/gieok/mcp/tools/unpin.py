"""`unpin` (memento set): the memory ages and may be archived like any other."""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import Context

from gieok.mcp.deps import identity, service, tool_errors


@tool_errors
async def unpin(ctx: Context, id: str) -> dict[str, Any]:
    """Unpin a memory."""
    svc = service(ctx)
    m = await svc.set_pinned(id, identity(ctx, svc).user_id, False)
    return {"id": m.id, "is_pinned": m.is_pinned}

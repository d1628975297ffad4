"""`unpin` (memento set): the memory ages and may be archived like any other."""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import Context

from gieok.mcp.caller import caller
from gieok.mcp.deps import service, tool_errors


@tool_errors
async def unpin(ctx: Context, id: str) -> dict[str, Any]:
    """Unpin a memory."""
    svc = service(ctx)
    c = await caller(ctx, svc, "unpin")
    c.require_write()
    m = await svc.set_pinned(id, c.ident.user_id, False, viewer=c.principal)
    c.audit(memory_ids=[m.id])
    return {"id": m.id, "is_pinned": m.is_pinned}

"""`link` (memento set): a typed relation between two memories."""

from __future__ import annotations

from typing import Any, Literal

from mcp.server.mcpserver import Context

from gieok.mcp.caller import caller
from gieok.mcp.deps import service, tool_errors


@tool_errors
async def link(ctx: Context, src: str, dst: str,
               rel: Literal["cause_of", "derived_from", "duplicates", "contradicts", "supersedes"]
               ) -> dict[str, Any]:
    """Link two of your memories with a relation."""
    svc = service(ctx)
    c = await caller(ctx, svc, "link")
    c.require_write()
    out = await svc.link(src, dst, rel, c.ident.user_id, viewer=c.principal)
    c.audit(memory_ids=[src, dst], detail=rel)
    return out

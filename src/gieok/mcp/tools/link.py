"""`link` (memento set): a typed relation between two memories."""

from __future__ import annotations

from typing import Any, Literal

from mcp.server.mcpserver import Context

from gieok.mcp.deps import identity, service, tool_errors


@tool_errors
async def link(ctx: Context, src: str, dst: str,
               rel: Literal["cause_of", "derived_from", "duplicates", "contradicts", "supersedes"]
               ) -> dict[str, Any]:
    """Link two memories with a relation."""
    svc = service(ctx)
    return await svc.link(src, dst, rel, identity(ctx, svc).user_id)

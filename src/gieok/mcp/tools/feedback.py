"""`feedback` (memento set): whether a result helped; it shapes future ranking."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context
from pydantic import Field

from gieok.core.errors import InvalidInput
from gieok.mcp.caller import caller
from gieok.mcp.deps import service, tool_errors


@tool_errors
async def feedback(ctx: Context, memory_id: str,
                   helpful: Annotated[bool | None, Field(description="Was it helpful?")] = None,
                   event: Annotated[str | None, Field(description="used | cited | edited | neglected | helpful "
                                                                  "| not_helpful")] = None) -> dict[str, Any]:
    """Tell the memory whether a result helped (it shapes future ranking)."""
    if event is None and helpful is None:
        raise InvalidInput("helpful", "pass helpful=true/false or an event")
    ev = event or ("helpful" if helpful else "not_helpful")
    svc = service(ctx)
    c = await caller(ctx, svc, "feedback")
    c.require_write()
    out = await svc.feedback(memory_id, c.ident.user_id, ev, viewer=c.principal)
    c.audit(memory_ids=[memory_id], detail=ev)
    return out

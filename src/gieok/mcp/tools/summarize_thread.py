"""`summarize_thread` (memento set): one session summarised into a semantic memory linked to its turns."""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import Context

from gieok.core.errors import InvalidInput
from gieok.core.limits import check_label
from gieok.mcp.caller import caller
from gieok.mcp.deps import service, tool_errors


@tool_errors
async def summarize_thread(ctx: Context, session_id: str) -> dict[str, Any]:
    """Summarise one of your sessions into a semantic memory linked derived_from its turns."""
    svc = service(ctx)
    session_id = check_label("session_id", session_id)
    c = await caller(ctx, svc, "summarize_thread")
    c.require_write()
    if svc.processor is None:
        raise InvalidInput("session_id", "summaries need the librarian, which is not running in this server")
    out = dict(await svc.processor.summarize_thread(c.ident.user_id, session_id))
    c.audit(memory_ids=[str(out.get("id", ""))], detail=f"session {session_id}")
    return out

"""`summarize_thread` (memento set): one session summarised into a semantic memory linked to its turns."""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import Context

from gieok.core.errors import InvalidInput
from gieok.mcp.deps import identity, service, tool_errors


@tool_errors
async def summarize_thread(ctx: Context, session_id: str) -> dict[str, Any]:
    """Summarise one session into a semantic memory linked derived_from its turns."""
    svc = service(ctx)
    if svc.processor is None:
        raise InvalidInput("session_id", "summaries need the librarian, which is not running in this server")
    return dict(await svc.processor.summarize_thread(identity(ctx, svc).user_id, session_id))

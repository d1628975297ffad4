"""`export` (memento set): this user's memories as ndjson, markdown or csv."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from pydantic import Field

from gieok.mcp.deps import identity, service, tool_errors
from gieok.memory.export import export_text


@tool_errors
async def export(ctx: Context, format: Literal["ndjson", "markdown", "csv"] = "ndjson",
                 limit: Annotated[int, Field(ge=1, le=100000)] = 1000) -> dict[str, Any]:
    """Export this user's memories as ndjson, markdown or csv."""
    svc = service(ctx)
    text, n = await export_text(svc.store, identity(ctx, svc).user_id, format, limit=limit)
    return {"format": format, "count": n, "data": text}

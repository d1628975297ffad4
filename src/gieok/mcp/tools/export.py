"""`export` (memento set): this user's own memories as ndjson, markdown or csv (shared memories of others stay
theirs to export)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from pydantic import Field

from gieok.mcp.caller import caller
from gieok.mcp.deps import service, tool_errors
from gieok.memory.export import export_text


@tool_errors
async def export(ctx: Context, format: Literal["ndjson", "markdown", "csv"] = "ndjson",
                 limit: Annotated[int, Field(ge=1, le=100000)] = 1000) -> dict[str, Any]:
    """Export your own memories as ndjson, markdown or csv."""
    svc = service(ctx)
    c = await caller(ctx, svc, "export")
    text, n = await export_text(svc.store, c.ident.user_id, format, limit=limit)
    if c.principal.acting_for:
        c.audit(detail=f"export {n} rows")
    return {"format": format, "count": n, "data": text}

"""`recall` (memento set): memories relevant to a query, ranked as `search_memory` ranks them."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context
from pydantic import Field

from gieok.mcp.caller import caller
from gieok.mcp.deps import service, tool_errors


@tool_errors
async def recall(
    ctx: Context,
    query: Annotated[str, Field(description="What to recall.")],
    limit: Annotated[int, Field(ge=1, le=100)] = 10,
    date_range: str | None = None,
    kind: str | None = None,
) -> dict[str, Any]:
    """Recall memories relevant to a query (same ranking and visibility as search_memory)."""
    svc = service(ctx)
    c = await caller(ctx, svc, "recall")
    f = svc.filters(c.ident.user_id, date_range=date_range, kind=kind, viewer=c.principal)
    out = await svc.search(f, query, limit=limit)
    c.audit_reads(m for h in out.hits for m in h.memories())
    return {"results": [h.to_dict(max_chars=2000) for h in out.hits], "mode": out.mode}

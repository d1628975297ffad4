"""`recall` (memento set): memories relevant to a query, ranked as `search_memory` ranks them."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context
from pydantic import Field

from gieok.mcp.deps import identity, service, tool_errors


@tool_errors
async def recall(
    ctx: Context,
    query: Annotated[str, Field(description="What to recall.")],
    limit: Annotated[int, Field(ge=1, le=100)] = 10,
    date_range: str | None = None,
    kind: str | None = None,
) -> dict[str, Any]:
    """Recall memories relevant to a query (same ranking as search_memory)."""
    svc = service(ctx)
    f = svc.filters(identity(ctx, svc).user_id, date_range=date_range, kind=kind)
    out = await svc.search(f, query, limit=limit)
    return {"results": [h.to_dict(max_chars=2000) for h in out.hits], "mode": out.mode}

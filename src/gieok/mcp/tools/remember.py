"""`remember` (memento set): an explicit memory, pinned, tagged and embedded at once."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context
from pydantic import Field

from gieok.mcp.deps import explicit_message, identity, service, tool_errors


@tool_errors
async def remember(
    ctx: Context,
    content: Annotated[str, Field(description="What to remember.")],
    kind: Annotated[str, Field(description="working | episodic | semantic | procedural")] = "semantic",
    importance: Annotated[float, Field(ge=0, le=1)] = 0.8,
    tags: list[str] | None = None,
    title: str | None = None,
) -> dict[str, Any]:
    """Remember something explicitly (pinned; tagged and embedded at once)."""
    svc = service(ctx)
    res = await svc.remember(explicit_message(identity(ctx, svc), content, kind=kind, importance=importance,
                                              tags=tags, title=title))
    return dict(res.to_dict())

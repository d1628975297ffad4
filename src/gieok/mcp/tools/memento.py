"""The memento tool set (GIEOK_TOOLS=full): remember, recall, pin, unpin, forget, link, export, feedback,
summarize_thread."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from pydantic import Field

from gieok.core.errors import InvalidInput
from gieok.memory.service import MemoryService


def register(mcp: MCPServer[MemoryService], service: Callable[[Context], MemoryService],
             identity: Callable[..., Any], tool_errors: Callable[..., Any], message: Callable[..., Any],
             export_text: Callable[..., Any]) -> None:

    @mcp.tool()
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
        res = await svc.remember(message(identity(ctx, svc), content, kind=kind, importance=importance, tags=tags,
                                         title=title))
        return dict(res.to_dict())

    @mcp.tool()
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

    @mcp.tool()
    @tool_errors
    async def pin(ctx: Context, id: str) -> dict[str, Any]:
        """Pin a memory: always loaded into context and never archived."""
        svc = service(ctx)
        m = await svc.set_pinned(id, identity(ctx, svc).user_id, True)
        return {"id": m.id, "is_pinned": m.is_pinned}

    @mcp.tool()
    @tool_errors
    async def unpin(ctx: Context, id: str) -> dict[str, Any]:
        """Unpin a memory."""
        svc = service(ctx)
        m = await svc.set_pinned(id, identity(ctx, svc).user_id, False)
        return {"id": m.id, "is_pinned": m.is_pinned}

    @mcp.tool()
    @tool_errors
    async def forget(ctx: Context, id: str,
                     hard: Annotated[bool, Field(description="Erase from every table, index and export.")] = False
                     ) -> dict[str, Any]:
        """Forget a memory: soft (hidden, recoverable by an operator) or hard (erased everywhere)."""
        svc = service(ctx)
        return await svc.forget(id, identity(ctx, svc).user_id, hard=hard)

    @mcp.tool()
    @tool_errors
    async def link(ctx: Context, src: str, dst: str,
                   rel: Literal["cause_of", "derived_from", "duplicates", "contradicts", "supersedes"]
                   ) -> dict[str, Any]:
        """Link two memories with a relation."""
        svc = service(ctx)
        return await svc.link(src, dst, rel, identity(ctx, svc).user_id)

    @mcp.tool()
    @tool_errors
    async def export(ctx: Context, format: Literal["ndjson", "markdown", "csv"] = "ndjson",
                     limit: Annotated[int, Field(ge=1, le=100000)] = 1000) -> dict[str, Any]:
        """Export this user's memories as ndjson, markdown or csv."""
        svc = service(ctx)
        text, n = await export_text(svc.store, identity(ctx, svc).user_id, format, limit=limit)
        return {"format": format, "count": n, "data": text}

    @mcp.tool()
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
        return await svc.feedback(memory_id, identity(ctx, svc).user_id, ev)

    @mcp.tool()
    @tool_errors
    async def summarize_thread(ctx: Context, session_id: str) -> dict[str, Any]:
        """Summarise one session into a semantic memory linked derived_from its turns."""
        svc = service(ctx)
        if svc.processor is None:
            raise InvalidInput("session_id", "summaries need the librarian, which is not running in this server")
        return dict(await svc.processor.summarize_thread(identity(ctx, svc).user_id, session_id))

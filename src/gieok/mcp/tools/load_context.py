"""`load_context`: the block a session starts with, within a token budget."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context
from pydantic import Field

from gieok.mcp.caller import caller
from gieok.mcp.deps import service, tool_errors
from gieok.memory.context import load_context as build_context


@tool_errors
async def load_context(
    ctx: Context,
    query: Annotated[str | None, Field(description="The task at hand: adds memories relevant to it.")] = None,
    project: Annotated[str | None, Field(description="Project (p_tag) to include collaborators' "
                                                     "memory of.")] = None,
    token_budget: Annotated[int | None, Field(ge=100, le=200000, description="Max tokens "
                                              "(chars/1.7).")] = None,
) -> dict[str, Any]:
    """The context to start a session with: the user's profile, pinned memories, recent memory of this
    agent and project, memories relevant to the query, and due reviews, within a token budget."""
    svc = service(ctx)
    c = await caller(ctx, svc, "load_context", project=project)
    block = await build_context(svc, c.ident, project=project, query=query, token_budget=token_budget,
                                viewer=c.principal)
    c.audit_shared(block.sections)
    return block.to_dict()

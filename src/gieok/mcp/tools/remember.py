"""`remember` (memento set): an explicit memory, pinned, tagged and embedded at once."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from pydantic import Field

from gieok.mcp.caller import caller
from gieok.mcp.deps import explicit_message, service, tool_errors


@tool_errors
async def remember(
    ctx: Context,
    content: Annotated[str, Field(description="What to remember.")],
    kind: Annotated[str, Field(description="working | episodic | semantic | procedural")] = "semantic",
    importance: Annotated[float, Field(ge=0, le=1)] = 0.8,
    tags: list[str] | None = None,
    title: str | None = None,
    privacy_scope: Annotated[Literal["private", "team", "public"] | None,
                             Field(description="Who may read it: private (default), team, public.")] = None,
    team: Annotated[str | None, Field(description="The team to share with (privacy_scope=team).")] = None,
    files: Annotated[list[str] | None, Field(description="Files it is about ('billing/retry.py', "
                                                         "'src/app.ts:10-20'): flagged possibly stale when "
                                                         "they change.")] = None,
    repo: Annotated[str | None, Field(description="The repository directory `files` are relative to.")] = None,
) -> dict[str, Any]:
    """Remember something explicitly (pinned; tagged and embedded at once). private by default; team or public
    shares it."""
    svc = service(ctx)
    c = await caller(ctx, svc, "remember")
    c.require_write()
    scope = svc.check_scope(c.principal, privacy_scope, team)
    res = await svc.remember(explicit_message(c.ident, content, kind=kind, importance=importance,
                                              tags=tags, title=title, scope=scope), files=files, repo=repo)
    c.audit(memory_ids=[res.id], detail=f"scope={scope[0] if scope else 'private'}")
    return dict(res.to_dict())

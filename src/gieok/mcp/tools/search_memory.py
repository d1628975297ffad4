"""`search_memory`: hybrid semantic + keyword search with the full ranking and every filter."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from pydantic import Field

from gieok.mcp.caller import caller
from gieok.mcp.deps import service, tool_errors


@tool_errors
async def search_memory(
    ctx: Context,
    query: Annotated[str | None, Field(description="What to find, in any language. Omit to list the "
                                                   "newest memories matching the filters.")] = None,
    p_tag: Annotated[str | None, Field(description="Only this project tag.")] = None,
    date_range: Annotated[str | None, Field(description="ISO date or range (2026-11-01..2026-11-30), "
                                                        "'3d', '2w', 'yesterday', 'last week', 'last Friday', "
                                                        "'지난주', '지지난주', '3일 전'.")] = None,
    role: Annotated[str | None, Field(description="user | assistant | system | tool (comma-separated). "
                                                  "Use 'user' for what the user said.")] = None,
    kind: Annotated[str | None, Field(description="working | episodic | semantic | procedural")] = None,
    tags: Annotated[list[str] | None, Field(description="Topic tags that must all be present.")] = None,
    limit: Annotated[int, Field(ge=1, le=100, description="How many results.")] = 10,
    include_archived: Annotated[bool, Field(description="Also search archived (old) memory.")] = False,
    platform: Annotated[str | None, Field(description="Only memories of this agent platform.")] = None,
    model: Annotated[str | None, Field(description="Only memories of this agent model.")] = None,
    subagent_role: Annotated[str | None, Field(description="Only this subagent role.")] = None,
    session_id: Annotated[str | None, Field(description="Only this session.")] = None,
    file: Annotated[str | None, Field(description="Only memories about this file: a path or its end "
                                                  "('billing/retry.py', 'retry.py').")] = None,
    repo: Annotated[str | None, Field(description="Only memories about files of this repository (name, "
                                                  "root path or remote URL).")] = None,
    stale: Annotated[Literal["only", "exclude"] | None, Field(description="only: memories whose files changed "
                                                                         "since they were written; exclude: leave "
                                                                         "those out.")] = None,
) -> dict[str, Any]:
    """Search long-term memory (semantic + keyword) with optional filters: your own memories, your teams'
    shared ones and public ones. Each result has its score parts, a recall_reason (a keyword match names the
    words it shares with your query: judge a result shown for a word alone by that word) and its owner; a line said
    more than once is one result with repeated (how many times, first and last); memories about code list
    their files and, when those changed since, possibly_stale with the reason. Paste an
    error or stack trace as the query to find the turns that saw the same error first, with the answer that
    followed (fixed_by)."""
    svc = service(ctx)
    c = await caller(ctx, svc, "search_memory")
    f = svc.filters(c.ident.user_id, role=role, kind=kind, p_tag=p_tag, tags=tags, date_range=date_range,
                    include_archived=include_archived, platform=platform, model=model,
                    subagent_role=subagent_role, session_id=session_id, viewer=c.principal, file=file, repo=repo,
                    stale=stale)
    out = await svc.search(f, query, limit=limit)
    c.audit_reads(m for h in out.hits for m in h.memories())
    return {"results": [h.to_dict(max_chars=2000) for h in out.hits], "mode": out.mode, "notes": out.notes}

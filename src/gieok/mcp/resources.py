"""MCP resources: `memory://search?query=…` (a read-only view of a search, for clients that preview resources),
`memory://{id}` (one memory the caller may see) and `profile://{user_id}` (the caller's profile, `profile://me`;
an admin may read another user's, audited)."""

from __future__ import annotations

import json

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ResourceError
from mcp.server.mcpserver.resources.templates import ResourceSecurity

from gieok.core.errors import GieokError, InvalidInput
from gieok.mcp.caller import caller
from gieok.mcp.deps import service
from gieok.memory.service import MemoryService

# search_memory's filters, as query parameters (percent-encoded; order free, all optional; tags comma-separated).
SEARCH_PARAMS = ("query", "p_tag", "date_range", "role", "kind", "tags", "limit", "include_archived", "platform",
                 "model", "subagent_role", "session_id")
SEARCH_TEMPLATE = "memory://search{?" + ",".join(SEARCH_PARAMS) + "}"


async def search_resource(ctx: Context, query: str = "", p_tag: str = "", date_range: str = "", role: str = "",
                          kind: str = "", tags: str = "", limit: int = 10, include_archived: bool = False,
                          platform: str = "", model: str = "", subagent_role: str = "",
                          session_id: str = "") -> str:
    svc = service(ctx)
    try:
        c = await caller(ctx, svc, "resource memory_search")
        if not 1 <= limit <= 100:
            raise InvalidInput("limit", f"{limit} is outside 1..100")
        f = svc.filters(c.ident.user_id, role=role or None, kind=kind or None, p_tag=p_tag or None,
                        tags=[t.strip() for t in tags.split(",") if t.strip()] or None, date_range=date_range or None,
                        include_archived=include_archived, platform=platform or None, model=model or None,
                        subagent_role=subagent_role or None, session_id=session_id or None, viewer=c.principal)
        out = await svc.search(f, query or None, limit=limit)
    except GieokError as exc:
        raise ResourceError(str(exc)) from exc
    c.audit_reads(m for h in out.hits for m in h.memories())
    return json.dumps({"query": query, "mode": out.mode, "notes": out.notes,
                       "results": [h.to_dict(max_chars=2000) for h in out.hits]}, ensure_ascii=False)


async def memory_resource(memory_id: str, ctx: Context) -> str:
    svc = service(ctx)
    try:
        c = await caller(ctx, svc, "resource memory")
        # Read by id: an explicit open, counted as a view.
        m = await svc.open(memory_id, c.ident.user_id, viewer=c.principal)
    except GieokError as exc:
        raise ResourceError(str(exc)) from exc
    c.audit_reads([m])
    return json.dumps(m.to_dict(), ensure_ascii=False)


async def profile_resource(user_id: str, ctx: Context) -> str:
    svc = service(ctx)
    try:
        # profile://<someone> is an admin acting for them (refused, and audited, for anyone else).
        c = await caller(ctx, svc, "resource profile", **({} if user_id == "me" else {"user_id": user_id}))
    except GieokError as exc:
        raise ResourceError(str(exc)) from exc
    me = c.ident.user_id
    if user_id not in ("me", me):
        raise ResourceError(f"profile://{user_id} is not yours to read; use profile://me")
    prof = await svc.profile(me)
    return json.dumps({"user_id": prof.user_id, "core_profile": prof.core_profile,
                       "sub_profile": prof.sub_profile}, ensure_ascii=False)


def register_resources(mcp: MCPServer[MemoryService]) -> None:
    # Before memory://{memory_id}, so that template never sees a search URI. The query is free text, not a
    # path: the SDK's path-safety checks (a leading "/", "..") do not apply to it.
    mcp.resource(SEARCH_TEMPLATE, name="memory_search",
                 description="A read-only view of a search: memory://search?query=… with search_memory's filters "
                 "as query parameters (p_tag, date_range, role, kind, tags comma-separated, limit, "
                 "include_archived, platform, model, subagent_role, session_id), percent-encoded.",
                 mime_type="application/json",
                 security=ResourceSecurity(exempt_params=frozenset(SEARCH_PARAMS)))(search_resource)
    mcp.resource("memory://{memory_id}", name="memory", description="One memory by id.",
                 mime_type="application/json")(memory_resource)
    mcp.resource("profile://{user_id}", name="profile", description="A user's core and sub profile "
                 "(profile://me for the caller).", mime_type="application/json")(profile_resource)

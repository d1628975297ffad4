"""MCP resources: `memory://{id}` (one memory the caller may see) and `profile://{user_id}` (the caller's
profile, `profile://me`; an admin may read another user's, audited)."""

from __future__ import annotations

import json

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ResourceError

from gieok.core.errors import GieokError
from gieok.mcp.caller import caller
from gieok.mcp.deps import service
from gieok.memory.service import MemoryService


async def memory_resource(memory_id: str, ctx: Context) -> str:
    svc = service(ctx)
    try:
        c = await caller(ctx, svc, "resource memory")
        m = await svc.get(memory_id, c.ident.user_id, viewer=c.principal)
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
    mcp.resource("memory://{memory_id}", name="memory", description="One memory by id.",
                 mime_type="application/json")(memory_resource)
    mcp.resource("profile://{user_id}", name="profile", description="A user's core and sub profile "
                 "(profile://me for the caller).", mime_type="application/json")(profile_resource)

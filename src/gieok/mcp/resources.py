"""MCP resources: `memory://{id}` (one memory) and `profile://{user_id}` (the caller's profile, `profile://me`)."""

from __future__ import annotations

import json

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ResourceError

from gieok.core.errors import GieokError
from gieok.mcp.deps import identity, service
from gieok.memory.service import MemoryService


async def memory_resource(memory_id: str, ctx: Context) -> str:
    svc = service(ctx)
    ident = identity(ctx, svc)
    try:
        m = await svc.get(memory_id, ident.user_id)
    except GieokError as exc:
        raise ResourceError(str(exc)) from exc
    return json.dumps(m.to_dict(), ensure_ascii=False)


async def profile_resource(user_id: str, ctx: Context) -> str:
    svc = service(ctx)
    me = identity(ctx, svc).user_id
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

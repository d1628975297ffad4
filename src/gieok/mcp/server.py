"""The MCP server (official SDK): tools, resources, the memory_injection prompt, and the HTTP capture endpoint.

Few tools with rich parameters (agents use one or two tools well and ignore the rest): `search_memory`,
`manage_knowledge`, `load_context`; the memento set is added with GIEOK_TOOLS=full.
Errors are raised (ToolError → an MCP error result), never returned as ordinary text.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Annotated, Any, Literal, ParamSpec, TypeVar, cast

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.mcpserver.prompts.base import UserMessage
from pydantic import Field

from gieok import __version__
from gieok.app.runtime import open_service
from gieok.core.errors import GieokError, InvalidInput
from gieok.core.models import Identity
from gieok.core.settings import Settings
from gieok.mcp.http_routes import register_http_api
from gieok.mcp.identity import resolve_identity
from gieok.memory.context import load_context as build_context
from gieok.memory.export import export_text
from gieok.memory.ingest import MessageIn
from gieok.memory.service import MemoryService

log = logging.getLogger(__name__)
P = ParamSpec("P")
R = TypeVar("R")

INSTRUCTIONS = """gieok is your long-term memory. At the start of a task call `load_context` (with the task as
`query`) to recall who the user is and what happened recently. When you need something from the past, call
`search_memory` (filters: p_tag, date_range like "3d" or "last week", role="user" for what the user said).
When the user asks you to remember something, call `manage_knowledge` with action="add"."""


def _tool_errors(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """Our errors become MCP tool errors with their message (which says how to fix the call)."""
    @functools.wraps(fn)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await fn(*args, **kwargs)
        except GieokError as exc:
            raise ToolError(str(exc)) from exc
    return wrapper


def build_server(settings: Settings, *, run_librarian: bool | None = None) -> MCPServer[MemoryService]:
    holder: dict[str, MemoryService] = {}

    @asynccontextmanager
    async def lifespan(_: MCPServer[MemoryService]) -> AsyncIterator[MemoryService]:
        run_lib = settings.librarian if run_librarian is None else run_librarian
        async with open_service(settings, run_librarian=run_lib) as svc:
            holder["svc"] = svc
            try:
                yield svc
            finally:
                holder.pop("svc", None)

    mcp: MCPServer[MemoryService] = MCPServer("gieok", version=__version__, instructions=INSTRUCTIONS,
                                              lifespan=lifespan)

    def service(ctx: Context) -> MemoryService:
        return cast(MemoryService, ctx.request_context.lifespan_context)

    def identity(ctx: Context, svc: MemoryService, **args: Any) -> Identity:
        client = None
        try:
            params = ctx.request_context.session.client_params
            client = params.client_info.name if params and params.client_info else None
        except Exception:  # stateless requests may carry no initialize info
            client = None
        return resolve_identity(svc.default_identity(), headers=ctx.headers, client_name=client, args=args)

    # --- the default tool set ---------------------------------------------------------------------------
    @mcp.tool()
    @_tool_errors
    async def search_memory(
        ctx: Context,
        query: Annotated[str | None, Field(description="What to find, in any language. Omit to list the "
                                                       "newest memories matching the filters.")] = None,
        p_tag: Annotated[str | None, Field(description="Only this project tag.")] = None,
        date_range: Annotated[str | None, Field(description="ISO date or range (2026-11-01..2026-11-30), "
                                                            "'3d', '2w', 'yesterday', 'last week', '지난주'.")] = None,
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
    ) -> dict[str, Any]:
        """Search long-term memory (semantic + keyword) with optional filters. Each result has its score parts
        and a recall_reason."""
        svc = service(ctx)
        ident = identity(ctx, svc)
        f = svc.filters(ident.user_id, role=role, kind=kind, p_tag=p_tag, tags=tags, date_range=date_range,
                        include_archived=include_archived, platform=platform, model=model,
                        subagent_role=subagent_role, session_id=session_id)
        out = await svc.search(f, query, limit=limit)
        return {"results": [h.to_dict(max_chars=2000) for h in out.hits], "mode": out.mode, "notes": out.notes}

    @mcp.tool()
    @_tool_errors
    async def manage_knowledge(
        ctx: Context,
        action: Annotated[Literal["add", "update", "remove", "pin", "unpin"], Field(description="What to do.")],
        target: Annotated[Literal["memory", "sub_profile", "core_profile"],
                          Field(description="A memory, or a fact of the user's profile.")] = "memory",
        content: Annotated[str | None, Field(description="Text to remember (add/update), or the profile fact "
                                                         "to remove.")] = None,
        id: Annotated[str | None, Field(description="Memory id (update/remove/pin/unpin).")] = None,
        importance: Annotated[float | None, Field(ge=0, le=1, description="0..1")] = None,
        kind: Annotated[str | None, Field(description="working | episodic | semantic | procedural")] = None,
        tags: Annotated[list[str] | None, Field(description="Topic tags.")] = None,
        title: Annotated[str | None, Field(description="Short title.")] = None,
        key: Annotated[str | None, Field(description="Profile fact key (name, role, preference, …).")] = None,
        hard: Annotated[bool, Field(description="remove: erase everywhere instead of a soft forget.")] = False,
    ) -> dict[str, Any]:
        """Store, change or forget knowledge. action=add on target=memory stores an explicit memory: pinned
        (never archived), tagged and embedded at once; the answer says {stored, tagged, embedded}."""
        svc = service(ctx)
        ident = identity(ctx, svc)
        if target != "memory":
            prof = await svc.profile_edit(ident.user_id, target, action if action in ("add", "update", "remove")
                                          else _bad_profile_action(action), content, key)
            return {"target": target, "core_profile": prof.core_profile, "sub_profile": prof.sub_profile}
        if action == "add":
            if not content:
                raise InvalidInput("content", "is required for action=add")
            res = await svc.remember(_message(ident, content, kind=kind, importance=importance, tags=tags,
                                              title=title))
            return res.to_dict()
        if not id:
            raise InvalidInput("id", f"is required for action={action}")
        if action == "update":
            m = await svc.update(id, ident.user_id, content=content, importance=importance, kind=kind, tags=tags,
                                 title=title)
            return {"id": m.id, "updated": True, "tagged": m.tag_status, "embedded": m.embed_status}
        if action == "remove":
            return await svc.forget(id, ident.user_id, hard=hard)
        m = await svc.set_pinned(id, ident.user_id, action == "pin")
        return {"id": m.id, "is_pinned": m.is_pinned}

    @mcp.tool()
    @_tool_errors
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
        ident = identity(ctx, svc, project=project)
        block = await build_context(svc, ident, project=project, query=query, token_budget=token_budget)
        return block.to_dict()

    if settings.tools == "full":
        _register_memento_tools(mcp, service, identity)

    # --- resources and the prompt -----------------------------------------------------------------------
    @mcp.resource("memory://{memory_id}", name="memory", description="One memory by id.",
                  mime_type="application/json")
    async def memory_resource(memory_id: str, ctx: Context) -> str:
        svc = service(ctx)
        ident = identity(ctx, svc)
        try:
            m = await svc.get(memory_id, ident.user_id)
        except GieokError as exc:
            raise ResourceError(str(exc)) from exc
        return json.dumps(m.to_dict(), ensure_ascii=False)

    @mcp.resource("profile://{user_id}", name="profile", description="A user's core and sub profile "
                  "(profile://me for the caller).", mime_type="application/json")
    async def profile_resource(user_id: str, ctx: Context) -> str:
        svc = service(ctx)
        me = identity(ctx, svc).user_id
        if user_id not in ("me", me):
            raise ResourceError(f"profile://{user_id} is not yours to read; use profile://me")
        prof = await svc.profile(me)
        return json.dumps({"user_id": prof.user_id, "core_profile": prof.core_profile,
                           "sub_profile": prof.sub_profile}, ensure_ascii=False)

    @mcp.prompt(description="Memory to inject before answering: profile, pinned, recent and relevant memories.")
    async def memory_injection(query: str, ctx: Context, token_budget: int = 2000) -> list[UserMessage]:
        svc = service(ctx)
        block = await build_context(svc, identity(ctx, svc), query=query, token_budget=int(token_budget))
        return [UserMessage(f"Relevant memory (from gieok):\n\n{block.text}")]

    register_http_api(mcp, holder)
    return mcp


def _bad_profile_action(action: str) -> Literal["add"]:
    raise InvalidInput("action", f"{action!r} does not apply to a profile: use add, update or remove")


def _message(ident: Identity, content: str, *, kind: str | None = None, importance: float | None = None,
             tags: list[str] | None = None, title: str | None = None, role: str = "user") -> MessageIn:
    return MessageIn(content=content, user_id=ident.user_id, role=role, kind=kind or "semantic",
                     importance=0.8 if importance is None else importance, d_tags=list(tags or []),
                     title=title or "", agent_platform=ident.agent_platform, agent_model=ident.agent_model,
                     subagent_role=ident.subagent_role, subagent_model=ident.subagent_model,
                     session_id=ident.session_id, project=ident.project, source="manual")


def _register_memento_tools(mcp: MCPServer[MemoryService], service: Callable[[Context], MemoryService],
                            identity: Callable[..., Identity]) -> None:
    from gieok.mcp.tools.memento import register
    register(mcp, service, identity, _tool_errors, _message, export_text)

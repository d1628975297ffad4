"""What every tool, resource and prompt takes from its request: the service the lifespan opened, the caller's
identity, and the one place where our errors become MCP errors."""

from __future__ import annotations

import functools
import time
from collections.abc import Awaitable, Callable
from typing import Any, ParamSpec, TypeVar, cast

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError

from gieok.core.errors import AuthError, GieokError
from gieok.core.metrics import TOOL_CALLS, TOOL_LATENCY
from gieok.core.models import Identity
from gieok.mcp.caller import current
from gieok.mcp.identity import resolve_identity
from gieok.memory.ingest import MessageIn
from gieok.memory.service import MemoryService

P = ParamSpec("P")
R = TypeVar("R")


def tool_errors(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """Our errors become MCP tool errors with their message (which says how to fix the call): a tool never
    returns an error as ordinary text. Every call is counted and timed per tool (gieok.core.metrics)."""
    name = fn.__name__
    latency = TOOL_LATENCY.labels(name)

    @functools.wraps(fn)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        t0 = time.perf_counter()
        outcome = "error"
        try:
            result = await fn(*args, **kwargs)
            outcome = "ok"
            return result
        except AuthError as exc:
            outcome = "denied"
            c = current.get()
            if c is not None:
                c.audit(outcome="denied", detail=str(exc)[:300])
            raise ToolError(str(exc)) from exc
        except GieokError as exc:
            raise ToolError(str(exc)) from exc
        finally:
            latency.observe(time.perf_counter() - t0)
            TOOL_CALLS.labels(name, outcome).inc()
    return wrapper


def service(ctx: Context) -> MemoryService:
    return cast(MemoryService, ctx.request_context.lifespan_context)


def identity(ctx: Context, svc: MemoryService, **args: Any) -> Identity:
    """Tool arguments > HTTP headers > the client's initialize info > GIEOK_ environment."""
    client = None
    try:
        params = ctx.request_context.session.client_params
        client = params.client_info.name if params and params.client_info else None
    except Exception:  # stateless requests may carry no initialize info
        client = None
    return resolve_identity(svc.default_identity(), headers=ctx.headers, client_name=client, args=args)


def explicit_message(ident: Identity, content: str, *, kind: str | None = None, importance: float | None = None,
                     tags: list[str] | None = None, title: str | None = None, role: str = "user",
                     scope: tuple[str, str] | None = None) -> MessageIn:
    """An explicit "remember this" from a tool: semantic and important unless the caller says otherwise."""
    return MessageIn(content=content, user_id=ident.user_id, role=role, kind=kind or "semantic",
                     importance=0.8 if importance is None else importance, d_tags=list(tags or []),
                     title=title or "", agent_platform=ident.agent_platform, agent_model=ident.agent_model,
                     subagent_role=ident.subagent_role, subagent_model=ident.subagent_model,
                     session_id=ident.session_id, project=ident.project, source="manual",
                     privacy_scope=scope[0] if scope else "private", team=scope[1] if scope else "")

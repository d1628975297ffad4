"""Who is calling an MCP tool, resource or prompt, and the audit of what they did.

With auth on, the user is the verified principal, full stop: a different `X-Gieok-User` header or `user_id`
argument is refused unless the principal is an admin acting for that user (audited). Platform, model, session
and project headers stay allowed: they describe the agent, not the person. With auth off (stdio, loopback),
identity comes from arguments > headers > client info > environment, as before, and the principal is that
user with the teams the membership table gives them.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, cast

from mcp.server.mcpserver import Context

from gieok.auth.audit import entry
from gieok.auth.sdk import current_principal
from gieok.auth.team import TeamAuth
from gieok.core.errors import Forbidden, Unauthorized
from gieok.core.models import Identity, Memory
from gieok.core.principal import Principal
from gieok.mcp.identity import HEADER, resolve_identity
from gieok.mcp.state import GieokMCP
from gieok.memory.service import MemoryService


@dataclass(slots=True)
class Caller:
    ident: Identity
    principal: Principal
    team: TeamAuth
    action: str

    def audit(self, *, outcome: str = "ok", memory_ids: Iterable[str] = (), owners: Iterable[str] = (),
              detail: str = "") -> None:
        if self.team.audit is not None:
            self.team.audit.record(entry(self.principal, self.action, outcome=outcome, memory_ids=memory_ids,
                                         owners=owners, detail=detail))

    def audit_reads(self, rows: Iterable[Memory]) -> None:
        """A read that returned someone else's (team/public) memory is audited, with whose it was."""
        others = [m for m in rows if m.user_id != self.principal.user_id]
        if others and self.team.settings.audit_reads:
            self.audit(memory_ids=[m.id for m in others], owners=[m.user_id for m in others], detail="read shared")

    def audit_shared(self, sections: dict[str, list[dict[str, Any]]]) -> None:
        """As `audit_reads`, for a context block's items (which name their owner when it is not the caller)."""
        items = [i for rows in sections.values() for i in rows if i.get("owner")]
        if items and self.team.settings.audit_reads:
            self.audit(memory_ids=[str(i["id"]) for i in items], owners=[str(i["owner"]) for i in items],
                       detail="read shared")

    def require_write(self) -> None:
        if not self.principal.can_write:
            raise Forbidden(f"{self.principal.user_id!r} has the viewer role, which reads only; writing needs "
                            "an editor or admin key")


current: contextvars.ContextVar[Caller | None] = contextvars.ContextVar("gieok_caller", default=None)


def team_of(ctx: Context) -> TeamAuth:
    return cast(GieokMCP, ctx.mcp_server).team


def _client_name(ctx: Context) -> str | None:
    try:
        params = ctx.request_context.session.client_params
        return params.client_info.name if params and params.client_info else None
    except Exception:  # stateless requests may carry no initialize info
        return None


async def caller(ctx: Context, svc: MemoryService, action: str, **args: Any) -> Caller:
    team = team_of(ctx)
    headers = {k.lower(): v for k, v in (ctx.headers or {}).items()}
    client = _client_name(ctx)
    if not team.enabled:
        ident = resolve_identity(svc.default_identity(), headers=headers, client_name=client, args=args)
        p = Principal(ident.user_id, teams=await svc.store.teams_of(ident.user_id), via="local")
        c = Caller(ident, p, team, action)
        current.set(c)
        return c
    p0 = current_principal()
    if p0 is None:
        raise Unauthorized("authentication required")
    asked = str(args.pop("user_id", "") or headers.pop(HEADER + "user", "") or "")
    p = p0
    if asked and asked != p0.user_id:
        try:
            p = await team.authenticator.act_for(p0, asked)
        except Forbidden:
            Caller(Identity(p0.user_id), p0, team, action).audit(outcome="denied", detail=f"act for {asked!r}")
            raise
        if team.audit is not None:
            await team.audit.record_now(entry(p, action, detail=f"admin {p0.user_id!r} acting for {asked!r}"))
    base = svc.default_identity()
    base.user_id = p.user_id
    ident = resolve_identity(base, headers=headers, client_name=client, args=args)
    ident.user_id = p.user_id
    c = Caller(ident, p, team, action)
    current.set(c)
    return c

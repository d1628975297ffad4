"""Plain HTTP endpoints beside MCP on the Streamable HTTP server: capture for platforms without MCP hooks
(`POST /v1/messages`), the session-start context for hooks (`GET /v1/context`), and for operators `/health`
(alive), `/ready` (database, schema, librarian lag) and `/metrics` (Prometheus; gieok.mcp.ops_http).

With auth on, the HTTP gate (gieok.auth.http_gate) has verified the caller before a route runs; the user is
that principal (a different `X-Gieok-User`, `?user_id=` or body `user_id` is refused unless an admin acts for
that user, audited). A batch is validated whole before anything is stored, and is at most GIEOK_MAX_BATCH
messages.
"""

from __future__ import annotations

from typing import Any

from mcp.server import MCPServer
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from gieok.app.observability import QueueProbe
from gieok.auth.audit import entry
from gieok.auth.http_gate import request_principal
from gieok.auth.team import TeamAuth
from gieok.core.errors import AuthError, Forbidden, GieokError, InvalidInput, NotFound
from gieok.core.models import Identity
from gieok.core.principal import Principal
from gieok.mcp.identity import HEADER, resolve_identity
from gieok.mcp.ops_http import health_response, metrics_response, ready_response
from gieok.mcp.state import ServiceSlot
from gieok.memory.context import load_context
from gieok.memory.ingest import message_from_json, prepare
from gieok.memory.service import MemoryService


def error_status(exc: GieokError) -> int:
    """400 only for what the caller can fix, 404 for what is not there, the refusal's own status for who is
    asking (401/403/429); a failing database, provider or setting is the server's problem: 500."""
    if isinstance(exc, AuthError):
        return exc.status
    if isinstance(exc, InvalidInput):
        return 400
    if isinstance(exc, NotFound):
        return 404
    return 500


def _error(exc: GieokError) -> JSONResponse:
    return JSONResponse({"error": str(exc)}, status_code=error_status(exc))


async def _who(request: Request, svc: MemoryService, team: TeamAuth, action: str,
               args: dict[str, Any], asked: str = "") -> tuple[Identity, Principal]:
    """The caller's identity and principal. Raises AuthError (audited) for a user the principal may not act as."""
    headers = {k.lower(): v for k, v in request.headers.items()}
    if not team.enabled:
        ident = resolve_identity(svc.default_identity(), headers=headers, client_name=None, args=args)
        if asked:
            ident.user_id = asked
        return ident, Principal(ident.user_id, teams=await svc.store.teams_of(ident.user_id), via="local")
    p0 = request_principal(request)
    if p0 is None:  # the gate lets no unauthenticated request through; never trust a missing principal
        raise AuthError("authentication required")
    asked = asked or str(args.pop("user_id", "") or headers.pop(HEADER + "user", "") or "")
    p = p0
    if asked and asked != p0.user_id:
        try:
            p = await team.authenticator.act_for(p0, asked)
        except AuthError as exc:
            if team.audit is not None:
                team.audit.record(entry(p0, action, outcome="denied", detail=str(exc)[:300]))
            raise
        if team.audit is not None:
            await team.audit.record_now(entry(p, action, detail=f"admin {p0.user_id!r} acting for {asked!r}"))
    base = svc.default_identity()
    base.user_id = p.user_id
    ident = resolve_identity(base, headers=headers, client_name=None, args=args)
    ident.user_id = p.user_id
    return ident, p


def register_http_routes(mcp: MCPServer[MemoryService], slot: ServiceSlot, team: TeamAuth) -> None:
    probe = QueueProbe()
    settings = team.settings
    @mcp.custom_route("/v1/messages", methods=["POST"])
    async def post_messages(request: Request) -> Response:
        svc = slot.service
        if svc is None:
            return JSONResponse({"error": "server is starting"}, status_code=503)
        try:
            body = await request.json()
        except ValueError:
            return JSONResponse({"error": "body must be JSON: {\"content\": …, \"role\": …}"}, status_code=400)
        items = body if isinstance(body, list) else [body]
        if len(items) > svc.settings.max_batch:
            return JSONResponse({"error": f"batch: {len(items)} messages, over the limit of "
                                          f"{svc.settings.max_batch} per request (GIEOK_MAX_BATCH); nothing was "
                                          "stored", "stored": []}, status_code=413)
        try:
            if not all(isinstance(i, dict) for i in items):
                raise InvalidInput("body", "each message must be a JSON object")
            users = {str(i["user_id"]) for i in items if i.get("user_id")}
            if len(users) > 1:
                raise InvalidInput("user_id", "one request carries one user's messages")
            base, p = await _who(request, svc, team, "POST /v1/messages", {}, users.pop() if users else "")
            if not p.can_write:
                raise Forbidden(f"{p.user_id!r} has the viewer role, which reads only; capture needs an editor key")
            msgs = [message_from_json({**i, "user_id": base.user_id}, base) for i in items]
            for m in msgs:
                svc.check_scope(p, m.privacy_scope, m.team)
                # Validate every message before storing any: a bad one refuses the batch whole.
                prepare(m, max_bytes=svc.settings.max_content_bytes, redact_secrets=False)
            ids = [await svc.ingest(m) for m in msgs]
        except GieokError as exc:
            if isinstance(exc, AuthError) and exc.status == 403 and team.audit is not None:
                team.audit.record(entry(request_principal(request), "POST /v1/messages", outcome="denied",
                                        detail=str(exc)[:300]))
            return JSONResponse({"error": str(exc), "stored": []}, status_code=error_status(exc))
        if team.audit is not None:
            team.audit.record(entry(p, "POST /v1/messages", memory_ids=[i for i, ins in ids if ins]))
        return JSONResponse({"stored": [{"id": i, "inserted": ins} for i, ins in ids]})

    @mcp.custom_route("/v1/context", methods=["GET"])
    async def get_context(request: Request) -> Response:
        """The session-start block for hooks: ?platform=&model=&project=&query=&budget= (same as load_context)."""
        svc = slot.service
        if svc is None:
            return JSONResponse({"error": "server is starting"}, status_code=503)
        q = request.query_params
        args = {k: q[k] for k in ("platform", "model", "project", "user_id", "subagent_role", "session_id")
                if q.get(k)}
        try:
            ident, p = await _who(request, svc, team, "GET /v1/context", args)
            budget = int(q["budget"]) if q.get("budget") else None
            if budget is not None and not 100 <= budget <= 200_000:
                raise InvalidInput("budget", f"{budget} is outside 100..200000 tokens")
            block = await load_context(svc, ident, project=q.get("project") or None, query=q.get("query") or None,
                                       token_budget=budget, viewer=p)
        except GieokError as exc:
            return _error(exc)
        except ValueError as exc:
            return JSONResponse({"error": f"budget: {exc}"}, status_code=400)
        shared = [i for rows in block.sections.values() for i in rows if i.get("owner")]
        if shared and team.audit is not None and svc.settings.audit_reads:
            team.audit.record(entry(p, "GET /v1/context", memory_ids=[str(i["id"]) for i in shared],
                                    owners=[str(i["owner"]) for i in shared], detail="read shared"))
        return JSONResponse(block.to_dict())

    @mcp.custom_route("/health", methods=["GET"])
    async def health(_: Request) -> Response:
        return await health_response(slot.service)

    @mcp.custom_route("/ready", methods=["GET"])
    async def ready(_: Request) -> Response:
        return await ready_response(slot.service, settings, probe)

    @mcp.custom_route("/metrics", methods=["GET"])
    async def metrics(_: Request) -> Response:
        return await metrics_response(slot.service, settings, probe)

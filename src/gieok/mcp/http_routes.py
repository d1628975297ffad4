"""Plain HTTP endpoints beside MCP on the Streamable HTTP server: capture for platforms without MCP hooks
(`POST /v1/messages`), the session-start context for hooks (`GET /v1/context`), and for operators `/health`
(alive), `/ready` (database, schema, librarian lag) and `/metrics` (Prometheus; gieok.mcp.ops_http).

With auth on, the HTTP gate (gieok.auth.http_gate) has verified the caller before a route runs; the user is
that principal (a different `X-Gieok-User`, `?user_id=` or body `user_id` is refused unless an admin acts for
that user, audited). Browser checks (Host, Origin, Content-Type) are `gieok.mcp.browser_guard`, in front of
every route.

Every answer is deliberate: bad input is a 400 naming the field (never a 500, which would also cost the client
its keep-alive connection), and a batch (at most GIEOK_MAX_BATCH messages) is validated whole and stored in
one transaction, or not at all; an `Idempotency-Key` makes a retry exactly-once.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server import MCPServer
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response

from gieok.app.observability import QueueProbe
from gieok.auth.audit import entry
from gieok.auth.http_gate import request_principal
from gieok.auth.team import TeamAuth
from gieok.core.errors import AuthError, Forbidden, GieokError, InvalidInput, NotFound
from gieok.core.limits import check_label, check_query
from gieok.core.models import Identity
from gieok.core.principal import Principal
from gieok.mcp.identity import HEADER, resolve_identity
from gieok.mcp.ops_http import health_response, metrics_response, ready_response
from gieok.mcp.state import ServiceSlot
from gieok.memory.context import load_context
from gieok.memory.ingest import message_from_json
from gieok.memory.service import MemoryService

log = logging.getLogger(__name__)

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



Handler = Callable[[Request], Awaitable[Response]]


class _BodyTooLarge(Exception):
    pass


def _safe(text: str) -> str:
    # An error may quote the bad input, lone surrogates included: escape them, or the answer cannot be encoded.
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _error(status: int, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": _safe(message), **{k: _safe(v) if isinstance(v, str) else v
                                                     for k, v in extra.items()}}, status_code=status)


def answered(fn: Handler) -> Handler:
    """Our errors become 4xx with their message; anything unexpected a 500 that says nothing was stored,
    answered by us rather than the framework, so the connection stays open for the client's next request."""
    @functools.wraps(fn)
    async def wrapper(request: Request) -> Response:
        try:
            return await fn(request)
        except _BodyTooLarge as exc:
            return JSONResponse({"error": str(exc), "stored": []}, status_code=413, headers={"Connection": "close"})
        except AuthError as exc:
            return _error(exc.status, str(exc), stored=[])
        except GieokError as exc:
            return _error(error_status(exc), str(exc), stored=[],
                          **({"field": exc.field} if isinstance(exc, InvalidInput) else {}))
        except ClientDisconnect:
            return Response(status_code=400)
        except Exception:
            log.exception("%s %s failed", request.method, request.url.path)
            return _error(500, "internal error: nothing was stored; the server log says why", stored=[])
    return wrapper


async def read_body(request: Request, limit: int) -> bytes:
    """The body, refused past `limit` bytes without reading the rest (the HTTP gate checks this too)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _BodyTooLarge(f"body is {declared} bytes, over the {limit}-byte limit (GIEOK_MAX_BODY_BYTES): "
                            "send fewer messages per request")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _BodyTooLarge(f"body is over the {limit}-byte limit (GIEOK_MAX_BODY_BYTES): send fewer "
                                "messages per request")
        chunks.append(chunk)
    return b"".join(chunks)


def parse_json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except RecursionError:
        raise InvalidInput("body", "is nested too deeply to be a message") from None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
        raise InvalidInput("body", f"is not JSON ({exc}): send {{\"content\": …, \"role\": …}} or a list of "
                                   "such objects") from None


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
    @answered
    async def post_messages(request: Request) -> Response:
        svc = slot.service
        if svc is None:
            return _error(503, "server is starting")
        body = await read_body(request, svc.settings.max_body_bytes)
        data = parse_json(body)
        items = data if isinstance(data, list) else [data]
        if not items:
            raise InvalidInput("body", "is an empty list: send at least one message")
        if len(items) > svc.settings.max_batch:
            return _error(413, f"batch: {len(items)} messages, over the limit of {svc.settings.max_batch} per "
                               "request (GIEOK_MAX_BATCH); nothing was stored", stored=[])
        try:
            for i, item in enumerate(items):
                if not isinstance(item, dict):
                    raise InvalidInput("body" if len(items) == 1 else f"[{i}]", "each message must be a JSON object")
            if any(i.get("user_id") is not None and not isinstance(i["user_id"], str) for i in items):
                raise InvalidInput("user_id", "must be a string")
            users = {check_label("user_id", i["user_id"]) for i in items if i.get("user_id")}
            if len(users) > 1:
                raise InvalidInput("user_id", "one request carries one user's messages")
            base, p = await _who(request, svc, team, "POST /v1/messages", {}, users.pop() if users else "")
            if not p.can_write:
                raise Forbidden(f"{p.user_id!r} has the viewer role, which reads only; capture needs an editor key")
            msgs = []
            for i, item in enumerate(items):
                try:
                    m = message_from_json({**item, "user_id": base.user_id}, base)
                    svc.check_scope(p, m.privacy_scope, m.team)
                except InvalidInput as exc:
                    if len(items) == 1:
                        raise
                    raise InvalidInput(f"[{i}].{exc.field}", str(exc).split(": ", 1)[-1]) from None
                msgs.append(m)
            key = request.headers.get("idempotency-key")
            if key is not None:
                key = check_label("Idempotency-Key", key.strip(), 200)
                if not key:
                    raise InvalidInput("Idempotency-Key", "is empty: send a unique string per request, or no header")
            # Validated whole, stored in one transaction: a bad message refuses the batch and stores nothing.
            ids = await svc.ingest_batch(msgs, request_key=key, fingerprint=hashlib.sha256(body).hexdigest())
        except AuthError as exc:
            if exc.status == 403 and team.audit is not None:
                team.audit.record(entry(request_principal(request), "POST /v1/messages", outcome="denied",
                                        detail=str(exc)[:300]))
            raise
        if team.audit is not None:
            team.audit.record(entry(p, "POST /v1/messages", memory_ids=[i for i, ins in ids if ins]))
        return JSONResponse({"stored": [{"id": i, "inserted": ins} for i, ins in ids]})

    @mcp.custom_route("/v1/context", methods=["GET"])
    @answered
    async def get_context(request: Request) -> Response:
        """The session-start block for hooks: ?platform=&model=&project=&query=&budget= (same as load_context)."""
        svc = slot.service
        if svc is None:
            return _error(503, "server is starting")
        q = request.query_params
        args = {k: check_label(k, q[k]) for k in ("platform", "model", "project", "user_id", "subagent_role",
                                                  "session_id") if q.get(k)}
        ident, p = await _who(request, svc, team, "GET /v1/context", args)
        raw_budget = q.get("budget")
        budget = None
        if raw_budget:
            if not raw_budget.strip().isdigit() or len(raw_budget) > 9:
                raise InvalidInput("budget", f"{raw_budget[:20]!r} is not a whole number of tokens (100..200000)")
            budget = int(raw_budget)
            if not 100 <= budget <= 200_000:
                raise InvalidInput("budget", f"{budget} is outside 100..200000 tokens")
        query = check_query(q.get("query")) or None
        block = await load_context(svc, ident, project=q.get("project") or None, query=query, token_budget=budget,
                                   viewer=p)
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

"""Plain HTTP endpoints beside MCP on the Streamable HTTP server: capture for platforms without MCP hooks
(`POST /v1/messages`), the session-start context for hooks (`GET /v1/context`), and `/health`."""

from __future__ import annotations

from mcp.server import MCPServer
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from gieok import __version__
from gieok.core.errors import GieokError, InvalidInput
from gieok.mcp.identity import resolve_identity
from gieok.mcp.state import ServiceSlot
from gieok.memory.context import load_context
from gieok.memory.ingest import message_from_json
from gieok.memory.service import MemoryService


def register_http_routes(mcp: MCPServer[MemoryService], slot: ServiceSlot) -> None:
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
        base = resolve_identity(svc.default_identity(), headers=request.headers, client_name=None, args={})
        ids: list[tuple[str, bool]] = []
        try:
            for item in items:
                if not isinstance(item, dict):
                    raise InvalidInput("body", "each message must be a JSON object")
                ids.append(await svc.ingest(message_from_json(item, base)))
        except GieokError as exc:
            return JSONResponse({"error": str(exc), "stored": [i for i, _ in ids]}, status_code=400)
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
        ident = resolve_identity(svc.default_identity(), headers=request.headers, client_name=None, args=args)
        try:
            budget = int(q["budget"]) if q.get("budget") else None
            if budget is not None and not 100 <= budget <= 200_000:
                raise InvalidInput("budget", f"{budget} is outside 100..200000 tokens")
            block = await load_context(svc, ident, project=q.get("project") or None, query=q.get("query") or None,
                                       token_budget=budget)
        except ValueError as exc:   # InvalidInput is a ValueError too
            return JSONResponse({"error": str(exc) if isinstance(exc, GieokError) else f"budget: {exc}"},
                                status_code=400)
        except GieokError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        return JSONResponse(block.to_dict())

    @mcp.custom_route("/health", methods=["GET"])
    async def health(_: Request) -> Response:
        return JSONResponse({"ok": slot.service is not None, "version": __version__})

"""Plain HTTP endpoints beside MCP on the Streamable HTTP server: capture for platforms without MCP hooks
(`POST /v1/messages`), the session-start context for hooks (`GET /v1/context`), and `/health`."""

from __future__ import annotations

from typing import Any

from mcp.server import MCPServer
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from gieok import __version__
from gieok.errors import GieokError, InvalidInput
from gieok.ingest import MessageIn
from gieok.models import Identity
from gieok.server.identity import resolve_identity
from gieok.service import MemoryService


def register_http_api(mcp: MCPServer[MemoryService], holder: dict[str, MemoryService]) -> None:
    @mcp.custom_route("/v1/messages", methods=["POST"])
    async def post_messages(request: Request) -> Response:
        svc = holder.get("svc")
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

    @mcp.custom_route("/health", methods=["GET"])
    async def health(_: Request) -> Response:
        return JSONResponse({"ok": "svc" in holder, "version": __version__})


FIELDS = {"content", "role", "kind", "source", "title", "session_id", "project", "created_at", "id",
          "importance", "meta", "agent_platform", "agent_model", "subagent_role", "subagent_model",
          "platform", "model", "user_id", "p_tags", "d_tags"}


def message_from_json(item: dict[str, Any], base: Identity) -> MessageIn:
    """The fields `gieok ingest --json` and POST /v1/messages take."""
    unknown = set(item) - FIELDS
    if unknown:
        raise InvalidInput(sorted(unknown)[0], f"unknown field; accepted fields: {', '.join(sorted(FIELDS))}")
    content = item.get("content")
    if not isinstance(content, str):
        raise InvalidInput("content", "is required and must be a string")
    return MessageIn(
        content=content, user_id=str(item.get("user_id") or base.user_id), role=str(item.get("role", "user")),
        kind=str(item.get("kind", "episodic")), source=str(item.get("source", "chat")),
        title=str(item.get("title", "")),
        agent_platform=str(item.get("agent_platform") or item.get("platform") or base.agent_platform),
        agent_model=str(item.get("agent_model") or item.get("model") or base.agent_model),
        subagent_role=str(item.get("subagent_role") or base.subagent_role),
        subagent_model=str(item.get("subagent_model") or base.subagent_model),
        session_id=str(item.get("session_id") or base.session_id), project=str(item.get("project") or base.project),
        created_at=item.get("created_at"), id=item.get("id"),
        importance=item.get("importance", 0.5), meta=dict(item.get("meta") or {}),
        p_tags=list(item.get("p_tags") or []), d_tags=list(item.get("d_tags") or []),
    )

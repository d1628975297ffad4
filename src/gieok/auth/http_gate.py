"""The gate in front of every HTTP route (ASGI middleware): request body limit, authentication, per-key rate
limit. Every refusal is a clear JSON error — 401 with `WWW-Authenticate`, 413, 429 with `Retry-After` — and
is audited. The verified principal is left in `scope["state"]["gieok_principal"]` for the REST routes (and the
dashboard), and in a context variable so the SDK's verifier behind it reuses the check.

An `X-Api-Key` header or a `gieok_key` cookie is also presented to the SDK as `Authorization: Bearer`, so
clients that cannot set a bearer reach `/mcp` too.
"""

from __future__ import annotations

import json
import math
from typing import Any

from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gieok.auth.audit import entry
from gieok.auth.authenticator import credential_from
from gieok.auth.team import TeamAuth, Verified, base_url, verified
from gieok.core.errors import AuthError, Unauthorized
from gieok.core.principal import Principal

# Reachable without credentials: liveness and readiness (probes carry no keys), Prometheus metrics (counts
# only, no memory; keep them off the public side of your proxy, as compose.yaml's nginx does), and the OAuth
# metadata a client reads to learn how to authenticate. The dashboard (/ui) signs people in itself — a browser
# cannot send a bearer — and verifies the key or token its signed session cookie carries on every request
# (gieok.ui.principal), with the same authenticator and limiter.
PUBLIC_PATHS = ("/health", "/ready", "/metrics", "/.well-known/oauth-protected-resource",
                "/.well-known/oauth-authorization-server", "/ui")
STATE_KEY = "gieok_principal"


class _TooLarge(Exception):
    pass


def request_principal(conn: HTTPConnection | Scope) -> Principal | None:
    """The principal the gate verified for this request (None with auth off)."""
    scope = conn.scope if isinstance(conn, HTTPConnection) else conn
    p = (scope.get("state") or {}).get(STATE_KEY)
    return p if isinstance(p, Principal) else None


async def _send_json(send: Send, status: int, body: dict[str, Any], headers: list[tuple[bytes, bytes]]) -> None:
    data = json.dumps(body, ensure_ascii=False).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()),
                            *headers]})
    await send({"type": "http.response.body", "body": data})


class HttpGate:
    def __init__(self, app: ASGIApp, team: TeamAuth) -> None:
        self.app = app
        self.team = team
        self.max_body = team.settings.max_body_bytes
        self.metadata_url = base_url(team.settings) + "/.well-known/oauth-protected-resource/mcp"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        remote = (scope.get("client") or ("", 0))[0] or ""
        path: str = scope.get("path", "")
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > self.max_body:
            await self._refuse(send, 413, f"request body is {length} bytes, over the {self.max_body}-byte limit "
                               "(send fewer messages per request, or raise GIEOK_MAX_BODY_BYTES)", None, path, remote)
            return
        if self.team.enabled and not path.startswith(PUBLIC_PATHS):
            cookies = HTTPConnection(scope).cookies
            token = credential_from(headers, cookies)
            try:
                if token is None:
                    raise Unauthorized("authentication required: send `Authorization: Bearer <key or token>` "
                                       "(or `X-Api-Key: <key>`)")
                p = await self.team.authenticator.authenticate(token)
            except AuthError as exc:
                await self._refuse(send, 401, str(exc), None, path, remote)
                return
            wait = self.team.limiter.take(p.key_id or p.user_id)
            if wait > 0:
                await self._refuse(send, 429, f"rate limit: over {self.team.settings.rate_limit_per_min:g} requests "
                                   f"a minute for this key; retry in {math.ceil(wait)} s", p, path, remote,
                                   retry_after=wait)
                return
            scope.setdefault("state", {})[STATE_KEY] = p
            if "authorization" not in headers:
                scope["headers"] = [*scope.get("headers", []), (b"authorization", f"Bearer {token}".encode())]
            reset = verified.set(Verified(token, p))
            try:
                await self._pass(scope, receive, send, path, remote, p)
            finally:
                verified.reset(reset)
            return
        await self._pass(scope, receive, send, path, remote, None)

    async def _pass(self, scope: Scope, receive: Receive, send: Send, path: str, remote: str,
                    p: Principal | None) -> None:
        seen = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal seen
            msg = await receive()
            if msg["type"] == "http.request":
                seen += len(msg.get("body", b""))
                if seen > self.max_body:
                    raise _TooLarge
            return msg

        async def tracking_send(msg: Message) -> None:
            nonlocal started
            if msg["type"] == "http.response.start":
                started = True
            await send(msg)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except _TooLarge:
            if not started:
                await self._refuse(send, 413, f"request body is over the {self.max_body}-byte limit (raise "
                                   "GIEOK_MAX_BODY_BYTES)", p, path, remote)

    async def _refuse(self, send: Send, status: int, message: str, p: Principal | None, path: str, remote: str,
                      *, retry_after: float | None = None) -> None:
        hdrs: list[tuple[bytes, bytes]] = []
        body: dict[str, Any] = {"error": message}
        if status == 401:
            desc = message.replace('"', "'")
            hdrs.append((b"www-authenticate", f'Bearer error="invalid_token", error_description="{desc}", '
                                              f'resource_metadata="{self.metadata_url}"'.encode()))
            body["error_description"] = message
            body["error"] = "invalid_token"
        if retry_after is not None:
            hdrs.append((b"retry-after", str(max(1, math.ceil(retry_after))).encode()))
        if self.team.audit is not None:
            self.team.audit.record(entry(p, f"http {path}", outcome=f"refused:{status}", detail=message[:300],
                                         remote=remote))
        await _send_json(send, status, body, hdrs)

"""One ASGI middleware in front of every HTTP route (`/mcp`, `/v1/…`, `/health`, the dashboard at `/ui`):
the checks that keep a web page the user happens to visit from talking to the local server.

A loopback server has no credentials to check, so a browser is the attacker's only way in:
- DNS rebinding: a page on `evil.example` re-points its name at 127.0.0.1 and its requests arrive with
  `Host: evil.example:8765` → **421** unless the Host is one of the names the server is bound to (or
  GIEOK_ALLOWED_HOSTS);
- cross-site requests: a page's `fetch`/form post carries `Origin` (and modern browsers `Sec-Fetch-Site`) →
  **403** unless it comes from the server's own origin (`http://<the Host it asked for>`) or
  GIEOK_ALLOWED_ORIGINS. `Sec-Fetch-Site: same-site` is refused too: `localhost:3000` is same-*site* as
  `localhost:8765`, yet another program's page;
- "simple" requests that skip the CORS preflight (`Content-Type: text/plain`, form encodings) → **415**:
  a body is accepted as JSON only with `Content-Type: application/json`. Form encodings are accepted only
  under `form_prefixes` (the dashboard's own form posts), and only from the server's own origin.
Programs that are not browsers (hooks, curl, MCP clients) send no Origin and pass. Every refusal is a short
JSON body saying what to change, and is logged.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

log = logging.getLogger(__name__)

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
_WILDCARD_BINDS = ("0.0.0.0", "::", "")
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")
_SAFE_FETCH_SITES = frozenset({"same-origin", "none"})


def bound_names(host: str) -> frozenset[str] | None:
    """The Host names a server bound to `host` answers to; None for a wildcard bind (any name: a team
    server behind its own DNS, protected by auth, unless GIEOK_ALLOWED_HOSTS narrows it)."""
    h = host.strip().lower().strip("[]")
    if h in _WILDCARD_BINDS:
        return None
    if h in LOOPBACK_NAMES or h.startswith("127."):
        return frozenset({*LOOPBACK_NAMES, h})
    return frozenset({h})


def _host_name(host_header: str) -> str:
    """`example.com:8765` → `example.com`, `[::1]:8765` → `::1`."""
    h = host_header.strip().lower()
    if h.startswith("["):
        return h[1:h.find("]")] if "]" in h else h
    return h.rsplit(":", 1)[0] if h.count(":") == 1 else h


class BrowserGuard:
    def __init__(self, app: ASGIApp, *, bind_host: str, allowed_hosts: Iterable[str] = (),
                 allowed_origins: Iterable[str] = (), form_prefixes: Iterable[str] = ("/ui",)) -> None:
        self.app = app
        names = bound_names(bind_host)
        extra = {_host_name(h) for h in allowed_hosts if h}
        self.hosts: frozenset[str] | None = (names | extra) if names is not None else (frozenset(extra) or None)
        self.origins = frozenset(o.rstrip("/").lower() for o in allowed_origins if o)
        self.form_prefixes = tuple(form_prefixes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        refusal = self.check(scope)
        if refusal is None:
            await self.app(scope, receive, send)
            return
        status, message = refusal
        log.warning("refused %s %s: %s", scope.get("method", "WS"), scope.get("path"), message)
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        body = json.dumps({"error": message}).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    def check(self, scope: Scope) -> tuple[int, str] | None:
        """(status, message) when the request must be refused, else None."""
        headers = Headers(scope=scope)
        host = headers.get("host", "")
        if self.hosts is not None and _host_name(host) not in self.hosts:
            return 421, (f"Host {host[:100]!r} is not a name this server answers to; use "
                         f"http://127.0.0.1:<port>/ or add the name to GIEOK_ALLOWED_HOSTS")
        origin = headers.get("origin")
        scheme = "https" if scope.get("scheme") in ("https", "wss") else "http"
        own = f"{scheme}://{host}".lower()
        same_origin = origin is not None and (origin.rstrip("/").lower() == own
                                              or origin.rstrip("/").lower() in self.origins)
        if origin is not None and not same_origin:
            return 403, (f"cross-origin request from {origin[:100]!r} refused: only pages of this server "
                         "may call it from a browser (or add the origin to GIEOK_ALLOWED_ORIGINS)")
        site = headers.get("sec-fetch-site")
        path = scope.get("path", "")
        under_form = any(path == p or path.startswith(p + "/") for p in self.form_prefixes)
        # A link followed from another site (the identity provider's redirect back to /ui/oidc/callback, a
        # bookmark in a chat) is a top-level GET navigation: it reads a page and changes nothing (every change
        # is a same-origin POST with a CSRF token), so the fetch-metadata policy lets it through.
        navigation = (scope.get("method") in ("GET", "HEAD") and under_form
                      and headers.get("sec-fetch-mode", "").lower() == "navigate"
                      and headers.get("sec-fetch-dest", "document").lower() in ("document", "empty"))
        if site is not None and site.lower() not in _SAFE_FETCH_SITES and not same_origin and not navigation:
            return 403, f"cross-site browser request (Sec-Fetch-Site: {site[:40]}) refused"
        if scope.get("method") in _BODY_METHODS and scope["type"] == "http":
            ctype = headers.get("content-type", "").split(";")[0].strip().lower()
            if ctype == "application/json":
                return None
            if ctype in _FORM_TYPES and same_origin and under_form:
                return None
            return 415, (f"Content-Type {ctype or '(none)'!r} refused: send the body as JSON with "
                         "Content-Type: application/json")
        return None

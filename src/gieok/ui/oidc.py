"""Signing in to the dashboard through the identity provider: OpenID Connect's authorization code flow with PKCE
(RFC 7636), a state and a nonce. The token the IdP returns is then checked like any other — by the team server's
JWT verifier (issuer, audience, expiry, signature from the JWKS) — and kept in the session cookie as a pasted one
would be.

Why a second cookie: the IdP sends the browser back from another site, and a SameSite=Strict cookie is not sent on
that navigation. The flow's own state (state, PKCE verifier, nonce, where to go next) travels in a short-lived,
signed SameSite=Lax cookie instead; the session cookie stays Strict. For the same reason the callback answers with
a page that moves on by itself: a redirect chain that began on another site would not carry the Strict cookie.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import httpx2
import jwt
from itsdangerous import BadSignature, URLSafeTimedSerializer
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from gieok.auth.team import base_url
from gieok.core.errors import AuthError, ConfigError, ProviderError
from gieok.core.settings import Settings
from gieok.ui.principal import is_loopback

FLOW_COOKIE = "gieok_ui_oidc"
FLOW_MAX_AGE_S = 600
DISCOVERY_TTL_S = 3600.0


@dataclass(slots=True, frozen=True)
class Endpoints:
    authorize: str
    token: str


class OidcClient:
    def __init__(self, s: Settings, secret: str) -> None:
        self.s = s
        self._flow = URLSafeTimedSerializer(secret, salt="gieok-ui-oidc")
        self._endpoints: tuple[float, Endpoints] | None = None

    @property
    def enabled(self) -> bool:
        return bool(self.s.oidc_discovery_url and self.s.oidc_client_id)

    @property
    def redirect_uri(self) -> str:
        return base_url(self.s) + "/ui/oidc/callback"

    async def endpoints(self) -> Endpoints:
        if self._endpoints and time.monotonic() - self._endpoints[0] < DISCOVERY_TTL_S:
            return self._endpoints[1]
        doc = await self._get_json(self.s.oidc_discovery_url)
        try:
            ep = Endpoints(str(doc["authorization_endpoint"]), str(doc["token_endpoint"]))
        except KeyError as exc:
            raise ConfigError(f"GIEOK_OIDC_DISCOVERY_URL: the document has no {exc.args[0]}") from None
        self._endpoints = (time.monotonic(), ep)
        return ep

    async def _get_json(self, url: str) -> dict[str, Any]:
        try:
            async with httpx2.AsyncClient(timeout=self.s.provider_timeout_s) as c:
                r = await c.get(url)
                r.raise_for_status()
                data = r.json()
        except (httpx2.HTTPError, ValueError) as exc:
            raise ProviderError(f"identity provider: cannot read {url}: {exc}") from exc
        if not isinstance(data, dict):
            raise ProviderError(f"identity provider: {url} did not return a JSON object")
        return data

    async def start(self, request: Request, nxt: str) -> Response:
        """Send the browser to the IdP, remembering the flow in the Lax cookie."""
        ep = await self.endpoints()
        state, nonce, verifier = (secrets.token_urlsafe(24) for _ in range(3))
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        params = {"response_type": "code", "client_id": self.s.oidc_client_id, "redirect_uri": self.redirect_uri,
                  "scope": self.s.oidc_scopes, "state": state, "nonce": nonce, "code_challenge": challenge,
                  "code_challenge_method": "S256"}
        if self.s.jwt_audience:
            # Ask for an access token for this server (RFC 8707), which the JWT verifier accepts.
            params["resource"] = self.s.jwt_audience
        response = RedirectResponse(ep.authorize + ("&" if "?" in ep.authorize else "?") + urlencode(params),
                                    status_code=303)
        response.set_cookie(FLOW_COOKIE, self._flow.dumps({"state": state, "nonce": nonce, "verifier": verifier,
                                                           "next": nxt}),
                            max_age=FLOW_MAX_AGE_S, path="/ui/oidc", httponly=True, samesite="lax",
                            secure=request.url.scheme == "https" or not is_loopback(request))
        return response

    def flow(self, request: Request) -> dict[str, str]:
        raw = request.cookies.get(FLOW_COOKIE, "")
        try:
            data = self._flow.loads(raw, max_age=FLOW_MAX_AGE_S) if raw else None
        except BadSignature:
            data = None
        if not isinstance(data, dict):
            raise AuthError("the sign-in took too long or started elsewhere: start it again")
        return {k: str(v) for k, v in data.items()}

    async def finish(self, request: Request) -> tuple[list[str], dict[str, str]]:
        """Check the IdP's answer and redeem the code; returns the tokens to try (access token first) and the
        flow (its nonce and where to go next)."""
        flow = self.flow(request)
        q = request.query_params
        if q.get("error"):
            raise AuthError(f"the identity provider said {q['error']}: {q.get('error_description', '')}".strip())
        if not hmac.compare_digest(q.get("state", ""), flow["state"]):
            raise AuthError("the sign-in answer does not belong to this browser's sign-in (state mismatch)")
        ep = await self.endpoints()
        data = {"grant_type": "authorization_code", "code": q.get("code", ""), "redirect_uri": self.redirect_uri,
                "client_id": self.s.oidc_client_id, "code_verifier": flow["verifier"]}
        if self.s.oidc_client_secret:
            data["client_secret"] = self.s.oidc_client_secret
        try:
            async with httpx2.AsyncClient(timeout=self.s.provider_timeout_s) as c:
                r = await c.post(ep.token, data=data, headers={"Accept": "application/json"})
            body = r.json()
        except (httpx2.HTTPError, ValueError) as exc:
            raise ProviderError(f"identity provider: the token request failed: {exc}") from exc
        if r.status_code != 200 or not isinstance(body, dict):
            raise AuthError(f"the identity provider refused the code ({r.status_code}: "
                            f"{body.get('error', '') if isinstance(body, dict) else ''})")
        id_token = str(body.get("id_token") or "")
        if id_token and _claim(id_token, "nonce") != flow["nonce"]:
            raise AuthError("the identity provider's answer was not made for this sign-in (nonce mismatch)")
        return [t for t in (str(body.get("access_token") or ""), id_token) if t], flow


def _claim(token: str, name: str) -> str:
    """A claim of a token whose signature is checked elsewhere (by the JWT verifier, before it is trusted)."""
    try:
        return str(jwt.decode(token, options={"verify_signature": False}).get(name, ""))
    except jwt.PyJWTError:
        return ""

"""The official MCP SDK's side of authentication: our `TokenVerifier` and `AuthSettings`. With them the SDK
requires a verified bearer on `/mcp` (401 with `WWW-Authenticate`), serves the OAuth protected-resource
metadata (RFC 9728) and binds each Streamable HTTP session to the principal that opened it."""

from __future__ import annotations

import hashlib

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from pydantic import ConfigDict

from gieok.auth.team import TeamAuth, base_url
from gieok.core.errors import AuthError
from gieok.core.principal import Principal


class PrincipalToken(AccessToken):
    """The SDK's access token, carrying the principal our verifier established."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    principal: Principal


class GieokTokenVerifier:
    """`mcp.server.auth.provider.TokenVerifier`: an API key or a JWT → `PrincipalToken`, or None (→ 401)."""

    def __init__(self, team: TeamAuth) -> None:
        self.team = team
        self.resource = base_url(team.settings) + "/mcp"

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            p = await self.team.authenticate(token)
        except AuthError:
            return None  # the HTTP gate in front has already answered and audited a bad credential
        exp = p.meta.get("exp")
        return PrincipalToken(
            # The SDK never needs the secret itself; keep only a fingerprint in memory.
            token=hashlib.sha256(token.encode()).hexdigest()[:16],
            # Session ownership is (client_id, iss, sub): a session opened with one key is that key's alone.
            client_id=p.key_id or p.user_id, scopes=[], expires_at=int(exp) if exp else None,
            resource=self.resource, subject=p.user_id, claims={"iss": f"gieok:{p.via}"}, principal=p)


def auth_settings(team: TeamAuth) -> AuthSettings:
    s = team.settings
    url = base_url(s)
    # API keys are issued by this server; JWTs by the IdP, which clients are sent to discover.
    issuer = s.jwt_issuer if "jwt" in team.modes and s.jwt_issuer.startswith(("http://", "https://")) else url
    return AuthSettings(issuer_url=issuer, resource_server_url=url + "/mcp",  # type: ignore[arg-type]
                        validate_token_resource=False)   # our verifier checks the audience itself


def current_principal() -> Principal | None:
    """The verified principal of the current MCP request (None over stdio or with auth off)."""
    tok = get_access_token()
    return tok.principal if isinstance(tok, PrincipalToken) else None

"""JWT / OIDC access tokens (PyJWT): HS256 with a shared secret, or RS256/ES256 with the IdP's JWKS.

What is checked, and why:
- the algorithm is taken from an allow-list fixed by configuration, never from the token alone: `none` is
  never accepted, and an HMAC algorithm is only tried with the shared secret, an RSA/EC one only with a JWKS
  key, so a token cannot make us verify an HMAC with a public key (algorithm confusion);
- issuer and audience must match configuration (the MCP spec: a server accepts only tokens issued for it);
- `exp` is required; `exp`/`nbf`/`iat` get a small leeway for clock skew;
- who the user is, their teams and roles come from configurable claims (dotted paths reach nested claims,
  e.g. Keycloak's `realm_access.roles`), so any IdP works without code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jwt

from gieok.auth.jwks import JwksSource
from gieok.core.errors import ConfigError, Unauthorized
from gieok.core.principal import ROLE_NAMES
from gieok.core.settings import Settings

HMAC_ALGS = ("HS256", "HS384", "HS512")
ASYMMETRIC_ALGS = ("RS256", "RS384", "RS512", "PS256", "ES256", "ES384", "EdDSA")


@dataclass(frozen=True, slots=True)
class VerifiedToken:
    user_id: str
    teams: tuple[str, ...]
    roles: tuple[str, ...]
    jti: str
    client: str
    expires_at: int
    audience: str
    claims: dict[str, Any]


def claim(claims: dict[str, Any], path: str) -> Any:
    cur: Any = claims
    for part in path.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return None
        cur = cur[part]
    return cur


def _names(value: Any) -> tuple[str, ...]:
    """A list claim, or a space/comma separated string (some IdPs send `scope`-style strings)."""
    if value is None:
        return ()
    items = value if isinstance(value, list | tuple) else str(value).replace(",", " ").split()
    # Group paths such as Keycloak's "/engineering" name the team "engineering".
    return tuple(sorted({str(x).strip().strip("/") for x in items if str(x).strip().strip("/")}))


class JwtVerifier:
    def __init__(self, s: Settings, *, jwks: JwksSource | None = None) -> None:
        if not s.jwt_issuer or not s.jwt_audience:
            raise ConfigError("GIEOK_AUTH=jwt needs GIEOK_JWT_ISSUER and GIEOK_JWT_AUDIENCE: tokens are accepted "
                              "only from your IdP and only when issued for this server")
        if not s.jwt_secret and not (s.jwt_jwks_url or s.jwt_jwks_file):
            raise ConfigError("GIEOK_AUTH=jwt needs GIEOK_JWT_SECRET (HS256) or GIEOK_JWT_JWKS_URL / "
                              "GIEOK_JWT_JWKS_FILE (RS256/ES256)")
        if s.jwt_secret and len(s.jwt_secret.encode()) < 32:
            raise ConfigError("GIEOK_JWT_SECRET must be at least 32 bytes (RFC 7518 §3.2); generate one with "
                              "`python -c 'import secrets; print(secrets.token_urlsafe(48))'`")
        self.secret = s.jwt_secret.encode()
        self.jwks = jwks or (JwksSource(url=s.jwt_jwks_url, file=s.jwt_jwks_file, ttl_s=s.jwt_jwks_ttl_s)
                             if s.jwt_jwks_url or s.jwt_jwks_file else None)
        self.algorithms = self._algorithms(s)
        self.issuer, self.audience, self.leeway = s.jwt_issuer, s.jwt_audience, s.jwt_leeway_s
        self.user_claim, self.teams_claim, self.roles_claim = s.jwt_user_claim, s.jwt_teams_claim, s.jwt_roles_claim

    def _algorithms(self, s: Settings) -> tuple[str, ...]:
        if s.jwt_algorithms:
            algs = tuple(a.strip() for a in s.jwt_algorithms.split(",") if a.strip())
        else:
            algs = (("HS256",) if self.secret else ()) + (("RS256", "ES256") if self.jwks else ())
        for a in algs:
            if a not in HMAC_ALGS + ASYMMETRIC_ALGS:
                raise ConfigError(f"GIEOK_JWT_ALGORITHMS: {a!r} is not accepted; use some of "
                                  f"{', '.join(HMAC_ALGS + ASYMMETRIC_ALGS)}")
            if a in HMAC_ALGS and not self.secret:
                raise ConfigError(f"GIEOK_JWT_ALGORITHMS: {a} needs GIEOK_JWT_SECRET")
            if a in ASYMMETRIC_ALGS and self.jwks is None:
                raise ConfigError(f"GIEOK_JWT_ALGORITHMS: {a} needs GIEOK_JWT_JWKS_URL or GIEOK_JWT_JWKS_FILE")
        return algs

    async def verify(self, token: str) -> VerifiedToken:
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as exc:
            raise Unauthorized(f"the bearer token is neither a gieok API key nor a JWT ({exc})") from None
        alg = str(header.get("alg", ""))
        if alg not in self.algorithms:
            raise Unauthorized(f"token algorithm {alg!r} is not accepted (accepted: {', '.join(self.algorithms)})")
        key: Any
        if alg in HMAC_ALGS:
            key = self.secret
        else:
            assert self.jwks is not None  # _algorithms guarantees it
            key = await self.jwks.key(header.get("kid"))
            if key is None:
                raise Unauthorized(f"token signed with unknown key id {header.get('kid')!r}")
        try:
            claims = jwt.decode(token, key, algorithms=[alg], audience=self.audience, issuer=self.issuer,
                                leeway=self.leeway, options={"require": ["exp", "iss", "aud"]})
        except jwt.ExpiredSignatureError:
            raise Unauthorized("token expired: get a new one from your identity provider") from None
        except jwt.InvalidAudienceError:
            raise Unauthorized(f"token was not issued for this server (audience must be {self.audience!r})") from None
        except jwt.InvalidIssuerError:
            raise Unauthorized(f"token issuer is not {self.issuer!r}") from None
        except jwt.PyJWTError as exc:
            raise Unauthorized(f"token rejected: {exc}") from None
        user = claim(claims, self.user_claim)
        if not isinstance(user, str) or not user.strip():
            raise Unauthorized(f"token has no user claim {self.user_claim!r} (set GIEOK_JWT_USER_CLAIM)")
        roles = tuple(r for r in _names(claim(claims, self.roles_claim)) if r in ROLE_NAMES) or ("editor",)
        aud = claims.get("aud")
        return VerifiedToken(user_id=user.strip(), teams=_names(claim(claims, self.teams_claim)), roles=roles,
                             jti=str(claims.get("jti") or ""), client=str(claims.get("azp") or
                                                                          claims.get("client_id") or ""),
                             expires_at=int(claims["exp"]),
                             audience=aud if isinstance(aud, str) else self.audience, claims=claims)

"""The team server at run time: the authenticator, the rate limiter and the audit log of one server process.
Built before the store is open (the MCP server and its middleware need it at construction) and opened by the
server's lifespan with the store."""

from __future__ import annotations

import contextvars
from dataclasses import dataclass

from gieok.auth.audit import AuditLog
from gieok.auth.authenticator import Authenticator, check_modes
from gieok.auth.jwt_verify import JwtVerifier
from gieok.auth.ratelimit import RateLimiter
from gieok.core.errors import Unauthorized
from gieok.core.principal import Principal
from gieok.core.settings import Settings
from gieok.store.auth_base import AuthTables

LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})


@dataclass(frozen=True, slots=True)
class Verified:
    """The credential the HTTP gate verified for this request, so the SDK's verifier does not do it again."""

    token: str
    principal: Principal


verified: contextvars.ContextVar[Verified | None] = contextvars.ContextVar("gieok_verified", default=None)


class TeamAuth:
    def __init__(self, s: Settings) -> None:
        self.settings = s
        self.modes = check_modes(s)
        # Built now, so a bad JWT setting stops `gieok serve` before it listens.
        self._jwt = JwtVerifier(s) if "jwt" in self.modes else None
        self.limiter = RateLimiter(s.rate_limit_per_min, s.rate_limit_burst)
        self._auth: Authenticator | None = None
        self.audit: AuditLog | None = None

    @property
    def enabled(self) -> bool:
        return bool(self.modes)

    def open(self, store: AuthTables) -> None:
        self._auth = Authenticator(self.settings, store, jwt_verifier=self._jwt)
        self.audit = AuditLog(store)

    def close(self) -> None:
        self._auth = None

    @property
    def authenticator(self) -> Authenticator:
        if self._auth is None:
            raise Unauthorized("the server is starting: try again in a moment")
        return self._auth

    async def authenticate(self, token: str) -> Principal:
        v = verified.get()
        if v is not None and v.token == token:
            return v.principal
        return await self.authenticator.authenticate(token)


def base_url(s: Settings) -> str:
    """This server's public URL, as clients reach it (GIEOK_PUBLIC_URL, else http://host:port)."""
    if s.public_url:
        return s.public_url.rstrip("/")
    host = "127.0.0.1" if s.host in ("0.0.0.0", "::", "") else s.host
    return f"http://{'[' + host + ']' if ':' in host and not host.startswith('[') else host}:{s.port}"

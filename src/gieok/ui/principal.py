"""Who is looking at the dashboard: one small function (`request_principal`) gives each request its principal
(user, teams, roles), from the signed session cookie when auth is on, or the local user on loopback when it is off.

Auth (API keys, JWT, teams — issue 12) plugs in through `CredentialVerifier`: the sign-in form hands it the API key
or token, and every later request verifies the credential again from the cookie, so a revoked key stops working at
once. With auth off the dashboard answers only loopback clients: it shows and changes one person's memory, and a
request from another machine cannot prove it is that person.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Protocol

from starlette.requests import Request

ROLES = ("viewer", "editor", "admin")


@dataclass(frozen=True, slots=True)
class Principal:
    """The shape of the team server's `gieok.core.principal.Principal` (issue 12), which replaces this one when it
    lands: the same fields and properties, so the pages need no change."""

    user_id: str
    teams: tuple[str, ...] = ()
    roles: tuple[str, ...] = ("viewer",)
    via: str = "local"           # local (loopback, auth off) | apikey | jwt

    @property
    def role(self) -> str:
        """The highest role held."""
        return next((r for r in reversed(ROLES) if r in self.roles), "viewer")

    @property
    def can_write(self) -> bool:
        return self.role in ("editor", "admin")

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"


class CredentialVerifier(Protocol):
    """Turns an API key or token into a principal, or None when it is unknown, expired or revoked."""

    async def verify(self, credential: str) -> Principal | None: ...


def is_loopback(request: Request) -> bool:
    host = request.client.host if request.client else ""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def local_principal(user_id: str) -> Principal:
    """The single user of a loopback server without auth: owner of every memory, so every role."""
    return Principal(user_id=user_id, roles=("admin",), via="local")


async def request_principal(request: Request, *, verifier: CredentialVerifier | None, local_user: str,
                            credential: str | None) -> Principal | None:
    """The request's principal, or None (sign in first, or — auth off — not from this machine).

    `credential` is what the session cookie carries (see gieok.ui.session); it is ignored while auth is off."""
    if verifier is None:
        return local_principal(local_user) if is_loopback(request) else None
    if not credential:
        return None
    return await verifier.verify(credential)

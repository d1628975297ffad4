"""Who is looking at the dashboard: one function (`request_principal`) gives each request its principal — the
team server's `Principal` (user, teams, roles) — from the API key or token the signed session cookie carries when
auth is on, or the local user on loopback when it is off.

Every request verifies the credential again (the authenticator caches nothing a revocation could outlive), so a
revoked key stops working at once. With auth off the dashboard answers only loopback clients: it shows and changes
one person's memory, and a request from another machine cannot prove it is that person.
"""

from __future__ import annotations

import ipaddress

from starlette.requests import Request

from gieok.auth.team import TeamAuth
from gieok.core.errors import AuthError
from gieok.core.principal import Principal
from gieok.store.base import Store

__all__ = ["Principal", "is_loopback", "request_principal"]


def is_loopback(request: Request) -> bool:
    host = request.client.host if request.client else ""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


async def request_principal(request: Request, *, team: TeamAuth, store: Store, local_user: str,
                            credential: str | None) -> Principal | None:
    """The request's principal, or None (sign in first, or — auth off — not from this machine).

    `credential` is what the session cookie carries (gieok.ui.session); it is ignored while auth is off."""
    if not team.enabled:
        if not is_loopback(request):
            return None
        # The single user of a loopback server owns everything here, tag merges included: every role.
        return Principal(local_user, teams=await store.teams_of(local_user), roles=("admin",), via="local")
    if not credential:
        return None
    try:
        return await team.authenticate(credential)
    except AuthError:
        return None

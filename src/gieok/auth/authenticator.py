"""Credentials → Principal, for every door: MCP over Streamable HTTP (through the SDK's TokenVerifier), the
REST routes, and anything else served over HTTP (the /ui dashboard: `principal_from_headers` takes a cookie
carrying the same key or token).

A credential is an API key (`gieok_…`, when GIEOK_AUTH has apikey) or a JWT (when it has jwt). Every failure
is an `Unauthorized` whose message says what was wrong, never which part of a secret matched.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import datetime

from gieok.auth.jwt_verify import JwtVerifier
from gieok.auth.keys import looks_like_key, parse_key, secret_matches
from gieok.core.dates import utcnow
from gieok.core.errors import ConfigError, Forbidden, Unauthorized
from gieok.core.principal import Principal
from gieok.core.settings import Settings
from gieok.store.auth_base import AuthTables

MODES = frozenset({"apikey", "jwt"})
COOKIE = "gieok_key"
USAGE_WRITE_EVERY_S = 60.0  # last_used_at is written at most this often per key, off the request path


def credential_from(headers: Mapping[str, str], cookies: Mapping[str, str] | None = None) -> str | None:
    """The credential a request carries: `Authorization: Bearer …`, else `X-Api-Key`, else the `gieok_key`
    cookie (for browsers)."""
    h = {k.lower(): v for k, v in headers.items()}
    auth = h.get("authorization", "")
    if auth[:7].lower() == "bearer " and auth[7:].strip():
        return auth[7:].strip()
    if h.get("x-api-key", "").strip():
        return h["x-api-key"].strip()
    if cookies and cookies.get(COOKIE, "").strip():
        return cookies[COOKIE].strip()
    return None


def check_modes(s: Settings) -> frozenset[str]:
    modes = s.auth_modes
    bad = modes - MODES
    if bad:
        raise ConfigError(f"GIEOK_AUTH={s.auth!r}: {', '.join(sorted(bad))} is not a mode; use none, apikey, jwt "
                          "or apikey,jwt")
    return modes


class Authenticator:
    def __init__(self, s: Settings, store: AuthTables, *, jwt_verifier: JwtVerifier | None = None) -> None:
        self.modes = check_modes(s)
        self.store = store
        self.jwt = jwt_verifier or (JwtVerifier(s) if "jwt" in self.modes else None)
        self._used: dict[str, float] = {}
        self._pending_usage: dict[str, datetime] = {}
        self._synced: set[tuple[str, tuple[str, ...]]] = set()

    @property
    def enabled(self) -> bool:
        return bool(self.modes)

    async def authenticate(self, token: str) -> Principal:
        if "apikey" in self.modes and looks_like_key(token):
            return await self._api_key(token)
        if self.jwt is not None:
            return await self._jwt(token)
        raise Unauthorized("the credential is not a gieok API key (gieok_…): create one with `gieok keys create`")

    async def principal_from_headers(self, headers: Mapping[str, str],
                                     cookies: Mapping[str, str] | None = None) -> Principal:
        token = credential_from(headers, cookies)
        if token is None:
            raise Unauthorized("authentication required: send `Authorization: Bearer <key or token>` "
                               "(or `X-Api-Key: <key>`)")
        return await self.authenticate(token)

    async def _api_key(self, token: str) -> Principal:
        parsed = parse_key(token)
        if parsed is None:
            raise Unauthorized("malformed API key: expected gieok_<12 hex>_<43 characters> as printed by "
                               "`gieok keys create`")
        key_id, secret = parsed
        found = await self.store.key_with_teams(key_id)
        rec, teams = found if found else (None, ())
        # The hash is compared even when the key id is unknown (against a dummy), so timing does not tell
        # an unknown id from a wrong secret.
        good = secret_matches(key_id, secret, rec.secret_hash if rec else "0" * 64)
        if rec is None or not good:
            raise Unauthorized("unknown API key")
        now = utcnow()
        if rec.revoked_at is not None:
            raise Unauthorized(f"API key {key_id} was revoked")
        if rec.expires_at is not None and rec.expires_at <= now:
            raise Unauthorized(f"API key {key_id} expired at {rec.expires_at.isoformat()}: create a new one")
        self._note_used(key_id)
        return Principal(user_id=rec.user_id, teams=teams, roles=(rec.role,), key_id=key_id, client=rec.name,
                         via="apikey")

    async def _jwt(self, token: str) -> Principal:
        assert self.jwt is not None
        v = await self.jwt.verify(token)
        # The IdP's groups are the user's teams; they are recorded once per process so `gieok teams list`
        # shows them. Memberships an admin added by hand count too.
        if v.teams and (v.user_id, v.teams) not in self._synced:
            for t in v.teams:
                await self.store.add_member(t, v.user_id, source="claims")
            self._synced.add((v.user_id, v.teams))
        teams = tuple(sorted(set(v.teams) | set(await self.store.teams_of(v.user_id))))
        return Principal(user_id=v.user_id, teams=teams, roles=v.roles, key_id=v.jti or f"jwt:{v.user_id}",
                         client=v.client, via="jwt", meta={"aud": v.audience, "exp": str(v.expires_at)})

    async def act_for(self, p: Principal, user_id: str) -> Principal:
        """`p` acting for `user_id`: allowed to admins only (the caller audits it)."""
        if user_id == p.user_id:
            return p
        if not p.is_admin:
            raise Forbidden(f"user_id: you are authenticated as {p.user_id!r}; acting for {user_id!r} needs the "
                            "admin role (drop X-Gieok-User / user_id, or use an admin key)")
        return p.acting_as(user_id, await self.store.teams_of(user_id))

    def _note_used(self, key_id: str) -> None:
        now = time.monotonic()
        if now - self._used.get(key_id, -USAGE_WRITE_EVERY_S) >= USAGE_WRITE_EVERY_S:
            self._used[key_id] = now
            self._pending_usage[key_id] = utcnow()

    async def flush_usage(self) -> None:
        if self._pending_usage:
            used, self._pending_usage = self._pending_usage, {}
            await self.store.touch_api_keys(used)

"""The team server part of `gieok doctor`: which auth mode is on, and what makes a setup weak."""

from __future__ import annotations

from collections.abc import Callable

from gieok.auth.authenticator import check_modes
from gieok.auth.jwt_verify import JwtVerifier
from gieok.auth.team import LOOPBACK
from gieok.core.dates import utcnow
from gieok.core.errors import ConfigError
from gieok.core.settings import Settings
from gieok.store.auth_base import AuthTables

Report = Callable[..., None]


async def check_auth(s: Settings, store: AuthTables | None, report: Report, echo: Callable[[str], object]) -> None:
    try:
        modes = check_modes(s)
    except ConfigError as exc:
        report(False, f"auth: {exc}", "set GIEOK_AUTH to none, apikey, jwt or apikey,jwt")
        return
    loopback = s.host.strip("[]") in {h.strip("[]") for h in LOOPBACK}
    if not modes:
        report(loopback, f"auth: none (single user; HTTP on {s.host} only)",
               "serving beyond loopback needs GIEOK_AUTH=apikey (then `gieok keys create`) or GIEOK_AUTH=jwt")
        return
    report(True, f"auth: {', '.join(sorted(modes))}; rate limit {s.rate_limit_per_min:g}/min per key "
                 f"(burst {s.rate_limit_burst}), body ≤ {s.max_body_bytes} bytes, batch ≤ {s.max_batch}")
    if "jwt" in modes:
        try:
            v = JwtVerifier(s)
            report(True, f"JWT: issuer {s.jwt_issuer}, audience {s.jwt_audience}, algorithms "
                         f"{', '.join(v.algorithms)}, leeway {s.jwt_leeway_s:g} s")
        except ConfigError as exc:
            report(False, f"JWT: {exc}", "see the README's Team server section")
        if s.jwt_jwks_url.startswith("http://") and not s.jwt_jwks_url.startswith(("http://127.", "http://localhost")):
            echo("       warning: the JWKS URL is plain http: anyone on the path could swap the IdP's keys")
    if s.rate_limit_per_min == 0:
        echo("       warning: no rate limit (GIEOK_RATE_LIMIT_PER_MIN=0)")
    if not loopback and not s.public_url.startswith("https://"):
        echo("       warning: serving beyond loopback without GIEOK_PUBLIC_URL=https://…: put TLS in front "
             "(keys and tokens travel in headers)")
    if store is None or "apikey" not in modes:
        return
    keys = await store.list_api_keys()
    now = utcnow()
    live = [k for k in keys if k.revoked_at is None and (k.expires_at is None or k.expires_at > now)]
    admins = [k for k in live if k.role == "admin"]
    report(bool(live), f"API keys: {len(live)} active ({len(admins)} admin), {len(keys) - len(live)} revoked or "
                       "expired", "create one: gieok keys create --user <you> --role admin")
    forever = [k.key_id for k in live if k.expires_at is None]
    if forever:
        echo(f"       warning: {len(forever)} key(s) never expire ({', '.join(forever[:5])}): prefer --expires 90d")

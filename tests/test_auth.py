"""Auth building blocks with real signatures: API keys, the JWT verifier against a JWKS served on 127.0.0.1
(RS256, ES256, rotation) and an HS256 secret, the refusals (expired, forged, wrong audience or issuer,
`alg: none`, algorithm confusion), the token bucket, and the Authenticator over a real store."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from gieok.auth.admin import Admin
from gieok.auth.authenticator import Authenticator, credential_from
from gieok.auth.jwks import JwksSource
from gieok.auth.jwt_verify import JwtVerifier
from gieok.auth.keys import PREFIX, generate_key, parse_expiry, parse_key, secret_matches
from gieok.auth.ratelimit import RateLimiter
from gieok.core.dates import utcnow
from gieok.core.errors import ConfigError, Forbidden, Unauthorized
from gieok.core.principal import Principal
from gieok.core.settings import Settings
from gieok.store.base import Store
from tests.fakes.idp import AUDIENCE, ISSUER, FakeIdP, alg_none_token

SECRET = "s" * 40


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _hmac_token(claims: dict[str, object], key: bytes, kid: str) -> str:
    """HS256 signed by hand (PyJWT rightly refuses to use a PEM as an HMAC key)."""
    head = _b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": kid}).encode())
    body = _b64(json.dumps(claims).encode())
    sig = _b64(hmac.new(key, f"{head}.{body}".encode(), hashlib.sha256).digest())
    return f"{head}.{body}.{sig}"


@pytest.fixture
def idp() -> Iterator[FakeIdP]:
    with FakeIdP() as f:
        yield f


def jwt_settings(tmp_path: Path, **kw: object) -> Settings:
    base: dict[str, object] = {"home": tmp_path, "auth": "jwt", "jwt_issuer": ISSUER, "jwt_audience": AUDIENCE}
    base.update(kw)
    return Settings(**base)  # type: ignore[arg-type]


def test_keys_are_recognisable_random_and_checked_in_constant_time() -> None:
    a, b = generate_key(), generate_key()
    assert a.token.startswith(PREFIX) and a.token != b.token and len(a.token) == len("gieok_") + 12 + 1 + 43
    kid, secret = parse_key(a.token) or ("", "")
    assert kid == a.key_id and len(secret) == 43          # 32 random bytes: 256 bits
    assert secret_matches(kid, secret, a.secret_hash)
    assert not secret_matches(kid, secret[:-1] + ("A" if secret[-1] != "A" else "B"), a.secret_hash)
    assert a.secret_hash != secret and secret not in a.secret_hash
    assert parse_key("gieok_nothex_x") is None and parse_key("Bearer x") is None
    now = utcnow()
    assert parse_expiry("90d", now) == now + timedelta(days=90) and parse_expiry("never", now) is None


def test_credentials_come_from_bearer_then_api_key_header_then_cookie() -> None:
    assert credential_from({"Authorization": "Bearer abc"}) == "abc"
    assert credential_from({"X-Api-Key": "k1"}) == "k1"
    assert credential_from({}, {"gieok_key": "c1"}) == "c1"
    assert credential_from({"authorization": "Basic x"}) is None


async def test_rs256_es256_from_jwks_url_with_rotation(idp: FakeIdP, tmp_path: Path) -> None:
    v = JwtVerifier(jwt_settings(tmp_path, jwt_jwks_url=idp.jwks_url),
                    jwks=JwksSource(url=idp.jwks_url, min_refetch_s=0))
    ok = await v.verify(idp.token("alice", groups=["/eng", "ops"], roles=["admin", "nonsense"]))
    assert (ok.user_id, ok.teams, ok.roles) == ("alice", ("eng", "ops"), ("admin",))
    assert (await v.verify(idp.token("bob", alg="ES256"))).roles == ("editor",)   # default role
    fetches = idp.jwks_fetches
    idp.rotate()                                   # a new kid: fetched again, once
    assert (await v.verify(idp.token("carol"))).user_id == "carol"
    assert idp.jwks_fetches == fetches + 1


async def test_every_bad_token_is_refused(idp: FakeIdP, tmp_path: Path) -> None:
    v = JwtVerifier(jwt_settings(tmp_path, jwt_jwks_url=idp.jwks_url))
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public_pem = idp.rsa_key.public_key().public_bytes(serialization.Encoding.PEM,
                                                       serialization.PublicFormat.SubjectPublicKeyInfo)
    bad = {
        "expired": idp.token("alice", ttl=-120),
        "wrong audience": idp.token("alice", aud="someone-else"),
        "wrong issuer": idp.token("alice", iss="https://evil.test"),
        "forged signature": idp.token("alice", key=other),
        "unknown kid": idp.token("alice", key=other, kid="nope"),
        "alg none": alg_none_token("alice"),
        # algorithm confusion: an HMAC keyed with the (public) RSA key
        "hs256 with public key": _hmac_token({"sub": "alice", "iss": ISSUER, "aud": AUDIENCE, "exp": 4_000_000_000},
                                             public_pem, idp.rsa_kid),
        "garbage": "not-a-token",
    }
    for what, token in bad.items():
        with pytest.raises(Unauthorized):
            await v.verify(token)
        assert what


async def test_hs256_secret_and_its_limits(tmp_path: Path, idp: FakeIdP) -> None:
    v = JwtVerifier(jwt_settings(tmp_path, jwt_secret=SECRET))
    now = int(utcnow().timestamp())
    good = jwt.encode({"sub": "dana", "iss": ISSUER, "aud": AUDIENCE, "exp": now + 60, "groups": "eng ops"},
                      SECRET, algorithm="HS256")
    assert (await v.verify(good)).teams == ("eng", "ops")
    with pytest.raises(Unauthorized):   # RS256 is not accepted when only a secret is configured
        await v.verify(idp.token("dana"))
    with pytest.raises(ConfigError):
        JwtVerifier(jwt_settings(tmp_path, jwt_secret="short"))
    with pytest.raises(ConfigError):
        JwtVerifier(jwt_settings(tmp_path, jwt_secret=SECRET, jwt_audience=""))


async def test_jwks_file_and_custom_claims(tmp_path: Path, idp: FakeIdP) -> None:
    f = tmp_path / "jwks.json"
    f.write_text(json.dumps(idp.jwks()))
    v = JwtVerifier(jwt_settings(tmp_path, jwt_jwks_file=str(f), jwt_user_claim="email",
                                 jwt_teams_claim="realm_access.groups", jwt_roles_claim="realm_access.roles"))
    t = idp.token("x", email="eve@example.com", realm_access={"groups": ["eng"], "roles": ["viewer"]})
    got = await v.verify(t)
    assert (got.user_id, got.teams, got.roles) == ("eve@example.com", ("eng",), ("viewer",))


def test_token_bucket() -> None:
    rl = RateLimiter(per_min=60, burst=3)
    assert [rl.take("k", now=0.0) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert rl.take("k", now=0.0) == pytest.approx(1.0)
    assert rl.take("other", now=0.0) == 0.0          # per key
    assert rl.take("k", now=1.0) == 0.0              # one token a second refills


@pytest.fixture
async def admin(store: Store) -> AsyncIterator[Admin]:
    yield Admin(store, Principal("cli:test", roles=("admin",)))


async def test_authenticator_keys_revocation_expiry_and_acting(admin: Admin, store: Store, tmp_path: Path) -> None:
    auth = Authenticator(Settings(home=tmp_path, auth="apikey"), store)
    made = await admin.create_key("alice", teams=["eng"], role="editor", name="laptop")
    p = await auth.authenticate(made.key.token)
    assert (p.user_id, p.teams, p.role, p.key_id, p.via) == ("alice", ("eng",), "editor", made.key.key_id, "apikey")
    with pytest.raises(Unauthorized):
        await auth.authenticate(made.key.token[:-2] + "xx")
    with pytest.raises(Unauthorized):
        await auth.authenticate("gieok_000000000000_" + "A" * 43)
    with pytest.raises(Forbidden):
        await auth.act_for(p, "bob")
    boss = await auth.authenticate((await admin.create_key("root", role="admin")).key.token)
    acting = await auth.act_for(boss, "alice")
    assert (acting.user_id, acting.teams, acting.acting_for) == ("alice", ("eng",), "root")
    await admin.revoke_key(made.key.key_id)
    with pytest.raises(Unauthorized, match="revoked"):
        await auth.authenticate(made.key.token)
    old = await admin.create_key("alice", expires="1h")
    await store.revoke_api_key(old.key.key_id, utcnow())
    assert (await store.get_api_key(old.key.key_id)) is not None
    rows = [k.public() for k in await store.list_api_keys("alice")]
    assert all("secret_hash" not in r for r in rows) and all(made.key.token not in json.dumps(r) for r in rows)
    audit = await store.list_audit(user_id=None)
    assert [e.action for e in audit][:2] == ["keys create", "keys create"]

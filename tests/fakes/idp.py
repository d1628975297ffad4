"""A fake identity provider on 127.0.0.1: RSA and EC signing keys generated per test run, their JWKS served at
`/jwks.json`, and tokens minted with real signatures. gieok's real JWKS client and verifier talk to it over
HTTP; `rotate()` swaps in a new RSA key, as an IdP rotating keys does.

It also plays an OpenID Connect provider for the dashboard's sign-in (authorization code + PKCE): discovery at
`/.well-known/openid-configuration`, `/authorize` signs in `login_as` at once and sends the browser back with a
code, `/token` redeems it (checking the PKCE verifier, client and redirect URI) for an access token and an ID
token carrying the nonce. `public_host` names it in the URLs it hands out (`localhost`: another site than
127.0.0.1, as a real IdP is)."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar
from urllib.parse import parse_qs, urlencode, urlsplit

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from tests.fakes.background_http import BackgroundHTTPServer, JSONHandler

ISSUER = "https://idp.test"
AUDIENCE = "gieok-test"


class _Handler(JSONHandler):
    fake: FakeIdP

    def do_GET(self) -> None:
        path, _, query = self.path.partition("?")
        if path == "/jwks.json":
            self.fake.jwks_fetches += 1
            self._json(200, self.fake.jwks())
        elif path == "/.well-known/openid-configuration":
            base = self.fake.public_url
            self._json(200, {"issuer": ISSUER, "authorization_endpoint": base + "/authorize",
                             "token_endpoint": base + "/token", "jwks_uri": base + "/jwks.json"})
        elif path == "/authorize":
            q = {k: v[0] for k, v in parse_qs(query).items()}
            code = secrets.token_urlsafe(16)
            self.fake.codes[code] = q
            back = q["redirect_uri"] + "?" + urlencode({"code": code, "state": q.get("state", "")})
            self.send_response(302)
            self.send_header("Location", back)
            self.send_header("Content-Length", "0")
            self.end_headers()
        else:
            self._json(404, {"error": "not found"})

    def do_POST(self) -> None:
        if self.path != "/token":
            self._json(404, {"error": "not found"})
            return
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
        form = {k: v[0] for k, v in parse_qs(body).items()}
        asked = self.fake.codes.pop(form.get("code", ""), None)
        verifier = form.get("code_verifier", "")
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        if (asked is None or asked.get("code_challenge") != challenge or asked.get("redirect_uri") !=
                form.get("redirect_uri") or asked.get("client_id") != form.get("client_id")):
            self._json(400, {"error": "invalid_grant"})
            return
        sub, groups, roles = self.fake.login_as
        self._json(200, {"token_type": "Bearer", "expires_in": 300,
                         "access_token": self.fake.token(sub, groups=groups, roles=roles),
                         "id_token": self.fake.token(sub, aud=form["client_id"], nonce=asked.get("nonce", ""))})


@dataclass
class FakeIdP(BackgroundHTTPServer):
    handler_base: ClassVar[type] = _Handler
    thread_name: ClassVar[str] = "fake-idp"
    rsa_key: Any = field(default_factory=lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048))
    ec_key: Any = field(default_factory=lambda: ec.generate_private_key(ec.SECP256R1()))
    rsa_kid: str = "rsa-1"
    jwks_fetches: int = 0
    public_host: str = "localhost"
    login_as: tuple[str, list[str], list[str]] = ("carol", ["ops"], ["editor"])
    codes: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def public_url(self) -> str:
        parts = urlsplit(self.url)
        return f"{parts.scheme}://{self.public_host}:{parts.port}"

    def jwks(self) -> dict[str, Any]:
        r = json.loads(RSAAlgorithm.to_jwk(self.rsa_key.public_key()))
        e = json.loads(ECAlgorithm.to_jwk(self.ec_key.public_key()))
        return {"keys": [{**r, "kid": self.rsa_kid, "use": "sig", "alg": "RS256"},
                         {**e, "kid": "ec-1", "use": "sig", "alg": "ES256"}]}

    @property
    def jwks_url(self) -> str:
        return self.url + "/jwks.json"

    def rotate(self) -> None:
        self.rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.rsa_kid = f"rsa-{int(time.time() * 1000)}"

    def token(self, sub: str, *, groups: list[str] | None = None, roles: list[str] | None = None,
              alg: str = "RS256", aud: str = AUDIENCE, iss: str = ISSUER, ttl: float = 300,
              key: Any = None, kid: str | None = None, **extra: Any) -> str:
        now = int(time.time())
        claims = {"sub": sub, "iss": iss, "aud": aud, "iat": now, "exp": now + int(ttl), "jti": f"{sub}-{now}",
                  **({"groups": groups} if groups is not None else {}),
                  **({"roles": roles} if roles is not None else {}), **extra}
        if alg == "ES256":
            return jwt.encode(claims, key or self.ec_key, algorithm="ES256", headers={"kid": kid or "ec-1"})
        return jwt.encode(claims, key or self.rsa_key, algorithm=alg, headers={"kid": kid or self.rsa_kid})


def alg_none_token(sub: str, aud: str = AUDIENCE, iss: str = ISSUER) -> str:
    """An unsigned token (`alg: none`) claiming to be `sub`: must always be refused."""
    now = int(time.time())
    return jwt.encode({"sub": sub, "iss": iss, "aud": aud, "iat": now, "exp": now + 300}, None, algorithm="none")

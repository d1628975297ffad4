"""A fake identity provider on 127.0.0.1: RSA and EC signing keys generated per test run, their JWKS served at
`/jwks.json`, and tokens minted with real signatures. gieok's real JWKS client and verifier talk to it over
HTTP; `rotate()` swaps in a new RSA key, as an IdP rotating keys does."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from tests.fakes.background_http import BackgroundHTTPServer, JSONHandler

ISSUER = "https://idp.test"
AUDIENCE = "gieok-test"


class _Handler(JSONHandler):
    fake: FakeIdP

    def do_GET(self) -> None:
        if self.path == "/jwks.json":
            self.fake.jwks_fetches += 1
            self._json(200, self.fake.jwks())
        else:
            self._json(404, {"error": "not found"})


@dataclass
class FakeIdP(BackgroundHTTPServer):
    handler_base: ClassVar[type] = _Handler
    thread_name: ClassVar[str] = "fake-idp"
    rsa_key: Any = field(default_factory=lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048))
    ec_key: Any = field(default_factory=lambda: ec.generate_private_key(ec.SECP256R1()))
    rsa_kid: str = "rsa-1"
    jwks_fetches: int = 0

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

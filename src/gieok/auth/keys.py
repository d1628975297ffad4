"""API keys: `gieok_<key id>_<secret>`. The prefix makes a leaked key recognisable (secret scanners, logs);
the key id (48 random bits, shown by `gieok keys list`) finds the record; the secret is 256 random bits.

Only a SHA-256 of key id and secret is stored. A slow password hash (argon2, bcrypt) protects guessable
passwords; a 256-bit random secret cannot be guessed, so a fast hash is enough and keeps every request's check
in microseconds. The comparison is constant-time (`hmac.compare_digest`).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from gieok.core.errors import InvalidInput

PREFIX = "gieok_"
SECRET_BYTES = 32                    # 256 bits
_KEY_RE = re.compile(r"^gieok_([0-9a-f]{12})_([A-Za-z0-9_-]{43})$")


@dataclass(frozen=True, slots=True)
class NewKey:
    key_id: str
    secret_hash: str
    token: str                       # shown once, never stored


def _hash(key_id: str, secret: str) -> str:
    return hashlib.sha256(f"{key_id}:{secret}".encode()).hexdigest()


def generate_key() -> NewKey:
    key_id = secrets.token_hex(6)
    secret = secrets.token_urlsafe(SECRET_BYTES)   # 43 characters
    return NewKey(key_id, _hash(key_id, secret), f"{PREFIX}{key_id}_{secret}")


def looks_like_key(token: str) -> bool:
    return token.startswith(PREFIX)


def parse_key(token: str) -> tuple[str, str] | None:
    """(key id, secret) of a well-formed key, else None."""
    m = _KEY_RE.match(token.strip())
    return (m.group(1), m.group(2)) if m else None


def secret_matches(key_id: str, secret: str, stored_hash: str) -> bool:
    return hmac.compare_digest(_hash(key_id, secret), stored_hash)


_DURATION = re.compile(r"^\s*(\d+)\s*([dhwmy]?)\s*$", re.I)
_UNITS = {"h": timedelta(hours=1), "d": timedelta(days=1), "w": timedelta(weeks=1), "m": timedelta(days=30),
          "y": timedelta(days=365), "": timedelta(days=1)}


def parse_expiry(value: str | None, now: datetime) -> datetime | None:
    """`90d`, `12h`, `2w`, `6m`, `1y` (or `never`) from now."""
    if value is None or value.strip().lower() in ("", "never", "none"):
        return None
    m = _DURATION.match(value)
    if not m or int(m.group(1)) <= 0:
        raise InvalidInput("expires", f"{value!r} is not a duration: use e.g. 90d, 12h, 2w, 6m, 1y or never")
    return now + int(m.group(1)) * _UNITS[m.group(2).lower()]

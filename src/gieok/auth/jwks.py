"""The IdP's signing keys (a JWKS), from a file or a URL, cached; a token signed with a key id we have not seen
makes us fetch again (key rotation), at most once per `min_refetch_s` so forged key ids cannot make us hammer
the IdP."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
import jwt

from gieok.core.errors import ConfigError

MIN_REFETCH_S = 10.0
FETCH_TIMEOUT_S = 10.0


class JwksSource:
    def __init__(self, *, url: str = "", file: str = "", ttl_s: float = 600.0,
                 min_refetch_s: float = MIN_REFETCH_S) -> None:
        if bool(url) == bool(file):
            raise ConfigError("set exactly one of GIEOK_JWT_JWKS_URL and GIEOK_JWT_JWKS_FILE")
        self.url, self.file, self.ttl_s, self.min_refetch_s = url, file, ttl_s, min_refetch_s
        self._keys: dict[str, jwt.PyJWK] = {}
        self._fetched = 0.0          # monotonic time of the last successful load
        self._tried = 0.0            # … of the last attempt (success or not)
        self._mtime = 0.0
        self._lock = anyio.Lock()

    async def key(self, kid: str | None) -> jwt.PyJWK | None:
        """The key for `kid` (or the only key, when the token names none)."""
        now = time.monotonic()
        stale = now - self._fetched > self.ttl_s or (self.file and self._file_changed())
        found = self._pick(kid)
        if found is None or stale:
            async with self._lock:
                found = self._pick(kid)
                now = time.monotonic()
                if (stale or found is None) and now - self._tried >= (0 if stale else self.min_refetch_s):
                    await self._load()
                    found = self._pick(kid)
        return found

    def _pick(self, kid: str | None) -> jwt.PyJWK | None:
        if kid is not None:
            return self._keys.get(kid)
        return next(iter(self._keys.values())) if len(self._keys) == 1 else None

    def _file_changed(self) -> bool:
        try:
            return Path(self.file).stat().st_mtime != self._mtime
        except OSError:
            return False

    async def _load(self) -> None:
        self._tried = time.monotonic()
        try:
            data = await (self._read_file() if self.file else self._fetch())
        except (OSError, ValueError, httpx2.HTTPError) as exc:
            if not self._keys:
                raise ConfigError(f"cannot load the JWKS from {self.url or self.file}: {exc}") from exc
            return  # keep the keys we have; try again after MIN_REFETCH_S
        keys: dict[str, jwt.PyJWK] = {}
        for i, jwk in enumerate(data.get("keys", []) if isinstance(data, dict) else []):
            if jwk.get("use", "sig") != "sig":
                continue
            try:
                k = jwt.PyJWK(jwk)
            except (jwt.PyJWKError, jwt.InvalidKeyError, ValueError):
                continue  # a key type we cannot use (e.g. an encryption key): skip it, keep the rest
            keys[k.key_id or f"#{i}"] = k
        if keys:
            self._keys = keys
            self._fetched = time.monotonic()

    async def _read_file(self) -> Any:
        p = Path(self.file).expanduser()
        self._mtime = p.stat().st_mtime
        return json.loads(await anyio.Path(p).read_text())

    async def _fetch(self) -> Any:
        async with httpx2.AsyncClient(timeout=FETCH_TIMEOUT_S, follow_redirects=False) as client:
            resp = await client.get(self.url, headers={"Accept": "application/json"})
            resp.raise_for_status()
            return resp.json()

"""JSON over HTTP to a provider (embedding or LLM): one client per call, one translation of transport and
status errors into the gieok error tree. Used by `gieok.providers.embed` and `gieok.providers.llm`.

`setting` names the family of settings the error hints point at: "EMBEDDING" → GIEOK_EMBEDDING_URL, …
"""

from __future__ import annotations

import contextlib
import functools
import json
import ssl
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx2

from gieok.core.errors import MalformedAnswer, PermanentProviderError, RejectedInput, TransientProviderError

# Statuses worth retrying: the provider is overloaded, rate-limiting us, or briefly broken.
_TRANSIENT_STATUS = frozenset({408, 409, 425, 429})
# Statuses that refuse the request's content (one bad input), not the caller: its neighbours may pass alone.
_INPUT_STATUS = frozenset({400, 413, 422})
SNIPPET = 300


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    # ~20 ms to load the CA bundle; paid once, not on every call. Honours SSL_CERT_FILE like httpx does.
    return httpx2.create_ssl_context()


def _hint_for(setting: str, status: int, body: str) -> str:
    if status in (401, 403) or "API_KEY" in body or "api key" in body.lower():
        return f"check GIEOK_{setting}_API_KEY"
    if status == 404:
        return f"check GIEOK_{setting}_URL and GIEOK_{setting}_MODEL"
    if setting == "EMBEDDING":
        return "check GIEOK_EMBEDDING_MODEL and GIEOK_EMBEDDING_DIMENSIONS"
    return f"check GIEOK_{setting}_MODEL (and that GIEOK_{setting}_URL serves this API)"


class JsonPoster:
    """POSTs JSON and returns the decoded answer, raising only gieok provider errors.

    Use `async with poster.session():` around the requests of one call, or `await poster.post(...)` for one
    request. Each session gets its own client: pooled connections are bound to the event loop that opened
    them (the CLI may run several loops in one process) and the provider seams have no close hook, so a
    long-lived pool would leak sockets. The costly part of a client, the TLS context, is built once.
    """

    def __init__(self, label: str, timeout: float, headers: dict[str, str], setting: str) -> None:
        self.label = label
        self.timeout = timeout
        self.setting = setting
        self._headers = headers

    @contextlib.asynccontextmanager
    async def session(self) -> AsyncIterator[Session]:
        client = httpx2.AsyncClient(timeout=self.timeout, headers=self._headers, verify=_ssl_context())
        async with client:
            yield Session(self, client)

    async def post(self, url: str, payload: dict[str, Any]) -> Any:
        async with self.session() as s:
            return await s.post(url, payload)


class Session:
    """The requests of one call, sharing one client."""

    def __init__(self, poster: JsonPoster, client: httpx2.AsyncClient) -> None:
        self.label = poster.label
        self.timeout = poster.timeout
        self.setting = poster.setting
        self._client = client

    async def post(self, url: str, payload: dict[str, Any]) -> Any:
        url_var = f"GIEOK_{self.setting}_URL"
        try:
            # httpx's timeout bounds each phase; a server trickling bytes could still hold us for minutes.
            # The outer deadline bounds the whole request.
            with anyio.fail_after(self.timeout * 1.5):
                resp = await self._client.post(url, json=payload)
        except (TimeoutError, httpx2.TimeoutException) as exc:
            raise TransientProviderError(
                f"{self.label} did not answer within {self.timeout:g}s (GIEOK_PROVIDER_TIMEOUT_S)") from exc
        except (httpx2.UnsupportedProtocol, httpx2.InvalidURL) as exc:
            raise PermanentProviderError(
                f"{self.label}: {url!r} is not a usable http(s) URL; check {url_var}") from exc
        except httpx2.TransportError as exc:
            raise TransientProviderError(f"{self.label} is unreachable: {exc!r}") from exc
        except httpx2.HTTPError as exc:  # decoding errors, redirect loops: the answer itself is unusable
            raise MalformedAnswer(f"{self.label} sent an unusable answer: {exc!r}") from exc
        return self._decode(resp, url_var)

    def _decode(self, resp: httpx2.Response, url_var: str) -> Any:
        status = resp.status_code
        if 300 <= status < 400:
            raise PermanentProviderError(
                f"{self.label} redirected to {resp.headers.get('location', '?')} — check {url_var}")
        if status >= 400:
            body = resp.text[:SNIPPET]
            msg = f"{self.label} answered HTTP {status}: {body}"
            if status >= 500 or status in _TRANSIENT_STATUS:
                retry = resp.headers.get("retry-after")
                raise TransientProviderError(msg + (f" (retry after {retry}s)" if retry else ""))
            error = RejectedInput if status in _INPUT_STATUS else PermanentProviderError
            raise error(f"{msg} — {_hint_for(self.setting, status, body)}")
        try:
            return json.loads(resp.content)
        except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError: often a truncated answer
            raise MalformedAnswer(
                f"{self.label} answer did not match its API: HTTP {status} body is not JSON: "
                f"{resp.text[:SNIPPET]!r}; check {url_var}") from exc

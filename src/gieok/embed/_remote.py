"""What the HTTP embedders share: a client per call, one translation of transport and status errors into the
gieok error tree, and one check that an answer is a usable matrix.

Private: the OpenAI-compatible and Gemini modules are the public surface.
"""

from __future__ import annotations

import contextlib
import functools
import json
import ssl
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import anyio
import httpx2
import numpy as np
import numpy.typing as npt

from gieok.errors import PermanentProviderError, TransientProviderError

# Statuses worth retrying: the provider is overloaded, rate-limiting us, or briefly broken.
_TRANSIENT_STATUS = frozenset({408, 429})
_SNIPPET = 300


def batches(texts: Sequence[str], size: int) -> Iterator[list[str]]:
    for i in range(0, len(texts), size):
        yield list(texts[i : i + size])


def non_empty(texts: Sequence[str]) -> list[str]:
    # OpenAI (and Gemini) answer 400 to an empty input string, which would fail the whole batch around it.
    # A lone space embeds as "nothing in particular", which is what an empty memory means.
    return [t if t.strip() else " " for t in texts]


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    # ~20 ms to load the CA bundle; paid once, not on every call. Honours SSL_CERT_FILE like httpx does.
    return httpx2.create_ssl_context()


def _hint_for(status: int, body: str) -> str:
    if status in (401, 403) or "API_KEY" in body or "api key" in body.lower():
        return "check GIEOK_EMBEDDING_API_KEY"
    if status == 404:
        return "check GIEOK_EMBEDDING_URL and GIEOK_EMBEDDING_MODEL"
    return "check GIEOK_EMBEDDING_MODEL and GIEOK_EMBEDDING_DIMENSIONS"


class JsonPoster:
    """POSTs JSON and returns the decoded answer, raising only gieok provider errors.

    Use `async with poster.session():` around the requests of one embed call. Each call gets its own
    client: pooled connections are bound to the event loop that opened them (the CLI may run several loops in
    one process) and the `Embedder` seam has no close hook, so a long-lived pool would leak sockets. Batches
    of one call share a connection; the costly part of a client, the TLS context, is built once per process.
    """

    def __init__(self, label: str, timeout: float, headers: dict[str, str]) -> None:
        self.label = label
        self.timeout = timeout
        self._headers = headers

    @contextlib.asynccontextmanager
    async def session(self) -> AsyncIterator[Session]:
        client = httpx2.AsyncClient(timeout=self.timeout, headers=self._headers, verify=_ssl_context())
        async with client:
            yield Session(self, client)


class Session:
    """The requests of one embed call, sharing one client."""

    def __init__(self, poster: JsonPoster, client: httpx2.AsyncClient) -> None:
        self.label = poster.label
        self.timeout = poster.timeout
        self._client = client

    async def post(self, url: str, payload: dict[str, Any]) -> Any:
        try:
            # httpx's timeout bounds each phase; a server trickling bytes could still hold us for minutes.
            # The outer deadline bounds the whole request.
            with anyio.fail_after(self.timeout * 1.5):
                resp = await self._client.post(url, json=payload)
        except (TimeoutError, httpx2.TimeoutException) as exc:
            raise TransientProviderError(
                f"{self.label} did not answer within {self.timeout:g}s (GIEOK_PROVIDER_TIMEOUT_S)") from exc
        except httpx2.UnsupportedProtocol as exc:
            raise PermanentProviderError(
                f"{self.label}: {url!r} is not an http(s) URL; check GIEOK_EMBEDDING_URL") from exc
        except httpx2.InvalidURL as exc:
            raise PermanentProviderError(f"{self.label}: invalid URL; check GIEOK_EMBEDDING_URL") from exc
        except httpx2.TransportError as exc:
            raise TransientProviderError(f"{self.label} is unreachable: {exc!r}") from exc
        except httpx2.HTTPError as exc:  # decoding errors, redirect loops: the answer itself is unusable
            raise PermanentProviderError(f"{self.label} sent an unusable answer: {exc!r}") from exc
        return self._decode(resp)

    def _decode(self, resp: httpx2.Response) -> Any:
        status = resp.status_code
        if 300 <= status < 400:
            raise PermanentProviderError(
                f"{self.label} redirected to {resp.headers.get('location', '?')} — check GIEOK_EMBEDDING_URL")
        if status >= 400:
            body = resp.text[:_SNIPPET]
            msg = f"{self.label} answered HTTP {status}: {body}"
            if status >= 500 or status in _TRANSIENT_STATUS:
                retry = resp.headers.get("retry-after")
                raise TransientProviderError(msg + (f" (retry after {retry}s)" if retry else ""))
            raise PermanentProviderError(f"{msg} — {_hint_for(status, body)}")
        try:
            return json.loads(resp.content)
        except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
            raise PermanentProviderError(
                f"{self.label} answered HTTP {status} with something that is not JSON: "
                f"{resp.text[:_SNIPPET]!r}") from exc


def to_unit_matrix(rows: list[Any], n: int, dim: int | None, label: str) -> npt.NDArray[np.float32]:
    """Check that `rows` is `n` numeric vectors of one length (`dim` if known) and L2-normalise them."""
    if len(rows) != n:
        raise PermanentProviderError(f"{label} returned {len(rows)} vectors for {n} texts")
    try:
        m = np.asarray(rows, dtype=np.float32)
    except (TypeError, ValueError) as exc:  # ragged lists, strings, nulls
        raise PermanentProviderError(f"{label} returned vectors that are not lists of numbers") from exc
    if m.ndim != 2 or m.shape[1] == 0:
        raise PermanentProviderError(f"{label} returned vectors of shape {m.shape}")
    if dim is not None and m.shape[1] != dim:
        raise PermanentProviderError(
            f"{label} returned {m.shape[1]}-d vectors, expected {dim} — check GIEOK_EMBEDDING_DIMENSIONS "
            "and GIEOK_EMBEDDING_MODEL")
    if not np.isfinite(m).all():
        raise PermanentProviderError(f"{label} returned non-finite numbers")
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    if (norms == 0).any():
        raise PermanentProviderError(f"{label} returned a zero vector")
    return m / norms

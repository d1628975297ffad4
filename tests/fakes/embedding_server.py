"""A fake embeddings provider speaking both the OpenAI and the Gemini wire format, on 127.0.0.1.

Remote embedding APIs cannot run here, so this stands in for them in tests. Its vectors are a hashed bag of
words: texts sharing words have a higher cosine, which is enough for retrieval tests to mean something.
Switch `mode` (or call `fail`) to play a provider that is down, slow, talking garbage or refusing the key:

    with FakeEmbeddingServer() as server:
        emb = OpenAICompatEmbedder(server.openai_url, "fake", timeout=0.5)
        server.mode = "down"          # every request now answers 503
        server.fail("slow", times=2)  # the next two requests stall, then back to `mode`
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np

from tests.fakes.background_http import BackgroundHTTPServer, JSONHandler

Mode = Literal["ok", "down", "slow", "garbage", "wrong_dims", "wrong_count", "unauthorized", "rate_limited"]
MODES: tuple[Mode, ...] = ("ok", "down", "slow", "garbage", "wrong_dims", "wrong_count", "unauthorized",
                           "rate_limited")

_GEMINI_PATH = re.compile(r"^/v1beta/models/(?P<model>[^/:]+):batchEmbedContents$")


def fake_vector(text: str, dim: int) -> np.ndarray:
    """The unit vector the server returns for `text`: a signed, hashed bag of lower-cased words."""
    v = np.zeros(dim, dtype=np.float64)
    words = re.findall(r"\w+", text.lower()) or [text]
    for w in words:
        h = hashlib.blake2b(w.encode("utf-8"), digest_size=8).digest()
        v[int.from_bytes(h[:4], "little") % dim] += 1.0 if h[4] & 1 else -1.0
    n = np.linalg.norm(v)
    if n == 0:  # words whose signs cancelled out: any fixed direction will do
        v[0], n = 1.0, 1.0
    return v / n


@dataclass
class Seen:
    """One request as the server saw it."""

    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class FakeEmbeddingServer(BackgroundHTTPServer):
    """Start with `with FakeEmbeddingServer() as s:` (or `start()` / `stop()`).

    `dim` is the size returned when the request does not ask for one (`dimensions` / `outputDimensionality`).
    `api_key`, when set, must arrive as `Authorization: Bearer …`, `x-goog-api-key` or `?key=`, else 401.
    `slow_seconds` is how long "slow" stalls (keep it above the client's timeout).
    `reverse_order` answers OpenAI requests with `data` reversed (indices intact), as the spec allows.
    `poison`: requests holding this text get a truncated answer, whatever the mode.
    """

    dim: int = 64
    mode: Mode = "ok"
    api_key: str = ""
    slow_seconds: float = 5.0
    reverse_order: bool = False
    # A request whose body contains this text is answered with a truncated body (one bad row in a batch).
    poison: str = ""
    requests: list[Seen] = field(default_factory=list)
    _overrides: list[Mode] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    thread_name: ClassVar[str] = "fake-embeddings"

    # -- what tests use ----------------------------------------------------

    @property
    def openai_url(self) -> str:
        return self.url + "/v1"

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self.requests)

    def fail(self, mode: Mode, times: int = 1) -> None:
        """Answer the next `times` requests in `mode`, then go back to `self.mode`."""
        with self._lock:
            self._overrides.extend([mode] * times)

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self._overrides.clear()
        self.mode = "ok"

    def _next_mode(self, seen: Seen) -> Mode:
        with self._lock:
            self.requests.append(seen)
            return self._overrides.pop(0) if self._overrides else self.mode


class _Handler(JSONHandler):
    fake: FakeEmbeddingServer

    def _authorised(self) -> bool:
        key = self.fake.api_key
        if not key:
            return True
        query_key = re.search(r"[?&]key=([^&]+)", self.path)
        return key in (
            self.headers.get("Authorization", "").removeprefix("Bearer "),
            self.headers.get("x-goog-api-key", ""),
            query_key.group(1) if query_key else "",
        )

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body: Any = json.loads(raw or b"{}")
        except ValueError:
            body = None
        path = self.path.split("?", 1)[0]
        mode = self.fake._next_mode(Seen(path, {k.lower(): v for k, v in self.headers.items()}, body))

        if mode == "slow":
            self.fake._stopping.wait(self.fake.slow_seconds)
            mode = "ok"
        if mode == "down":
            return self._json(503, {"error": {"message": "fake provider is down", "code": 503}})
        if mode == "rate_limited":
            self.send_response(429)
            self.send_header("Retry-After", "1")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        if mode == "unauthorized" or not self._authorised():
            return self._json(401, {"error": {"message": "Incorrect API key provided", "code": 401}})
        if mode == "garbage" or (self.fake.poison and self.fake.poison.encode() in raw):
            return self._send(200, b'{"data": [{"embedding": [0.1, 0.2', "text/html")

        if path in ("/v1/embeddings", "/embeddings"):
            return self._openai(body, mode)
        if m := _GEMINI_PATH.match(path):
            return self._gemini(body, m.group("model"), mode)
        return self._json(404, {"error": {"message": f"no route {path}", "code": 404}})

    def _vectors(self, texts: list[str], dim: int, mode: Mode) -> list[list[float]]:
        if mode == "wrong_dims":
            dim += 1
        vecs = [fake_vector(t, dim).tolist() for t in texts]
        return vecs[:-1] if mode == "wrong_count" else vecs

    def _openai(self, body: Any, mode: Mode) -> None:
        inp = body.get("input") if isinstance(body, dict) else None
        texts = [inp] if isinstance(inp, str) else inp
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) and t for t in texts):
            # Like OpenAI: an empty list or an empty string is a 400.
            return self._json(400, {"error": {"message": "'input' is invalid", "code": 400}})
        dim = int(body.get("dimensions") or self.fake.dim)
        data = [{"object": "embedding", "index": i, "embedding": v}
                for i, v in enumerate(self._vectors(texts, dim, mode))]
        if self.fake.reverse_order:
            data.reverse()
        return self._json(200, {"object": "list", "data": data, "model": body.get("model")})

    def _gemini(self, body: Any, model: str, mode: Mode) -> None:
        reqs = body.get("requests") if isinstance(body, dict) else None
        bad = {"error": {"message": "bad request", "status": "INVALID_ARGUMENT"}}
        if not isinstance(reqs, list) or not reqs:
            return self._json(400, bad)
        try:
            texts = [r["content"]["parts"][0]["text"] for r in reqs]
            dims = {int(r.get("outputDimensionality") or self.fake.dim) for r in reqs}
            models = {r.get("model") for r in reqs}
        except (TypeError, KeyError, IndexError, AttributeError, ValueError):
            return self._json(400, bad)
        if len(dims) != 1 or models != {f"models/{model}"}:
            return self._json(400, bad)
        vecs = self._vectors(texts, dims.pop(), mode)
        return self._json(200, {"embeddings": [{"values": v} for v in vecs]})


FakeEmbeddingServer.handler_base = _Handler

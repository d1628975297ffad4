"""Exact nearest-neighbour scores over a process's vector matrix, on every core for a large one.

A matrix-vector product over 100,000 × 384 float32 (154 MB) is bound by memory bandwidth, which one core does
not fill: measured here 18 ms on one thread, 11 ms split over two. numpy releases the GIL inside the product,
so row blocks run side by side on a small pool of threads; a small matrix (most users) stays on the calling
thread, where a hand-off would cost more than it saves. The answer is the same exact product either way.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import numpy.typing as npt

__all__ = ["scores"]

# Below this many rows one thread is as fast (the product takes ~4 ms or less).
SPLIT_MIN_ROWS = 20_000
# Threads for the product: the machine's cores, at most 4 (bandwidth stops growing well before that).
_THREADS = max(1, min(4, os.cpu_count() or 1))
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(_THREADS, thread_name_prefix="gieok-knn")
        return _pool


def scores(mat: npt.NDArray[np.float32], query: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """`mat @ query`, split into row blocks computed in parallel when `mat` is large."""
    q = np.ascontiguousarray(query, dtype=np.float32)
    n = mat.shape[0]
    if n < SPLIT_MIN_ROWS or _THREADS == 1:
        return np.asarray(mat @ q, dtype=np.float32)
    out = np.empty(n, dtype=np.float32)
    bounds = np.linspace(0, n, _THREADS + 1, dtype=np.int64)

    def block(i: int) -> None:
        lo, hi = int(bounds[i]), int(bounds[i + 1])
        np.dot(mat[lo:hi], q, out=out[lo:hi])

    for f in [_executor().submit(block, i) for i in range(_THREADS)]:
        f.result()
    return out

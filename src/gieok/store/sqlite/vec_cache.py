"""The in-process vector matrix of one SQLite partition (a user's rows, a team's, the public ones) and one model,
which `search.py` scans exactly with numpy and refreshes through `embed_gen`.

Rows the librarian embeds are appended in place, into room kept at the end of the matrix: copying the whole
matrix for each new batch (as `np.vstack` does) cost a search that followed a write ~105 ms at 100,000 × 384
(p50 on this 2-core machine, up to 330 ms), so on a server whose librarian embeds all day nearly every search
paid it. The room is a quarter of the rows (at least `MIN_ROOM`), so a copy happens once per that many new
rows and the matrix holds at most 25% more than it needs.

A cache is never changed under a reader: a search holds the `VecCache` it started with, whose views end at
its own row count, and appends only write beyond that. A row whose vector changes (re-embedded, or moved
between partitions) is the exception: the matrix is copied without it, as before, since overwriting it in
place could tear a vector another thread is reading. Callers serialise `extended` (the store's lock).

A cache also remembers its last few queries' scores: a search naming a date scans again for the best rows of
each window it names, with the same query vector (one scan of 100,000 rows: 15–25 ms here). A cache that
changes is a new object, so what it remembers is never stale.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np

TIME = "datetime64[us]"
MIN_ROOM = 1024
# Query vectors whose scores a cache keeps (a search asks for at most 1 + 3 windows' worth with one vector).
REMEMBERED = 4


@dataclass(frozen=True, slots=True)
class _Buffers:
    """The arrays a cache's views point into, shared by the caches appended from one another."""

    seqs: np.ndarray            # int64 (capacity,)
    mat: np.ndarray             # float32 (capacity, dim)
    created: np.ndarray         # datetime64[us] (capacity,)
    index: dict[int, int]       # seq → row, for the rows written so far


@dataclass(frozen=True, slots=True)
class VecCache:
    """A partition's vectors as of `gen` (the highest embed_gen loaded): `seqs`, `mat` (L2-normalised rows) and
    `created` (creation times, which never change: date-window searches) are views of the first rows of the
    shared buffers."""

    seqs: np.ndarray
    mat: np.ndarray
    gen: int
    created: np.ndarray
    _buf: _Buffers | None = field(default=None, repr=False)
    _memo: dict[bytes, np.ndarray] = field(default_factory=dict, repr=False, compare=False)
    _memo_lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def scores(self, query: np.ndarray) -> np.ndarray:
        """Every row's cosine to `query` (read-only: shared with the next search asking with the same vector)."""
        key = query.tobytes()
        with self._memo_lock:
            got = self._memo.get(key)
        if got is not None:
            return got
        # numpy's own SIMD loop for a matrix times a vector: OpenBLAS's sgemv on one thread took twice as long
        # (100k × 384: p50 13.3 ms against 6.8 ms, measured on this 2-core machine).
        got = np.einsum("ij,j->i", self.mat, query)
        got.flags.writeable = False
        with self._memo_lock:
            self._memo[key] = got
            while len(self._memo) > REMEMBERED:
                del self._memo[next(iter(self._memo))]
        return got

    @classmethod
    def empty(cls) -> VecCache:
        return cls(np.zeros(0, np.int64), np.zeros((0, 0), np.float32), 0, np.zeros(0, TIME))

    @classmethod
    def of(cls, seqs: np.ndarray, mat: np.ndarray, gen: int, created: np.ndarray) -> VecCache:
        """A cache of exactly these rows, with room to append more."""
        n, dim = mat.shape
        cap = n + max(MIN_ROOM, n // 4)
        buf = _Buffers(np.empty(cap, np.int64), np.empty((cap, dim), np.float32), np.empty(cap, TIME), {})
        return cls._write(buf, 0, seqs, mat, gen, created)

    @classmethod
    def _write(cls, buf: _Buffers, at: int, seqs: np.ndarray, mat: np.ndarray, gen: int,
               created: np.ndarray) -> VecCache:
        end = at + len(seqs)
        buf.seqs[at:end], buf.mat[at:end], buf.created[at:end] = seqs, mat, created
        buf.index.update(zip(seqs.tolist(), range(at, end), strict=True))
        return cls(buf.seqs[:end], buf.mat[:end], gen, buf.created[:end], buf)

    def extended(self, seqs: np.ndarray, mat: np.ndarray, gen: int, created: np.ndarray) -> VecCache:
        """This cache with the rows loaded since `gen`: appended in place when all are new rows and there is
        room (the common case: rows the librarian embedded), else a copy."""
        n = len(self.seqs)
        buf = self._buf
        if buf is None or n == 0 or mat.shape[1] != self.mat.shape[1]:
            return VecCache.of(seqs, mat, gen, created)
        changed = any(s in buf.index for s in seqs.tolist())
        if changed or n != len(buf.index) or n + len(seqs) > len(buf.seqs):
            # A copy with room again: a changed vector (its old row left out, never overwritten under a reader),
            # no room left, or another cache already appended from this one's buffers (which a store's lock rules
            # out, but a copy is always correct).
            keep = ~np.isin(self.seqs, seqs) if changed else np.ones(n, bool)
            return VecCache.of(np.concatenate([self.seqs[keep], seqs]), np.vstack([self.mat[keep], mat]), gen,
                               np.concatenate([self.created[keep], created]))
        return VecCache._write(buf, n, seqs, mat, gen, created)

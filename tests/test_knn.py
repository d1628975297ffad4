"""The SQLite backend's exact vector scores: split over threads for a large matrix, the same numbers."""

from __future__ import annotations

import numpy as np
import pytest

from gieok.store.sqlite import knn


def test_a_large_matrix_is_scored_in_blocks_with_the_same_result() -> None:
    rng = np.random.default_rng(3)
    q = rng.standard_normal(384).astype(np.float32)
    for n in (7, knn.SPLIT_MIN_ROWS - 1, knn.SPLIT_MIN_ROWS + 13):
        mat = rng.standard_normal((n, 384)).astype(np.float32)
        got = knn.scores(mat, q)
        assert got.dtype == np.float32 and got.shape == (n,)
        np.testing.assert_allclose(got, mat @ q, rtol=1e-5, atol=1e-4)


def test_blocks_cover_every_row_whatever_the_thread_count(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(4)
    mat = rng.standard_normal((knn.SPLIT_MIN_ROWS + 5, 8)).astype(np.float32)
    q = rng.standard_normal(8).astype(np.float32)
    for threads in (2, 3, 4):
        monkeypatch.setattr(knn, "_THREADS", threads)
        monkeypatch.setattr(knn, "_pool", None)
        np.testing.assert_allclose(knn.scores(mat, q), mat @ q, rtol=1e-5, atol=1e-4)

"""The SQLite vector cache (gieok.store.sqlite.vec_cache): new rows appended in place, never under a reader; a
changed vector copied; a query's scores remembered by the cache they were computed on, and by no other."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import numpy as np
import pytest

from gieok.core.dates import utcnow
from gieok.core.models import SearchFilters
from gieok.memory.ingest import MessageIn, prepare
from gieok.store.base import ColdResult
from gieok.store.sqlite import SQLiteStore
from gieok.store.sqlite.vec_cache import MIN_ROOM, REMEMBERED, TIME, VecCache


def _rows(rng: np.random.Generator, start: int, n: int, gen: int,
          dim: int = 8) -> tuple[np.ndarray, np.ndarray, int, np.ndarray]:
    """`VecCache.of` / `extended`'s arguments for rows `start` … `start + n - 1`, loaded up to `gen`."""
    mat = rng.normal(size=(n, dim)).astype(np.float32)
    mat /= np.linalg.norm(mat, axis=1, keepdims=True)
    created = np.array([np.datetime64("2025-01-01T00:00:00", "us") + np.timedelta64(i, "m")
                        for i in range(start, start + n)], dtype=TIME)
    return np.arange(start, start + n, dtype=np.int64), mat, gen, created


def test_new_rows_are_appended_in_place_and_an_older_view_is_unchanged() -> None:
    rng = np.random.default_rng(1)
    first = VecCache.of(*_rows(rng, 0, 100, 1))
    before = first.mat.copy()
    seqs, mat, _gen, created = _rows(rng, 100, 7, 2)
    second = first.extended(seqs, mat, 2, created)
    # The same buffer, not a copy: the first rows are the very memory the first cache reads.
    assert np.shares_memory(second.mat, first.mat) and second.gen == 2
    assert second.mat.shape == (107, 8) and np.array_equal(second.seqs, np.arange(107))
    assert np.array_equal(second.mat[100:], mat) and np.array_equal(second.created[100:], created)
    # A search still holding the first cache sees exactly its 100 rows.
    assert first.mat.shape == (100, 8) and np.array_equal(first.mat, before)


def test_a_full_buffer_or_a_changed_vector_makes_a_copy() -> None:
    rng = np.random.default_rng(2)
    cache = VecCache.of(*_rows(rng, 0, 10, 1))
    room = len(cache._buf.seqs) - 10 if cache._buf is not None else 0
    assert room == MIN_ROOM
    full = cache.extended(*_rows(rng, 10, room, 2))
    assert np.shares_memory(full.mat, cache.mat)
    grown = full.extended(*_rows(rng, 10 + room, 1, 3))      # no room left: a new buffer, every row kept
    assert not np.shares_memory(grown.mat, full.mat) and np.array_equal(grown.seqs, np.arange(11 + room))
    # Row 3 re-embedded: its old vector goes, the new one is the last row, and the older cache is untouched.
    old3 = grown.mat[3].copy()
    v = np.full((1, 8), 1 / np.sqrt(8), np.float32)
    changed = grown.extended(np.array([3]), v, 4, grown.created[3:4].copy())
    assert not np.shares_memory(changed.mat, grown.mat)
    assert list(changed.seqs).count(3) == 1 and np.array_equal(changed.mat[-1], v[0])
    assert np.array_equal(grown.mat[3], old3)


def test_two_caches_never_append_into_the_same_rows() -> None:
    rng = np.random.default_rng(3)
    base = VecCache.of(*_rows(rng, 0, 5, 1))
    a = base.extended(*_rows(rng, 5, 2, 2))
    b = base.extended(*_rows(rng, 7, 2, 3))      # appended from the older cache again: copied, not overlaid
    assert np.array_equal(a.seqs, [0, 1, 2, 3, 4, 5, 6]) and np.array_equal(b.seqs, [0, 1, 2, 3, 4, 7, 8])
    assert not np.shares_memory(a.mat, b.mat)


def test_scores_are_remembered_per_cache_and_read_only() -> None:
    rng = np.random.default_rng(4)
    cache = VecCache.of(*_rows(rng, 0, 50, 1))
    q = cache.mat[7].copy()
    s = cache.scores(q)
    assert cache.scores(q.copy()) is s and int(np.argmax(s)) == 7     # the same vector: the same array
    with pytest.raises(ValueError):
        s[0] = 1.0                                                    # shared, so nobody may write into it
    more = cache.extended(*_rows(rng, 50, 1, 2))
    assert more.scores(q) is not s and len(more.scores(q)) == 51     # a new cache scores its own rows
    for i in range(REMEMBERED + 2):
        cache.scores(cache.mat[i].copy())
    assert len(cache._memo) == REMEMBERED


async def test_search_stays_exact_while_rows_keep_arriving(tmp_path: Path) -> None:
    store = SQLiteStore(f"sqlite:///{tmp_path / 'a.db'}")
    await store.open()
    rng = np.random.default_rng(5)
    f = SearchFilters(user_id="u")
    ids: list[str] = []
    vecs: list[np.ndarray] = []
    first = None
    for batch in range(21):          # 1,000 rows after the first 60: within the room kept after them
        rows = [prepare(MessageIn(content=f"row {batch}-{i}", user_id="u"), max_bytes=64)
                for i in range(60 if batch == 0 else 50)]
        await store.insert_many(rows)
        v = rng.normal(size=(len(rows), 8)).astype(np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        await store.complete_cold([ColdResult(m.id, embedding=v[i], embedding_model="m")
                                   for i, (m, _) in enumerate(rows)], utcnow())
        ids += [m.id for m, _ in rows]
        vecs += list(v)
        q = vecs[len(vecs) // 2]
        got = await store.vector_search(f, "m", q, 10)
        mat = np.array(vecs)
        want = np.argsort(-(mat @ q))[:10]
        assert [m.id for m, _ in got] == [ids[i] for i in want]
        if first is None:
            first = store._vec[(("u", "u"), "m")]
    last = store._vec[(("u", "u"), "m")]
    assert first is not None and len(last.seqs) == len(ids) == 1060
    assert np.shares_memory(last.mat, first.mat)     # every later row appended to the first matrix
    # Erasing a row drops the caches: its vector is not kept in memory, and search no longer returns it.
    assert await store.hard_delete(ids[0])
    assert store._vec == {}
    got = await store.vector_search(f, "m", vecs[0], 3)
    assert ids[0] not in [m.id for m, _ in got]
    await store.close()


async def test_an_erase_while_a_refresh_runs_neither_waits_nor_is_undone(tmp_path: Path) -> None:
    store = SQLiteStore(f"sqlite:///{tmp_path / 'e.db'}")
    await store.open()
    rows = [prepare(MessageIn(content=f"row {i}", user_id="u"), max_bytes=64) for i in range(3)]
    await store.insert_many(rows)
    v = np.eye(4, dtype=np.float32)
    await store.complete_cold([ColdResult(m.id, embedding=v[i], embedding_model="m")
                               for i, (m, _) in enumerate(rows)], utcnow())
    # A refresh holds the lock (a first load of a big matrix takes a second): dropping the caches, which an
    # erase does on the event loop, does not wait for it...
    erased: list[bool] = []
    with store._vec_lock:
        epoch = store._vec_epoch
        eraser = threading.Thread(target=lambda: erased.append(asyncio.run(store.hard_delete(rows[0][0].id))),
                                  daemon=True)
        eraser.start()
        eraser.join(timeout=10)
        assert not eraser.is_alive() and erased == [True]
    # ...and the cache that refresh built (it may hold the erased row) is not kept for the next search.
    store._keep_vectors((("u", "u"), "m"), VecCache.of(np.array([1]), v[:1], 9, np.zeros(1, TIME)), epoch)
    assert store._vec == {}
    got = await store.vector_search(SearchFilters(user_id="u"), "m", v[0], 3)
    assert rows[0][0].id not in [m.id for m, _ in got] and len(got) == 2
    await store.close()

"""SQLite keyword search remembers common tokens' document counts (gieok.store.sqlite.doc_freq), never a
rare or new word's: a word stored a moment after a search missed it is found by the next search."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from gieok.core.models import SearchFilters
from gieok.core.text import query_terms
from gieok.memory.ingest import MessageIn, prepare
from gieok.store.sqlite import SQLiteStore, doc_freq
from gieok.store.sqlite.doc_freq import DocFreqCache


def test_only_common_tokens_are_kept_and_only_for_a_while(monkeypatch: pytest.MonkeyPatch) -> None:
    cache = DocFreqCache()
    cache.keep({"common": doc_freq.MIN_KEPT, "rare": doc_freq.MIN_KEPT - 1, "absent": 0})
    assert cache.known(["common", "rare", "absent", "other"]) == {"common": doc_freq.MIN_KEPT}
    now = doc_freq.time.monotonic()
    monkeypatch.setattr(doc_freq.time, "monotonic", lambda: now + doc_freq.TTL_S + 1)
    assert cache.known(["common"]) == {}


def test_the_cache_stays_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(doc_freq, "MAX_ENTRIES", 10)
    cache = DocFreqCache()
    for i in range(25):
        cache.keep({f"t{i}": 100})
    kept = cache.known([f"t{i}" for i in range(25)])
    assert 0 < len(kept) <= 10 and "t24" in kept and "t0" not in kept


async def test_a_word_stored_after_a_search_missed_it_is_found_next_time(tmp_path: Path) -> None:
    store = SQLiteStore(f"sqlite:///{tmp_path / 'df.db'}")
    await store.open()
    try:
        f = SearchFilters(user_id="alice")
        at = datetime(2026, 11, 1, tzinfo=UTC)

        async def put(text: str) -> str:
            m, prepared = prepare(MessageIn(content=text, user_id="alice", created_at=at), max_bytes=65536)
            mid, _ = await store.insert_memory(m, prepared)
            return mid

        for i in range(doc_freq.MIN_KEPT + 5):
            await put(f"standup notes {i}")
        assert len(await store.keyword_search(f, query_terms("standup"), 200)) == doc_freq.MIN_KEPT + 5
        # A term found nowhere is left out of the query: were its zero remembered, the row below would be missed.
        assert all("zeppelin" not in m.content for m, _ in
                   await store.keyword_search(f, query_terms("zeppelin standup"), 200))
        new = await put("we rode a zeppelin over the bay")
        hits = await store.keyword_search(f, query_terms("zeppelin standup"), 200)
        assert hits[0][0].id == new
        # The common word's count came from the cache the second time and still bounds the query right.
        assert store._doc_freq.known(["standup"]) == {"standup": doc_freq.MIN_KEPT + 5}
        await put("standup moved to ten")
        assert len(await store.keyword_search(f, query_terms("standup"), 200)) == doc_freq.MIN_KEPT + 6
    finally:
        await store.close()

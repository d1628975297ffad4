"""Document frequencies of full-text tokens, remembered for a few minutes.

Keyword search reads each query token's document count from FTS5's vocabulary table to bound its work
(gieok.store.shared.MAX_SCORED_MATCHES). `fts5vocab` counts a token by walking its whole posting list, so a
common word costs milliseconds every time: at 100,000 memories the look-up alone took 7 ms at the median and
23 ms at p95 of `gieok bench search`'s queries, and a one-syllable Korean prefix (gieok.core.korean_stems) sums
every token it begins. The bound needs magnitudes, not exact counts (PostgreSQL reads planner statistics
refreshed every few minutes for the same purpose), so common tokens' counts are kept for `TTL_S`.

Rare tokens are always counted afresh: their posting lists are short, and a word first stored a moment ago
must not stay "found nowhere" (a term found nowhere is left out of the query).
"""

from __future__ import annotations

import threading
import time

TTL_S = 300.0
MIN_KEPT = 64           # counts below this are cheap to redo and may grow from zero
MAX_ENTRIES = 50_000    # a store's query vocabulary is bounded; past this the oldest half goes


class DocFreqCache:
    def __init__(self) -> None:
        self._counts: dict[str, tuple[float, int]] = {}
        self._lock = threading.Lock()    # searches read the vocabulary from worker threads

    def known(self, keys: list[str]) -> dict[str, int]:
        """The fresh counts of `keys` this cache holds."""
        now = time.monotonic()
        out: dict[str, int] = {}
        with self._lock:
            for k in keys:
                got = self._counts.get(k)
                if got is not None and now - got[0] < TTL_S:
                    out[k] = got[1]
        return out

    def keep(self, counts: dict[str, int]) -> None:
        now = time.monotonic()
        with self._lock:
            for k, n in counts.items():
                if n >= MIN_KEPT:
                    self._counts.pop(k, None)       # re-inserted at the end: insertion order is age order
                    self._counts[k] = (now, n)
            if len(self._counts) > MAX_ENTRIES:
                for k in list(self._counts)[: len(self._counts) // 2]:
                    del self._counts[k]

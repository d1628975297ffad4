"""A process's copy of each user's term vocabulary (gieok.store.base.TermVectors), loaded incrementally.

Rows are appended (a term's vector never changes), so a cache keyed by (user, model) holds the highest `seq`
it has read and fetches only newer rows; a search pays one indexed look-up when nothing changed. Erasure
removes words (`forget_terms`): it also writes a marker row (term '', no vector) with a new `seq`, and a
cache that reads a marker starts again from nothing, so every process drops the erased words at its next
search, not at its next restart.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gieok.store.base import Vector

RELOAD_MARKER = ""   # the term of a marker row: no real word is empty


@dataclass
class TermCache:
    terms: list[str] = field(default_factory=list)
    mat: Vector = field(default_factory=lambda: np.zeros((0, 0), np.float32))
    seq: int = 0

    def needs_reload(self, rows: list[tuple[int, str, bytes]]) -> bool:
        """True when words were erased since this cache last read: `rows` hold a marker."""
        return self.seq > 0 and any(t == RELOAD_MARKER for _s, t, _b in rows)

    def extend(self, rows: list[tuple[int, str, bytes]]) -> None:
        if rows and any(t == RELOAD_MARKER for _s, t, _b in rows):
            self.seq = max(self.seq, max(s for s, _t, _b in rows))
            rows = [r for r in rows if r[1] != RELOAD_MARKER]
        if not rows:
            return
        new = np.stack([np.frombuffer(b, dtype=np.float32) for _s, _t, b in rows])
        self.mat = new if not len(self.terms) else np.vstack([self.mat, new])
        self.terms.extend(t for _s, t, _b in rows)
        self.seq = max(self.seq, max(s for s, _t, _b in rows))

    def view(self) -> tuple[list[str], Vector] | None:
        return (self.terms, self.mat) if self.terms else None


def vector_bytes(v: np.ndarray) -> bytes:
    return np.asarray(v, dtype=np.float32).tobytes()

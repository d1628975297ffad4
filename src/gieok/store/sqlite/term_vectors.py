"""SQLite's side of `gieok.store.base.TermVectors`: each user's English vocabulary with vectors (migration 012)."""

from __future__ import annotations

import anyio

from gieok.store.base import Vector
from gieok.store.context_sql import chunks
from gieok.store.sqlite.connection import SQLiteBase
from gieok.store.term_cache import TermCache, vector_bytes


class SQLiteTermVectors(SQLiteBase):
    async def missing_terms(self, user_id: str, model: str, terms: list[str]) -> list[str]:
        have: set[str] = set()
        with self._lock:
            for chunk in chunks(list(dict.fromkeys(terms))):
                have.update(r[0] for r in self.db.execute(
                    f"SELECT term FROM term_vectors WHERE user_id = ? AND model = ? AND term IN "
                    f"({','.join('?' * len(chunk))})", [user_id, model, *chunk]))
        return [t for t in dict.fromkeys(terms) if t not in have]

    async def add_term_vectors(self, user_id: str, model: str, terms: list[str], vectors: Vector) -> None:
        with self._write() as db:
            db.executemany("INSERT INTO term_vectors (user_id, model, term, vector) VALUES (?, ?, ?, ?) "
                           "ON CONFLICT DO NOTHING",
                           [(user_id, model, t, vector_bytes(v)) for t, v in zip(terms, vectors, strict=True)])

    async def term_matrix(self, user_id: str, model: str) -> tuple[list[str], Vector] | None:
        cache = self._terms.setdefault((user_id, model), TermCache())

        def load() -> None:
            with self._lock:
                rows = self.db.execute("SELECT seq, term, vector FROM term_vectors WHERE user_id = ? AND model = ? "
                                       "AND seq > ? ORDER BY seq", (user_id, model, cache.seq)).fetchall()
            cache.extend([(int(s), str(t), bytes(b)) for s, t, b in rows])
        await anyio.to_thread.run_sync(load)
        return cache.view()

"""SQLite's side of `gieok.store.base.TermVectors`: each user's English vocabulary with vectors (migration 012)."""

from __future__ import annotations

import anyio

from gieok.store.base import Vector
from gieok.store.context_sql import chunks
from gieok.store.sqlite.connection import SQLiteBase
from gieok.store.term_cache import RELOAD_MARKER, TermCache, vector_bytes


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

    async def forget_terms(self, user_id: str, terms: list[str]) -> int:
        if not terms:
            return 0
        with self._write() as db:
            models = [r[0] for r in db.execute("SELECT DISTINCT model FROM term_vectors WHERE user_id = ?",
                                               (user_id,))]
            n = 0
            for chunk in chunks(list(dict.fromkeys(t for t in terms if t))):
                n += db.execute(f"DELETE FROM term_vectors WHERE user_id = ? AND term IN "
                                f"({','.join('?' * len(chunk))})", [user_id, *chunk]).rowcount
            if n:   # a fresh marker per model (the old one goes): every process's cache reloads at its next search
                db.execute("DELETE FROM term_vectors WHERE user_id = ? AND term = ?", (user_id, RELOAD_MARKER))
                db.executemany("INSERT INTO term_vectors (user_id, model, term, vector) VALUES (?, ?, ?, ?)",
                               [(user_id, m, RELOAD_MARKER, b"") for m in models])
        self._terms = {k: v for k, v in self._terms.items() if k[0] != user_id}
        return n

    async def term_matrix(self, user_id: str, model: str) -> tuple[list[str], Vector] | None:
        key = (user_id, model)
        cache = self._terms.setdefault(key, TermCache())

        def load() -> TermCache:
            c = cache
            with self._lock:
                rows = self.db.execute("SELECT seq, term, vector FROM term_vectors WHERE user_id = ? AND model = ? "
                                       "AND seq > ? ORDER BY seq", (user_id, model, c.seq)).fetchall()
                got = [(int(s), str(t), bytes(b)) for s, t, b in rows]
                if c.needs_reload(got):
                    c = TermCache()
                    got = [(int(s), str(t), bytes(b)) for s, t, b in self.db.execute(
                        "SELECT seq, term, vector FROM term_vectors WHERE user_id = ? AND model = ? ORDER BY seq",
                        (user_id, model))]
            c.extend(got)
            return c
        cache = await anyio.to_thread.run_sync(load)
        self._terms[key] = cache
        return cache.view()

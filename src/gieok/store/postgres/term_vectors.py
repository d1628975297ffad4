"""PostgreSQL's side of `gieok.store.base.TermVectors`: each user's English vocabulary with vectors (migration 012)."""

from __future__ import annotations

from gieok.store.base import Vector
from gieok.store.postgres.connection import PostgresBase
from gieok.store.term_cache import RELOAD_MARKER, TermCache, vector_bytes


class PostgresTermVectors(PostgresBase):
    async def missing_terms(self, user_id: str, model: str, terms: list[str]) -> list[str]:
        uniq = list(dict.fromkeys(terms))
        async with self._conn() as con:
            cur = await con.execute("SELECT term FROM term_vectors WHERE user_id = %s AND model = %s "
                                    "AND term = ANY(%s)", (user_id, model, uniq))
            have = {r[0] for r in await cur.fetchall()}
        return [t for t in uniq if t not in have]

    async def add_term_vectors(self, user_id: str, model: str, terms: list[str], vectors: Vector) -> None:
        async with self._conn() as con, con.transaction(), con.cursor() as cur:
            await cur.executemany("INSERT INTO term_vectors (user_id, model, term, vector) VALUES (%s, %s, %s, %s) "
                                  "ON CONFLICT DO NOTHING",
                                  [(user_id, model, t, vector_bytes(v)) for t, v in zip(terms, vectors, strict=True)])

    async def forget_terms(self, user_id: str, terms: list[str]) -> int:
        uniq = list(dict.fromkeys(t for t in terms if t))
        if not uniq:
            return 0
        async with self._conn() as con, con.transaction():
            models = [r[0] for r in await (await con.execute(
                "SELECT DISTINCT model FROM term_vectors WHERE user_id = %s", (user_id,))).fetchall()]
            n = (await con.execute("DELETE FROM term_vectors WHERE user_id = %s AND term = ANY(%s)",
                                   (user_id, uniq))).rowcount
            if n:   # a fresh marker per model (the old one goes): every process's cache reloads at its next search
                await con.execute("DELETE FROM term_vectors WHERE user_id = %s AND term = %s", (user_id, RELOAD_MARKER))
                for m in models:
                    await con.execute("INSERT INTO term_vectors (user_id, model, term, vector) VALUES (%s, %s, %s, %s)",
                                      (user_id, m, RELOAD_MARKER, b""))
        self._terms = {k: v for k, v in self._terms.items() if k[0] != user_id}
        return n

    async def term_matrix(self, user_id: str, model: str) -> tuple[list[str], Vector] | None:
        key = (user_id, model)
        cache = self._terms.setdefault(key, TermCache())
        sql = "SELECT seq, term, vector FROM term_vectors WHERE user_id = %s AND model = %s AND seq > %s ORDER BY seq"
        async with self._conn() as con:
            rows = [(int(s), str(t), bytes(b))
                    for s, t, b in await (await con.execute(sql, (user_id, model, cache.seq))).fetchall()]
            if cache.needs_reload(rows):
                cache = TermCache()
                rows = [(int(s), str(t), bytes(b))
                        for s, t, b in await (await con.execute(sql, (user_id, model, 0))).fetchall()]
        cache.extend(rows)
        self._terms[key] = cache
        return cache.view()

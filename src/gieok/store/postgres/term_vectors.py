"""PostgreSQL's side of `gieok.store.base.TermVectors`: each user's English vocabulary with vectors (migration 012)."""

from __future__ import annotations

from gieok.store.base import Vector
from gieok.store.postgres.connection import PostgresBase
from gieok.store.term_cache import TermCache, vector_bytes


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

    async def term_matrix(self, user_id: str, model: str) -> tuple[list[str], Vector] | None:
        cache = self._terms.setdefault((user_id, model), TermCache())
        async with self._conn() as con:
            cur = await con.execute("SELECT seq, term, vector FROM term_vectors WHERE user_id = %s AND model = %s "
                                    "AND seq > %s ORDER BY seq", (user_id, model, cache.seq))
            rows = await cur.fetchall()
        cache.extend([(int(s), str(t), bytes(b)) for s, t, b in rows])
        return cache.view()

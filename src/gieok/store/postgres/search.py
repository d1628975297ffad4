"""PostgreSQL: full-text (BM25 over tsvector, `text.py`), substring (pg_trgm) and vector search (pgvector).

Filtered vector search must return full results. HNSW with a selective `WHERE user_id = …` returns only
the filtered part of its `ef_search` candidates (MEASURED.md: 0.4–0.5 of 10 rows at 1% selectivity). So a
user with few vectors gets an exact scan (a MATERIALIZED CTE keeps the planner off the index), a large one
gets HNSW with `hnsw.iterative_scan = relaxed_order`, re-sorted by exact distance, and if that still comes
back short (a very selective filter) the exact scan answers.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import time
from typing import Any

import numpy as np
from psycopg import AsyncConnection, sql

from gieok.core.errors import StoreError
from gieok.core.models import Memory, SearchFilters
from gieok.store.base import NeighbourVectors, Vector, VectorSink
from gieok.store.context_sql import chunks, neighbour_vectors_sql
from gieok.store.postgres.codec import SELECT, SENT_VECTOR, row_to_memory, sent_vector, tags_sql, ts, vec
from gieok.store.postgres.connection import HNSW_EF_SEARCH, PostgresBase
from gieok.store.postgres.text import FtsStats, bm25_sql, read_fts_stats, tsquery_params
from gieok.store.postgres.vectors import knn_sql, vector_type
from gieok.store.shared import MAX_SCORED_MATCHES, like_pattern, rankable_terms, rarest_terms
from gieok.store.sqlfilters import owner_clause, where_clause

# Exact scan or HNSW? An exact scan costs in proportion to the user's rows n; a filtered HNSW scan visits
# about limit·N/n index tuples (N: the whole table) before enough of the user's rows turn up. They cross
# near n = sqrt(K·N); K was measured with `gieok bench scale`-style data (384-d, limit 50: crossover at
# ~5,700 of 100,000 rows). Exact answers are also complete and in order.
EXACT_SCAN_K = 325.0
EXACT_SCAN_MIN = 2_000
EXACT_SCAN_MAX = 50_000
LARGE_USER_TTL_S = 60.0
SMALL_USER_TTL_S = 15.0


class SearchMixin(PostgresBase):
    MAX_SCORED_MATCHES = MAX_SCORED_MATCHES     # see gieok.store.shared

    async def keyword_search(self, f: SearchFilters, terms: list[list[str]], limit: int, *,
                             rankable_only: bool = False,
                             sink: VectorSink | None = None) -> list[tuple[Memory, float]]:
        terms = [t for t in terms if t]
        if not terms:
            return []
        where, params = where_clause(f, "%s", tags_sql, ts)
        stats = await self._fts_stats()
        freq = [stats.df(t) for t in terms]
        if rankable_only:
            terms, freq = rankable_terms(terms, freq, self.MAX_SCORED_MATCHES)
            if not terms:
                return []
        # Bounded work on huge stores, as on SQLite (gieok.store.base.MAX_SCORED_MATCHES).
        kept, potential = rarest_terms(terms, freq, self.MAX_SCORED_MATCHES)
        phrases = tsquery_params(kept)
        idf = [stats.idf(t) for t in kept]
        newest = potential > self.MAX_SCORED_MATCHES
        q = bm25_sql(kept, where, SELECT if sink is None else f"{SELECT}, {SENT_VECTOR}", newest=newest)
        cap = [self.MAX_SCORED_MATCHES] if newest else []
        async with self._conn() as con:
            rows = await (await con.execute(q, [*phrases, *params, *cap, *phrases, stats.avg_len, *idf,
                                                limit])).fetchall()
        return _with_vectors(rows, sink)

    async def _fts_stats(self) -> FtsStats:
        """Row count, mean prepared-text length and lexeme frequencies, from the statistics ANALYZE keeps
        (autovacuum refreshes them): reading them costs a catalogue lookup, counting matches would cost a
        scan per query. idf needs magnitudes, not exact counts, so they are cached for a few minutes and
        refreshed in the background: only the first search of a process waits for them."""
        if self._fts is None:
            self._fts = await self._read_fts_stats()
        elif self._fts.expired(time.monotonic()) and self._fts_refresh is None:
            self._fts_refresh = asyncio.create_task(self._refresh_fts_stats())
        return self._fts

    async def _refresh_fts_stats(self) -> None:
        try:
            self._fts = await self._read_fts_stats()
        except StoreError:
            # Keep the old numbers and try again a TTL later; a search must not fail for them.
            self._fts = dataclasses.replace(self._fts, at=time.monotonic()) if self._fts else None
        finally:
            self._fts_refresh = None

    async def _read_fts_stats(self) -> FtsStats:
        async with self._conn() as con:
            return await read_fts_stats(con)

    async def substring_search(self, f: SearchFilters, needle: str, limit: int) -> list[Memory]:
        if not needle.strip():
            return []
        where, params = where_clause(f, "%s", tags_sql, ts)
        q = (f"SELECT {SELECT} FROM memory m WHERE {where} AND m.content ILIKE %s "
             f"ORDER BY m.created_at DESC LIMIT %s")
        async with self._conn() as con:
            rows = await (await con.execute(q, [*params, like_pattern(needle), limit])).fetchall()
        return [row_to_memory(r) for r in rows]

    async def vector_search(self, f: SearchFilters, model: str, query: Vector, limit: int, *,
                            sink: VectorSink | None = None) -> list[tuple[Memory, float]]:
        dims = int(query.shape[0])
        if limit <= 0 or dims == 0:
            return []
        where, params = where_clause(f, "%s", tags_sql, ts)
        typ, _ = vector_type(dims)
        # Literals, not parameters, for the model and dimension: the planner must see them to match the
        # partial index predicate.
        model_cond = sql.SQL("m.embedding_model = {} AND vector_dims(m.embedding) = {}").format(
            sql.Literal(model), sql.Literal(dims))
        qvec = np.asarray(query, dtype=np.float32)
        table_rows = (await self._fts_stats()).rows
        exact_max = int(min(EXACT_SCAN_MAX, max(EXACT_SCAN_MIN, math.sqrt(EXACT_SCAN_K * table_rows))))
        owner, owner_params = owner_clause(f, "%s")
        key = (owner + repr(owner_params), model)
        async with self._conn() as con:
            now = time.monotonic()
            if self._large_users.get(key, 0.0) > now:
                n = exact_max + 1
            elif self._small_users.get(key, 0.0) > now:
                n = 1          # known to have vectors, and few: the exact scan, without counting again
            else:
                # Counting stops at the threshold: an index-only scan of at most exact_max entries (with a
                # viewer: its own rows or the shared ones it may see).
                row = await (await con.execute(
                    f"SELECT count(*) FROM (SELECT 1 FROM memory m WHERE {owner} AND m.embedding_model = %s "
                    "AND m.embedding IS NOT NULL LIMIT %s) t", (*owner_params, model, exact_max + 1))).fetchone()
                n = int(row[0]) if row else 0
                if n > exact_max:
                    # Large users stay large: skip the count for a while.
                    self._large_users[key] = now + LARGE_USER_TTL_S
                elif n > 0:
                    # Small users too, for a shorter while (one round trip less per search): the exact scan is
                    # right at any size, it only gets slower if the user grows past exact_max meanwhile. A
                    # zero is not cached: a stale zero would hide new vectors.
                    self._small_users[key] = now + SMALL_USER_TTL_S
            if n == 0:
                return []
            if n > exact_max:
                hits = await self._hnsw_search(con, where, params, model_cond, typ, qvec, limit, sink)
                if len(hits) >= limit:
                    return hits
            return await self._exact_search(con, where, params, model_cond, typ, qvec, limit, sink)

    async def _hnsw_search(self, con: AsyncConnection[Any], where: str, params: list[Any], model_cond: sql.Composed,
                           typ: str, qvec: Vector, limit: int,
                           sink: VectorSink | None) -> list[tuple[Memory, float]]:
        inner = (f"SELECT m.id, m.embedding::{typ} <=> %s::{typ} AS dist FROM memory m "
                 f"WHERE {where} AND {{model}} ORDER BY dist LIMIT %s")
        q = sql.SQL(knn_sql(inner, typ, _select(sink))).format(model=model_cond)
        if limit <= HNSW_EF_SEARCH:
            rows = await (await con.execute(q, [qvec, *params, limit], prepare=False)).fetchall()
        else:
            # A long candidate list needs a larger ef_search. prepare=False here and above: a plan prepared
            # under other settings would not see a SET LOCAL.
            async with con.transaction():
                await con.execute(f"SET LOCAL hnsw.ef_search = {int(limit)}")
                rows = await (await con.execute(q, [qvec, *params, limit], prepare=False)).fetchall()
        return _with_vectors(rows, sink)

    async def _exact_search(self, con: AsyncConnection[Any], where: str, params: list[Any], model_cond: sql.Composed,
                            typ: str, qvec: Vector, limit: int,
                            sink: VectorSink | None) -> list[tuple[Memory, float]]:
        # MATERIALIZED: the candidates are fetched by the btree/filters first and then ranked exactly;
        # without it the planner may push ORDER BY … LIMIT into the HNSW index and lose filtered rows.
        inner = (f"WITH c AS MATERIALIZED (SELECT m.id, m.embedding FROM memory m WHERE {where} AND {{model}}) "
                 f"SELECT c.id, c.embedding::{typ} <=> %s::{typ} AS dist FROM c ORDER BY dist LIMIT %s")
        q = sql.SQL(knn_sql(inner, typ, _select(sink))).format(model=model_cond)
        rows = await (await con.execute(q, [*params, qvec, limit], prepare=False)).fetchall()
        return _with_vectors(rows, sink)

    async def get_vectors(self, ids: list[str], model: str) -> dict[str, Vector]:
        if not ids:
            return {}
        # Binary results: pgvector's text form is parsed number by number in Python (190 vectors of 384
        # dimensions: 57 ms), its binary form is one buffer per vector (5 ms).
        async with self._conn() as con:
            rows = await (await con.execute("SELECT id, embedding FROM memory WHERE id = ANY(%s) AND "
                                            "embedding_model = %s AND embedding IS NOT NULL",
                                            (list(ids), model), binary=True)).fetchall()
        return {r[0]: vec(r[1]) for r in rows}

    async def neighbour_vectors(self, f: SearchFilters, ids: list[str], model: str) -> NeighbourVectors:
        if not ids:
            return {}
        where_m, params = where_clause(f, "%s", tags_sql, ts, alias="m")
        where_n, _ = where_clause(f, "%s", tags_sql, ts, alias="n")
        out: NeighbourVectors = {}
        async with self._conn() as con:
            for chunk in chunks(ids):
                q = neighbour_vectors_sql("%s", len(chunk), where_m, where_n)
                rows = await (await con.execute(q, [*chunk, *params, model, *params], binary=True)).fetchall()
                for mid, nid, emb in rows:
                    out.setdefault(mid, []).append((nid, vec(emb)))
        return out


def _select(sink: VectorSink | None) -> str:
    return SELECT if sink is None else f"{SELECT}, {SENT_VECTOR}"


def _with_vectors(rows: list[Any], sink: VectorSink | None) -> list[tuple[Memory, float]]:
    """A search's (row, score) pairs; with `sink`, each row's vector (the column before the score) put in it."""
    if sink is None:
        return [(row_to_memory(r[:-1]), float(r[-1])) for r in rows]
    found = [(row_to_memory(r[:-2]), float(r[-1])) for r in rows]
    sink.put(found, [sent_vector(r[-2]) for r in rows])
    return found

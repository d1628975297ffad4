"""The organisation backend: PostgreSQL + pgvector, for several server replicas and librarian workers.

Why it looks like this:
- One async code path: psycopg 3's AsyncConnectionPool, connections in autocommit, explicit transactions
  where several statements must hold together. psycopg errors become `StoreError` in one place (`_conn`).
- Vectors: an untyped `vector` column and one partial HNSW expression index per (model, dimension), made
  when the first vector of that model arrives (`_ensure_vector_index`); above 2,000 dimensions the index
  is on a `halfvec` cast, as pgvector's HNSW indexes `vector` only up to 2,000. Vectors of different
  models are never compared: every vector query filters on `embedding_model`.
- Filtered vector search must return full results. HNSW with a selective `WHERE user_id = …` returns
  only the filtered part of its `ef_search` candidates (MEASURED.md: 0.4–0.5 of 10 rows at 1%
  selectivity). So a user with few vectors gets an exact scan (a MATERIALIZED CTE keeps the planner off
  the index), a large one gets HNSW with `hnsw.iterative_scan = relaxed_order`, re-sorted by exact
  distance, and if that still comes back short (a very selective filter) the exact scan answers. Those
  settings are SET LOCAL and the statement runs with `prepare=False`: a plan prepared earlier would
  ignore them.
- The librarian claims with `FOR UPDATE SKIP LOCKED` plus the same lease columns as SQLite, so a crashed
  worker's rows come back when the lease expires; inserts NOTIFY `gieok_pending` (a statement trigger) so
  idle workers wake at once (`wait_for_pending`).
- The BM25 query, its statistics and the neighbour context are in `postgres_text`; pgvector's index naming
  and k-NN query shape in `postgres_vectors`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import numpy as np
import psycopg
from pgvector.psycopg import register_vector_async
from psycopg import AsyncConnection, sql
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from gieok.core.dates import iso, utcnow
from gieok.core.errors import ConfigError, StoreError
from gieok.core.models import Memory, SearchFilters
from gieok.core.principal import Principal
from gieok.store.base import (
    MAX_SCORED_MATCHES,
    ColdResult,
    FeedbackRow,
    Link,
    NewRow,
    ProjectTag,
    RequestKey,
    UserProfile,
    Vector,
    checked_changes,
    rarest_terms,
)
from gieok.store.context_sql import rewrites_neighbours
from gieok.store.postgres.auth_tables import PostgresAuthTables
from gieok.store.postgres.batch import insert_rows
from gieok.store.postgres.migrations import EXTENSIONS, MIGRATIONS, PENDING_PREDICATE
from gieok.store.postgres.text import FTS_STATS_TTL_S, FtsStats, bm25_sql, neighbour_ids, read_fts_stats
from gieok.store.postgres.text import refresh_context as refresh_context_rows
from gieok.store.postgres.vectors import knn_sql, vector_index_ddl, vector_index_name, vector_type
from gieok.store.sqlfilters import owner_clause, visible_clause, where_clause

_MEMORY_COLS = (
    "id", "user_id", "agent_platform", "agent_model", "is_subagent", "subagent_model", "subagent_role",
    "session_id", "role", "project", "p_tags", "d_tags", "privacy_scope", "team", "kind", "title", "content",
    "source", "importance", "is_pinned", "content_hash", "embedding_model", "tag_status", "embed_status",
    "cold_attempts", "cold_error", "lease_until", "view_count", "cite_count", "edit_count", "last_accessed_at",
    "next_review_at", "review_interval_days", "is_active", "archived_at", "deleted_at", "created_at",
    "updated_at", "meta",
)
_SELECT = ", ".join("m." + c for c in _MEMORY_COLS)
_CASTS = {"p_tags": "::text[]", "d_tags": "::text[]", "meta": "::jsonb"}
# Failed rows wait this long before a later cycle tries them again (as in SQLite).
FAILED_COOLDOWN = timedelta(minutes=10)
# Exact scan or HNSW? An exact scan costs in proportion to the user's rows n; a filtered HNSW scan visits
# about limit·N/n index tuples (N: the whole table) before enough of the user's rows turn up. They cross
# near n = sqrt(K·N); K was measured with `gieok bench scale`-style data (384-d, limit 50: crossover at
# ~5,700 of 100,000 rows). Exact answers are also complete and in order.
EXACT_SCAN_K = 325.0
EXACT_SCAN_MIN = 2_000
EXACT_SCAN_MAX = 50_000
HNSW_EF_SEARCH = 100
PGVECTOR_MIN = (0, 8)
NOTIFY_CHANNEL = "gieok_pending"
LARGE_USER_TTL_S = 60.0
_MIGRATION_LOCK = 0x67696F6B01  # advisory lock keys ("giok" + n): one migrator, one index builder at a time
_INDEX_LOCK = 0x67696F6B02


def _json_dumps(obj: Any) -> str:
    # Job results may hold datetimes and the like: stored as text, as SQLite's json.dumps(default=str) does.
    return json.dumps(obj, ensure_ascii=False, default=str)


def _tags_sql(col: str, ph: str) -> str:
    # `@>` rather than `= ANY(…)`: only the containment operator can use the GIN index on the tag arrays.
    return f"{col} @> ARRAY[{ph}]::text[]"


def _db_value(col: str, value: Any) -> Any:
    if col == "meta":
        return Jsonb(value)
    if col in ("p_tags", "d_tags"):
        return list(value)
    return value


def _row_to_memory(row: tuple[Any, ...]) -> Memory:
    d = dict(zip(_MEMORY_COLS, row, strict=False))
    d["p_tags"] = list(d["p_tags"] or [])
    d["d_tags"] = list(d["d_tags"] or [])
    return Memory(**d)


def _vec(value: Any) -> Vector:
    return np.asarray(value.to_numpy() if hasattr(value, "to_numpy") else value, dtype=np.float32)


def postgres_conninfo(url: str) -> tuple[str, dict[str, int]]:
    """A libpq URL from GIEOK_DATABASE_URL, and our own pool options taken out of its query string
    (`pool_min_size`, `pool_max_size`), which libpq would refuse."""
    if url.startswith("postgresql+psycopg://"):
        url = "postgresql://" + url[len("postgresql+psycopg://"):]
    if not url.startswith(("postgresql://", "postgres://")):
        raise ConfigError(f"not a PostgreSQL URL: {url!r} (expected postgresql://user@host:5432/dbname)")
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    pool: dict[str, int] = {}
    rest = []
    for k, v in query:
        if k in ("pool_min_size", "pool_max_size"):
            try:
                pool[k[5:]] = int(v)
            except ValueError:
                raise ConfigError(f"GIEOK_DATABASE_URL: {k}={v!r} must be an integer") from None
        else:
            rest.append((k, v))
    return urlunsplit(parts._replace(query=urlencode(rest, safe="/"))), pool


async def _fetch_bool(con: AsyncConnection[Any], query: str, params: tuple[Any, ...]) -> bool:
    row = await (await con.execute(query, params)).fetchone()
    return bool(row and row[0])


async def _retry_deadlock(run: Callable[[], Awaitable[None]]) -> None:
    """Run once more if PostgreSQL broke a deadlock by aborting us: the other transaction has finished or
    holds its locks in the same order by now, so the retry goes through."""
    try:
        await run()
    except StoreError as exc:
        if not isinstance(exc.__cause__, psycopg.errors.DeadlockDetected):
            raise
        await asyncio.sleep(0.01)
        await run()


def _redacted(url: str) -> str:
    parts = urlsplit(url)
    if parts.password:
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
        return urlunsplit(parts._replace(netloc=netloc))
    return url


class PostgresStore(PostgresAuthTables):
    MAX_SCORED_MATCHES = MAX_SCORED_MATCHES     # see gieok.store.base

    def __init__(self, url: str) -> None:
        self.url = url
        self._conninfo, opts = postgres_conninfo(url)
        self._min_size = opts.get("min_size", 1)
        self._max_size = max(opts.get("max_size", 10), self._min_size)
        self._pool: AsyncConnectionPool[AsyncConnection[Any]] | None = None
        self._listener: AsyncConnection[Any] | None = None
        self._listen_lock = asyncio.Lock()
        self._indexed: set[tuple[str, int]] = set()
        self._fts: FtsStats | None = None
        self._large_users: dict[tuple[str, str], float] = {}
        self._fts_refresh: asyncio.Task[None] | None = None

    # --- connection ------------------------------------------------------------------------------------
    async def open(self) -> None:
        if self._pool is not None:
            return
        try:
            con = await AsyncConnection.connect(self._conninfo, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            raise StoreError(f"cannot connect to PostgreSQL at {_redacted(self.url)}: {exc}. Check "
                             "GIEOK_DATABASE_URL and that the server is running.") from exc
        async with con:
            try:
                await self._migrate(con)
            except psycopg.Error as exc:
                raise StoreError(f"cannot prepare the schema in {_redacted(self.url)}: {exc}") from exc

        async def configure(c: AsyncConnection[Any]) -> None:
            await register_vector_async(c)
            # Timestamps come back in UTC whatever the server's default zone is. The HNSW settings hold
            # for the whole session (no per-query transaction and SET LOCAL round trips); iterative scans
            # keep a filtered HNSW search going until it has `limit` rows (pgvector ≥ 0.8).
            # force_custom_plan: psycopg prepares a statement after 5 runs, and PostgreSQL may then switch
            # to a generic plan that cannot see the tsquery or the user, e.g. scanning all of a large
            # user's rows instead of the full-text index (measured: keyword search 20 → 70 ms at 1M rows).
            await c.execute(f"SET TIME ZONE 'UTC'; SET hnsw.ef_search = {HNSW_EF_SEARCH}; "
                            "SET hnsw.iterative_scan = relaxed_order; SET plan_cache_mode = force_custom_plan")

        pool: AsyncConnectionPool[AsyncConnection[Any]] = AsyncConnectionPool(
            self._conninfo, min_size=self._min_size, max_size=self._max_size, open=False,
            kwargs={"autocommit": True}, configure=configure, name="gieok")
        try:
            await pool.open(wait=True, timeout=15)
        except psycopg.Error as exc:
            await pool.close()
            raise StoreError(f"cannot open a connection pool to {_redacted(self.url)}: {exc}") from exc
        self._pool = pool

    async def close(self) -> None:
        if self._fts_refresh is not None:
            self._fts_refresh.cancel()
            self._fts_refresh = None
        if self._listener is not None:
            await self._listener.close()
            self._listener = None
        if self._pool is not None:
            await self._pool.close()
            self._pool = None

    @asynccontextmanager
    async def _conn(self) -> AsyncIterator[AsyncConnection[Any]]:
        """A pooled connection; database errors leave here as StoreError (the one translation point)."""
        if self._pool is None:
            raise StoreError("store is not open: call `await store.open()` first")
        try:
            async with self._pool.connection() as con:
                yield con
        except psycopg.Error as exc:
            raise StoreError(f"PostgreSQL: {exc}") from exc

    async def _ensure_extensions(self, con: AsyncConnection[Any]) -> None:
        have = dict(await (await con.execute("SELECT extname, extversion FROM pg_extension")).fetchall())
        for ext in EXTENSIONS:
            if ext in have:
                continue
            try:
                await con.execute(f"CREATE EXTENSION IF NOT EXISTS {ext}")
            except psycopg.errors.InsufficientPrivilege as exc:
                raise StoreError(f"PostgreSQL extension {ext!r} is missing and this role cannot create it "
                                 f"({exc}). Ask the database owner to run: CREATE EXTENSION {ext}; "
                                 "(pgvector ≥ 0.8 is needed for `vector`).") from exc
        row = await (await con.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")).fetchone()
        version = tuple(int(p) for p in str(row[0] if row else "0").split(".")[:2] if p.isdigit())
        if version < PGVECTOR_MIN:
            # Before 0.8 a filtered HNSW scan cannot iterate: per-user searches of large users would all
            # fall back to exact scans.
            raise StoreError(f"pgvector {row[0] if row else '?'} is too old: gieok needs ≥ 0.8 (iterative index "
                             "scans). Ask the database owner to run: ALTER EXTENSION vector UPDATE;")

    async def _migrate(self, con: AsyncConnection[Any]) -> None:
        # Several replicas may start at once: one migrates, the others wait and then find nothing to do.
        # Polling a try-lock, as in `_ensure_vector_index`: a blocked lock call would hold a snapshot that a
        # concurrent CREATE INDEX CONCURRENTLY waits for.
        while not await _fetch_bool(con, "SELECT pg_try_advisory_lock(%s)", (_MIGRATION_LOCK,)):
            await asyncio.sleep(0.05)
        try:
            await self._ensure_extensions(con)
            await con.execute("CREATE TABLE IF NOT EXISTS migration_history (version integer PRIMARY KEY, "
                              "name text NOT NULL, applied_at timestamptz NOT NULL)")
            done = {r[0] for r in await (await con.execute("SELECT version FROM migration_history")).fetchall()}
            for version, name, fn in MIGRATIONS:
                if version in done:
                    continue
                try:
                    async with con.transaction():
                        await fn(con)
                        await con.execute("INSERT INTO migration_history VALUES (%s, %s, %s)",
                                          (version, name, utcnow()))
                except psycopg.Error as exc:
                    raise StoreError(f"migration {version:03d}_{name} failed: {exc}") from exc
        finally:
            await con.execute("SELECT pg_advisory_unlock(%s)", (_MIGRATION_LOCK,))

    async def schema_version(self) -> int:
        async with self._conn() as con:
            row = await (await con.execute("SELECT COALESCE(MAX(version), 0) FROM migration_history")).fetchone()
        return int(row[0]) if row else 0

    async def _ensure_vector_index(self, model: str, dims: int) -> None:
        """The HNSW index for one (model, dimension), built CONCURRENTLY so capture is never blocked behind
        the build. A try-lock loop rather than a blocking advisory lock: a session waiting on a lock
        holds a snapshot, and CREATE INDEX CONCURRENTLY waits for every older snapshot — a deadlock."""
        if (model, dims) in self._indexed:
            return
        name = vector_index_name(model, dims)
        ddl = vector_index_ddl(model, dims)
        valid_sql = "SELECT i.indisvalid FROM pg_index i WHERE i.indexrelid = to_regclass(%s)"
        async with self._conn() as con:
            row = await (await con.execute(valid_sql, (name,))).fetchone()
            if row and row[0]:
                self._indexed.add((model, dims))
                return
            while not await _fetch_bool(con, "SELECT pg_try_advisory_lock(%s)", (_INDEX_LOCK,)):
                await asyncio.sleep(0.05)
            try:
                row = await (await con.execute(valid_sql, (name,))).fetchone()
                if row and not row[0]:
                    # A build that was interrupted leaves an invalid index that IF NOT EXISTS would keep.
                    await con.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(name)))
                if not (row and row[0]):
                    await con.execute(ddl)
                await con.execute("INSERT INTO embedding_indexes (model, dims, index_name) VALUES (%s, %s, %s) "
                                  "ON CONFLICT DO NOTHING", (model, dims, name))
            finally:
                await con.execute("SELECT pg_advisory_unlock(%s)", (_INDEX_LOCK,))
        self._indexed.add((model, dims))

    # --- memory rows -----------------------------------------------------------------------------------
    _INSERT_COLS = (*_MEMORY_COLS, "search_text", "embedding")
    _INSERT_SQL = (f"INSERT INTO memory ({', '.join(_INSERT_COLS)}) VALUES "
                   f"({', '.join('%s' + _CASTS.get(c, '') for c in _INSERT_COLS)}) "
                   "ON CONFLICT (user_id, session_id, content_hash, created_at) DO NOTHING RETURNING id")

    def _insert_params(self, m: Memory, search_text: str, vector: Vector | None = None) -> list[Any]:
        return [_db_value(c, getattr(m, c)) for c in _MEMORY_COLS] + [search_text, vector]

    async def insert_memory(self, m: Memory, search_text: str) -> tuple[str, bool]:
        async with self._conn() as con:
            try:
                row = await (await con.execute(self._INSERT_SQL, self._insert_params(m, search_text))).fetchone()
            except psycopg.errors.IntegrityError as exc:
                raise StoreError(f"row refused by the database: {exc}") from exc
            if row:
                return m.id, True
            row = await (await con.execute(
                "SELECT id FROM memory WHERE user_id = %s AND session_id = %s AND content_hash = %s "
                "AND created_at = %s", (m.user_id, m.session_id, m.content_hash, m.created_at))).fetchone()
        if row is None:  # pragma: no cover - the conflicting row was hard-deleted in between
            raise StoreError(f"row {m.id} conflicted with a row that no longer exists; try again")
        return str(row[0]), False

    async def insert_batch(self, rows: list[NewRow], *, request: RequestKey | None = None) -> list[tuple[str, bool]]:
        async with self._conn() as con, con.transaction():
            try:
                return await insert_rows(con, rows, request, self._INSERT_SQL,
                                         lambda m, text: self._insert_params(m, text))
            except psycopg.errors.IntegrityError as exc:
                raise StoreError(f"row refused by the database: {exc}") from exc

    async def insert_many(self, rows: list[tuple[Memory, str]], vectors: dict[str, Vector] | None = None) -> int:
        if not rows:
            return 0
        vectors = vectors or {}
        for model, dims in {(m.embedding_model, len(vectors[m.id])) for m, _ in rows if m.id in vectors}:
            await self._ensure_vector_index(model, dims)
        params = [self._insert_params(m, text, vectors.get(m.id)) for m, text in rows]
        async with self._conn() as con, con.transaction(), con.cursor() as cur:
            await cur.executemany(self._INSERT_SQL, params, returning=True)
            n = 0
            while True:
                n += len(await cur.fetchall())
                if not cur.nextset():
                    break
        return n

    async def get_memory(self, memory_id: str, *, include_deleted: bool = False,
                         viewer: Principal | None = None) -> Memory | None:
        q = f"SELECT {_SELECT} FROM memory m WHERE m.id = %s"
        params: list[Any] = [memory_id]
        if not include_deleted:
            q += " AND m.deleted_at IS NULL"
        if viewer is not None:
            vis, vparams = visible_clause(viewer, "%s")
            q += " AND " + vis
            params += vparams
        async with self._conn() as con:
            row = await (await con.execute(q, params)).fetchone()
        return _row_to_memory(row) if row else None

    async def get_memories(self, ids: list[str], *, viewer: Principal | None = None) -> list[Memory]:
        if not ids:
            return []
        vis, vparams = visible_clause(viewer, "%s") if viewer is not None else ("TRUE", [])
        async with self._conn() as con:
            rows = await (await con.execute(f"SELECT {_SELECT} FROM memory m WHERE m.id = ANY(%s) "
                                            f"AND m.deleted_at IS NULL AND {vis}", [list(ids), *vparams])).fetchall()
        by_id = {r[0]: _row_to_memory(r) for r in rows}
        return [by_id[i] for i in ids if i in by_id]

    async def update_memory(self, memory_id: str, changes: dict[str, Any], search_text: str | None = None) -> bool:
        changes = checked_changes(changes)
        cols = list(changes)
        values = [_db_value(c, changes[c]) for c in cols]
        if search_text is not None:
            cols.append("search_text")
            values.append(search_text)
        sets = ", ".join(f"{c} = %s{_CASTS.get(c, '')}" for c in cols)
        async with self._conn() as con, con.transaction():
            cur = await con.execute(f"UPDATE memory SET {sets} WHERE id = %s", [*values, memory_id])
            if cur.rowcount == 1 and rewrites_neighbours(changes, search_text):
                # The messages around this one index its words: they change with it, in this transaction.
                await refresh_context_rows(con, [memory_id])
            return cur.rowcount == 1

    async def hard_delete(self, memory_id: str) -> bool:
        # Links and feedback go by ON DELETE CASCADE; the full-text entry and the vector live in the row.
        # The neighbours' context is rebuilt without the row in the same transaction: its words go too.
        async with self._conn() as con, con.transaction():
            around = await neighbour_ids(con, [memory_id])
            cur = await con.execute("DELETE FROM memory WHERE id = %s", (memory_id,))
            await refresh_context_rows(con, sorted(around), expand=False)
            return cur.rowcount == 1

    async def refresh_context(self, ids: list[str]) -> int:
        if not ids:
            return 0
        async with self._conn() as con, con.transaction():
            return await refresh_context_rows(con, ids)

    async def list_memories(self, f: SearchFilters, *, limit: int = 100, newest_first: bool = True,
                            after_id: str | None = None) -> list[Memory]:
        where, params = where_clause(f, "%s", _tags_sql, lambda t: t)
        if after_id:
            where += " AND m.id < %s" if newest_first else " AND m.id > %s"
            params.append(after_id)
        order = "DESC" if newest_first else "ASC"
        q = f"SELECT {_SELECT} FROM memory m WHERE {where} ORDER BY m.created_at {order}, m.id {order} LIMIT %s"
        async with self._conn() as con:
            rows = await (await con.execute(q, [*params, limit])).fetchall()
        return [_row_to_memory(r) for r in rows]

    async def iter_memories(self, user_id: str | None, *, include_deleted: bool = False,
                            batch: int = 500) -> AsyncIterator[Memory]:
        last = 0
        while True:
            q = f"SELECT m.seq, {_SELECT} FROM memory m WHERE m.seq > %s"
            params: list[Any] = [last]
            if user_id is not None:
                q += " AND m.user_id = %s"
                params.append(user_id)
            if not include_deleted:
                q += " AND m.deleted_at IS NULL"
            async with self._conn() as con:
                rows = await (await con.execute(q + " ORDER BY m.seq LIMIT %s", [*params, batch])).fetchall()
            if not rows:
                return
            for r in rows:
                yield _row_to_memory(r[1:])
            last = rows[-1][0]

    async def get_embedding(self, memory_id: str) -> tuple[str, Vector] | None:
        async with self._conn() as con:
            row = await (await con.execute("SELECT embedding_model, embedding FROM memory WHERE id = %s",
                                           (memory_id,))).fetchone()
        if not row or row[1] is None:
            return None
        return str(row[0]), _vec(row[1])

    # --- search ----------------------------------------------------------------------------------------
    async def keyword_search(self, f: SearchFilters, terms: list[list[str]],
                             limit: int) -> list[tuple[Memory, float]]:
        terms = [t for t in terms if t]
        if not terms:
            return []
        where, params = where_clause(f, "%s", _tags_sql, lambda t: t)
        stats = await self._fts_stats()
        # Bounded work on huge stores, as on SQLite (gieok.store.base.MAX_SCORED_MATCHES).
        kept, potential = rarest_terms(terms, [stats.df(t) for t in terms], self.MAX_SCORED_MATCHES)
        phrases = [" ".join(t) for t in kept]
        idf = [stats.idf(t) for t in kept]
        newest = potential > self.MAX_SCORED_MATCHES
        q = bm25_sql(len(phrases), where, _SELECT, newest=newest)
        cap = [self.MAX_SCORED_MATCHES] if newest else []
        async with self._conn() as con:
            rows = await (await con.execute(q, [*phrases, *params, *cap, *phrases, stats.avg_len, *idf,
                                                limit])).fetchall()
        return [(_row_to_memory(r[:-1]), float(r[-1])) for r in rows]

    async def _fts_stats(self) -> FtsStats:
        """Row count, mean prepared-text length and lexeme frequencies, from the statistics ANALYZE keeps
        (autovacuum refreshes them): reading them costs a catalogue lookup, counting matches would cost a
        scan per query. idf needs magnitudes, not exact counts, so they are cached for a few minutes and
        refreshed in the background: only the first search of a process waits for them."""
        if self._fts is None:
            self._fts = await self._read_fts_stats()
        elif time.monotonic() - self._fts.at > FTS_STATS_TTL_S and self._fts_refresh is None:
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
        where, params = where_clause(f, "%s", _tags_sql, lambda t: t)
        escaped = needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        q = (f"SELECT {_SELECT} FROM memory m WHERE {where} AND m.content ILIKE %s "
             f"ORDER BY m.created_at DESC LIMIT %s")
        async with self._conn() as con:
            rows = await (await con.execute(q, [*params, f"%{escaped}%", limit])).fetchall()
        return [_row_to_memory(r) for r in rows]

    async def vector_search(self, f: SearchFilters, model: str, query: Vector,
                            limit: int) -> list[tuple[Memory, float]]:
        dims = int(query.shape[0])
        if limit <= 0 or dims == 0:
            return []
        where, params = where_clause(f, "%s", _tags_sql, lambda t: t)
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
            large_until = self._large_users.get(key, 0.0)
            if large_until > time.monotonic():
                n = exact_max + 1
            else:
                # Counting stops at the threshold: an index-only scan of at most exact_max entries (with a
                # viewer: its own rows or the shared ones it may see).
                row = await (await con.execute(
                    f"SELECT count(*) FROM (SELECT 1 FROM memory m WHERE {owner} AND m.embedding_model = %s "
                    "AND m.embedding IS NOT NULL LIMIT %s) t", (*owner_params, model, exact_max + 1))).fetchone()
                n = int(row[0]) if row else 0
                if n > exact_max:
                    # Large users stay large: skip the count for a while. (Small counts are not cached: a
                    # stale zero would hide new vectors.)
                    self._large_users[key] = time.monotonic() + LARGE_USER_TTL_S
            if n == 0:
                return []
            if n > exact_max:
                hits = await self._hnsw_search(con, where, params, model_cond, typ, qvec, limit)
                if len(hits) >= limit:
                    return hits
            return await self._exact_search(con, where, params, model_cond, typ, qvec, limit)

    async def _hnsw_search(self, con: AsyncConnection[Any], where: str, params: list[Any], model_cond: sql.Composed,
                           typ: str, qvec: Vector, limit: int) -> list[tuple[Memory, float]]:
        inner = (f"SELECT m.id, m.embedding::{typ} <=> %s::{typ} AS dist FROM memory m "
                 f"WHERE {where} AND {{model}} ORDER BY dist LIMIT %s")
        q = sql.SQL(knn_sql(inner, typ, _SELECT)).format(model=model_cond)
        if limit <= HNSW_EF_SEARCH:
            rows = await (await con.execute(q, [qvec, *params, limit], prepare=False)).fetchall()
        else:
            # A long candidate list needs a larger ef_search. prepare=False here and above: a plan prepared
            # under other settings would not see a SET LOCAL.
            async with con.transaction():
                await con.execute(f"SET LOCAL hnsw.ef_search = {int(limit)}")
                rows = await (await con.execute(q, [qvec, *params, limit], prepare=False)).fetchall()
        return [(_row_to_memory(r[:-1]), float(r[-1])) for r in rows]

    async def _exact_search(self, con: AsyncConnection[Any], where: str, params: list[Any], model_cond: sql.Composed,
                            typ: str, qvec: Vector, limit: int) -> list[tuple[Memory, float]]:
        # MATERIALIZED: the candidates are fetched by the btree/filters first and then ranked exactly;
        # without it the planner may push ORDER BY … LIMIT into the HNSW index and lose filtered rows.
        inner = (f"WITH c AS MATERIALIZED (SELECT m.id, m.embedding FROM memory m WHERE {where} AND {{model}}) "
                 f"SELECT c.id, c.embedding::{typ} <=> %s::{typ} AS dist FROM c ORDER BY dist LIMIT %s")
        q = sql.SQL(knn_sql(inner, typ, _SELECT)).format(model=model_cond)
        rows = await (await con.execute(q, [*params, qvec, limit], prepare=False)).fetchall()
        return [(_row_to_memory(r[:-1]), float(r[-1])) for r in rows]

    async def get_vectors(self, ids: list[str], model: str) -> dict[str, Vector]:
        if not ids:
            return {}
        async with self._conn() as con:
            rows = await (await con.execute("SELECT id, embedding FROM memory WHERE id = ANY(%s) AND "
                                            "embedding_model = %s AND embedding IS NOT NULL",
                                            (list(ids), model))).fetchall()
        return {r[0]: _vec(r[1]) for r in rows}

    async def list_due_reviews(self, user_id: str, now: datetime, limit: int) -> list[Memory]:
        async with self._conn() as con:
            rows = await (await con.execute(
                f"SELECT {_SELECT} FROM memory m WHERE m.user_id = %s AND m.next_review_at <= %s "
                "AND m.deleted_at IS NULL AND m.is_active ORDER BY m.next_review_at LIMIT %s",
                (user_id, now, limit))).fetchall()
        return [_row_to_memory(r) for r in rows]

    async def touch(self, ids: list[str], at: datetime) -> None:
        if not ids:
            return

        async def run() -> None:
            # Rows are locked in id order, as complete_cold and the context refresh lock theirs: concurrent
            # writers then queue on a row instead of deadlocking (1 in ~600 searches under load did).
            async with self._conn() as con:
                await con.execute("UPDATE memory m SET view_count = m.view_count + 1, last_accessed_at = %s "
                                  "FROM (SELECT id FROM memory WHERE id = ANY(%s) ORDER BY id FOR UPDATE) o "
                                  "WHERE m.id = o.id", (at, sorted(set(ids))))
        await _retry_deadlock(run)

    # --- cold path -------------------------------------------------------------------------------------
    _PENDING = PENDING_PREDICATE.replace("tag_status", "m.tag_status").replace(
        "embed_status", "m.embed_status").replace("deleted_at", "m.deleted_at")
    # Implies _PENDING, so the partial index on pending rows serves both.
    _PENDING_TAGS = "m.tag_status <> 'ok' AND m.deleted_at IS NULL"

    async def count_pending(self, max_attempts: int, *, need_embedding: bool = True) -> int:
        pending = self._PENDING if need_embedding else self._PENDING_TAGS
        async with self._conn() as con:
            row = await (await con.execute(f"SELECT count(*) FROM memory m WHERE {pending} AND "
                                           "(m.lease_until IS NULL OR m.lease_until < %s)", (utcnow(),))).fetchone()
        return int(row[0]) if row else 0

    async def claim_pending(self, worker: str, limit: int, lease_seconds: float, max_attempts: int,
                            now: datetime, *, need_embedding: bool = True) -> list[Memory]:
        until = now + timedelta(seconds=lease_seconds)
        pending = self._PENDING if need_embedding else self._PENDING_TAGS
        # SKIP LOCKED: concurrent workers pass over rows another is claiming instead of queueing on them;
        # a row committed by another claimer meanwhile is re-checked (READ COMMITTED) and its fresh lease
        # excludes it.
        q = (f"WITH c AS (SELECT m.id FROM memory m WHERE {pending} AND (m.lease_until IS NULL OR "
             f"m.lease_until < %s) ORDER BY m.created_at LIMIT %s FOR UPDATE SKIP LOCKED) "
             f"UPDATE memory m SET lease_until = %s, lease_owner = %s FROM c WHERE m.id = c.id "
             f"RETURNING {_SELECT}, m.seq")
        async with self._conn() as con:
            rows = await (await con.execute(q, (now, limit, until, worker))).fetchall()
        rows.sort(key=lambda r: (r[_MEMORY_COLS.index("created_at")], r[-1]))
        return [_row_to_memory(r[:-1]) for r in rows]

    _COMPLETE_SQL = """
        UPDATE memory SET lease_until = NULL, lease_owner = NULL, updated_at = %(now)s,
            tag_status = CASE WHEN %(tagged)s THEN 'ok' ELSE tag_status END,
            p_tags = COALESCE(%(p_tags)s::text[], p_tags),
            d_tags = COALESCE(%(d_tags)s::text[], d_tags),
            embedding = CASE WHEN %(embedded)s THEN %(embedding)s::vector ELSE embedding END,
            embedding_model = CASE WHEN %(embedded)s THEN %(model)s::text ELSE embedding_model END,
            embed_status = CASE WHEN %(embedded)s THEN 'ok' ELSE embed_status END,
            cold_attempts = CASE WHEN (%(tagged)s OR tag_status = 'ok') AND (%(embedded)s OR embed_status = 'ok')
                                 THEN 0 ELSE cold_attempts END,
            cold_error = CASE WHEN (%(tagged)s OR tag_status = 'ok') AND (%(embedded)s OR embed_status = 'ok')
                              THEN '' ELSE cold_error END
        WHERE id = %(id)s"""

    async def complete_cold(self, results: list[ColdResult], now: datetime) -> None:
        if not results:
            return
        for model, dims in {(r.embedding_model or "", len(r.embedding)) for r in results if r.embedding is not None}:
            await self._ensure_vector_index(model, dims)
        params = [{
            "id": r.id, "now": now, "tagged": r.p_tags is not None or r.d_tags is not None,
            "p_tags": r.p_tags, "d_tags": r.d_tags, "embedded": r.embedding is not None,
            "embedding": None if r.embedding is None else np.asarray(r.embedding, dtype=np.float32),
            "model": r.embedding_model or "",
        } for r in results]
        params.sort(key=lambda p: str(p["id"]))  # id order: see `touch`

        async def run() -> None:
            async with self._conn() as con, con.transaction(), con.cursor() as cur:
                await cur.executemany(self._COMPLETE_SQL, params)
        await _retry_deadlock(run)

    async def fail_cold(self, memory_id: str, error: str, *, permanent: bool, max_attempts: int,
                        now: datetime) -> None:
        # One statement, so two workers failing the same row cannot lose an attempt. SET expressions see
        # the old row, hence `cold_attempts + 1` throughout.
        out = "(%(permanent)s OR cold_attempts + 1 >= %(max)s)"
        q = (f"UPDATE memory SET cold_attempts = cold_attempts + 1, cold_error = %(error)s, lease_owner = NULL, "
             f"lease_until = CASE WHEN {out} THEN %(cooldown)s::timestamptz "
             f"ELSE %(now)s::timestamptz + interval '1 second' * power(2, cold_attempts + 1) END, "
             f"tag_status = CASE WHEN {out} AND tag_status <> 'ok' THEN 'failed' ELSE tag_status END, "
             f"embed_status = CASE WHEN {out} AND embed_status <> 'ok' THEN 'failed' ELSE embed_status END "
             f"WHERE id = %(id)s")
        async with self._conn() as con:
            await con.execute(q, {"permanent": permanent, "max": max_attempts, "error": error[:2000],
                                  "cooldown": now + FAILED_COOLDOWN, "now": now, "id": memory_id})

    async def reset_failed(self) -> int:
        async with self._conn() as con:
            cur = await con.execute(
                "UPDATE memory SET lease_until = NULL, cold_attempts = 0, "
                "tag_status = CASE tag_status WHEN 'failed' THEN 'pending' ELSE tag_status END, "
                "embed_status = CASE embed_status WHEN 'failed' THEN 'pending' ELSE embed_status END "
                "WHERE tag_status = 'failed' OR embed_status = 'failed'")
            n = cur.rowcount
            if n:
                await con.execute(f"NOTIFY {NOTIFY_CHANNEL}")
        return n

    async def mark_for_reembed(self, model: str) -> int:
        async with self._conn() as con:
            cur = await con.execute("UPDATE memory SET embed_status = 'pending', cold_attempts = 0 "
                                    "WHERE embedding_model <> '' AND embedding_model <> %s "
                                    "AND embed_status <> 'pending' AND deleted_at IS NULL", (model,))
            n = cur.rowcount
            if n:
                await con.execute(f"NOTIFY {NOTIFY_CHANNEL}")
        return n

    async def wait_for_pending(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for new librarian work (LISTEN gieok_pending). True if woken.

        The listening connection stays open between calls, so a notification sent while nobody was
        waiting is delivered by the next call instead of being lost."""
        async with self._listen_lock:
            try:
                if self._listener is None or self._listener.closed:
                    self._listener = await AsyncConnection.connect(self._conninfo, autocommit=True,
                                                                   connect_timeout=10)
                    await self._listener.execute(f"LISTEN {NOTIFY_CHANNEL}")
                woken = False
                async for _ in self._listener.notifies(timeout=timeout, stop_after=1):
                    woken = True
                if woken:  # several inserts make several notifications: one wake-up is enough
                    async for _ in self._listener.notifies(timeout=0.001):
                        pass
                return woken
            except psycopg.Error:
                # A dropped connection: reconnect next time; the caller's periodic wake-up covers the gap.
                if self._listener is not None:
                    await self._listener.close()
                self._listener = None
                await asyncio.sleep(min(timeout, 1.0))
                return False

    # --- librarian jobs ---------------------------------------------------------------------------------
    async def list_user_ids(self) -> list[str]:
        async with self._conn() as con:
            rows = await (await con.execute("SELECT DISTINCT user_id FROM memory ORDER BY user_id")).fetchall()
        return [r[0] for r in rows]

    async def acquire_job(self, name: str, owner: str, *, lease_seconds: float, min_interval_s: float,
                          now: datetime) -> bool:
        # One upsert decides, as in SQLite: ON CONFLICT locks the job row, so two workers racing for it are
        # serialised and the second sees the first's live lease in the WHERE.
        async with self._conn() as con:
            cur = await con.execute(
                "INSERT INTO librarian_jobs (name, owner, lease_until, last_started_at) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (name) DO UPDATE SET owner = EXCLUDED.owner, lease_until = EXCLUDED.lease_until, "
                "last_started_at = EXCLUDED.last_started_at "
                "WHERE (librarian_jobs.lease_until IS NULL OR librarian_jobs.lease_until < %s "
                "       OR librarian_jobs.owner = EXCLUDED.owner) "
                "AND (librarian_jobs.last_finished_at IS NULL OR librarian_jobs.last_finished_at <= %s)",
                (name, owner, now + timedelta(seconds=lease_seconds), now, now,
                 now - timedelta(seconds=min_interval_s)))
            return cur.rowcount == 1

    async def finish_job(self, name: str, owner: str, result: dict[str, Any], now: datetime) -> None:
        async with self._conn() as con:
            await con.execute("UPDATE librarian_jobs SET owner = NULL, lease_until = NULL, last_finished_at = %s, "
                              "last_result = %s WHERE name = %s AND owner = %s",
                              (now, Jsonb(result, dumps=_json_dumps), name, owner))

    async def list_jobs(self) -> list[dict[str, Any]]:
        async with self._conn() as con:
            rows = await (await con.execute("SELECT name, owner, lease_until, last_started_at, last_finished_at, "
                                            "last_result FROM librarian_jobs ORDER BY name")).fetchall()
        return [{"name": r[0], "owner": r[1], "lease_until": r[2], "last_started_at": r[3],
                 "last_finished_at": r[4], "last_result": r[5] or {}} for r in rows]

    # --- users, tags, links, feedback ------------------------------------------------------------------
    async def get_user(self, user_id: str) -> UserProfile | None:
        async with self._conn() as con:
            row = await (await con.execute("SELECT user_id, user_name, core_profile, sub_profile, created_at, "
                                           "updated_at FROM users WHERE user_id = %s", (user_id,))).fetchone()
        if not row:
            return None
        return UserProfile(row[0], row[1], list(row[2]), list(row[3]), row[4], row[5])

    async def save_user(self, profile: UserProfile) -> None:
        now = utcnow()
        async with self._conn() as con:
            await con.execute(
                "INSERT INTO users (user_id, user_name, core_profile, sub_profile, created_at, updated_at) "
                "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (user_id) DO UPDATE SET user_name = EXCLUDED.user_name, "
                "core_profile = EXCLUDED.core_profile, sub_profile = EXCLUDED.sub_profile, "
                "updated_at = EXCLUDED.updated_at",
                (profile.user_id, profile.user_name, Jsonb(profile.core_profile), Jsonb(profile.sub_profile),
                 now, now))

    async def list_project_tags(self) -> list[ProjectTag]:
        async with self._conn() as con:
            rows = await (await con.execute("SELECT name, alias_of, description, created_by, usage_count "
                                            "FROM project_tags ORDER BY usage_count DESC, name")).fetchall()
        return [ProjectTag(*r) for r in rows]

    async def upsert_project_tag(self, tag: ProjectTag) -> None:
        async with self._conn() as con:
            await con.execute(
                "INSERT INTO project_tags (name, alias_of, description, created_by, usage_count, created_at) "
                "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (name) DO UPDATE SET alias_of = EXCLUDED.alias_of, "
                "description = CASE EXCLUDED.description WHEN '' THEN project_tags.description "
                "ELSE EXCLUDED.description END, usage_count = EXCLUDED.usage_count",
                (tag.name, tag.alias_of, tag.description, tag.created_by, tag.usage_count, utcnow()))

    async def add_link(self, src: str, dst: str, relation: str) -> None:
        try:
            async with self._conn() as con:
                await con.execute("INSERT INTO memory_links (src, dst, relation, created_at) VALUES (%s, %s, %s, %s) "
                                  "ON CONFLICT DO NOTHING", (src, dst, relation, utcnow()))
        except StoreError as exc:
            if isinstance(exc.__cause__, psycopg.errors.IntegrityError):
                raise StoreError(f"cannot link {src} → {dst}: {exc.__cause__}") from exc.__cause__
            raise

    async def list_links(self, memory_id: str, *, viewer: Principal | None = None) -> list[Link]:
        q = "SELECT l.src, l.dst, l.relation, l.created_at FROM memory_links l WHERE (l.src = %s OR l.dst = %s)"
        params: list[Any] = [memory_id, memory_id]
        if viewer is not None:
            for end in ("src", "dst"):
                vis, vparams = visible_clause(viewer, "%s", alias="v")
                q += f" AND EXISTS (SELECT 1 FROM memory v WHERE v.id = l.{end} AND v.deleted_at IS NULL AND {vis})"
                params += vparams
        async with self._conn() as con:
            rows = await (await con.execute(q + " ORDER BY l.created_at", params)).fetchall()
        return [Link(r[0], r[1], r[2], r[3]) for r in rows]

    async def add_feedback(self, memory_id: str, event: str, score: float, ts: datetime) -> None:
        counter = {"cited": "cite_count", "edited": "edit_count", "used": "view_count"}.get(event)
        async with self._conn() as con, con.transaction():
            await con.execute("INSERT INTO feedback_events (memory_id, event, score, ts) VALUES (%s, %s, %s, %s)",
                              (memory_id, event, score, ts))
            if counter:
                await con.execute(f"UPDATE memory SET {counter} = {counter} + 1 WHERE id = %s", (memory_id,))

    async def list_feedback(self, memory_id: str) -> list[FeedbackRow]:
        async with self._conn() as con:
            rows = await (await con.execute("SELECT memory_id, event, score, ts FROM feedback_events "
                                            "WHERE memory_id = %s ORDER BY id", (memory_id,))).fetchall()
        return [FeedbackRow(r[0], r[1], float(r[2]), r[3]) for r in rows]

    async def stats(self, user_id: str | None) -> dict[str, Any]:
        cond, params = ("WHERE user_id = %s", [user_id]) if user_id else ("", [])
        also = cond + (" AND" if cond else "WHERE")
        live = "deleted_at IS NULL"
        async with self._conn() as con:
            r = await (await con.execute(
                f"SELECT count(*), count(*) FILTER (WHERE {live} AND is_active), "
                f"count(*) FILTER (WHERE {live} AND NOT is_active), count(*) FILTER (WHERE deleted_at IS NOT NULL), "
                f"count(*) FILTER (WHERE is_pinned AND {live}), "
                f"count(*) FILTER (WHERE (tag_status = 'pending' OR embed_status = 'pending') AND {live}), "
                f"count(*) FILTER (WHERE (tag_status = 'failed' OR embed_status = 'failed') AND {live}), "
                f"min(created_at), max(created_at) FROM memory {cond}", params)).fetchone()
            assert r is not None
            by_platform = await (await con.execute(
                f"SELECT agent_platform, count(*) FROM memory {cond} GROUP BY 1 ORDER BY 2 DESC", params)).fetchall()
            by_model = await (await con.execute(
                f"SELECT embedding_model, count(*) FROM memory {cond} GROUP BY 1", params)).fetchall()
            last_err = await (await con.execute(
                f"SELECT id, cold_error, updated_at FROM memory {also} cold_error <> '' "
                "ORDER BY updated_at DESC LIMIT 1", params)).fetchone()
            recent = await (await con.execute(
                f"SELECT count(*) FROM memory {also} embed_status = 'ok' AND updated_at >= %s",
                [*params, utcnow() - timedelta(hours=1)])).fetchone()
        return {
            "backend": "postgres", "url": _redacted(self.url), "total": r[0], "active": r[1], "archived": r[2],
            "deleted": r[3], "pinned": r[4], "pending": r[5], "failed": r[6],
            "oldest": iso(r[7]), "newest": iso(r[8]),
            "by_platform": {k or "(none)": v for k, v in by_platform},
            "by_embedding_model": {k or "(none)": v for k, v in by_model},
            "last_error": {"id": last_err[0], "error": last_err[1], "at": iso(last_err[2])} if last_err else None,
            "processed_last_hour": recent[0] if recent else 0,
        }

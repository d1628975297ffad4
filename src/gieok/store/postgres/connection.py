"""The PostgreSQL connection: the pool (UTC, HNSW session settings), the one place psycopg errors become
`StoreError` (`_conn`), extensions, migrations under an advisory lock, the per-(model, dimension) HNSW
indexes, the doctor's checks. The store's other parts (`memories`, `search`, `queue`, `profiles`) build on
`PostgresBase`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg
from pgvector.psycopg import register_vector_async
from psycopg import AsyncConnection, sql
from psycopg_pool import AsyncConnectionPool

from gieok.core.dates import utcnow
from gieok.core.errors import ConfigError, StoreError
from gieok.store.base import Check
from gieok.store.postgres import migrations
from gieok.store.postgres.text import FtsStats
from gieok.store.postgres.vectors import vector_index_ddl, vector_index_name
from gieok.store.shared import columns_check
from gieok.store.term_cache import TermCache

HNSW_EF_SEARCH = 100
PGVECTOR_MIN = (0, 8)
NOTIFY_CHANNEL = "gieok_pending"
_MIGRATION_LOCK = 0x67696F6B01  # advisory lock keys ("giok" + n): one migrator, one index builder at a time
_INDEX_LOCK = 0x67696F6B02


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


async def fetch_bool(con: AsyncConnection[Any], query: str, params: tuple[Any, ...]) -> bool:
    row = await (await con.execute(query, params)).fetchone()
    return bool(row and row[0])


def redacted(url: str) -> str:
    parts = urlsplit(url)
    if parts.password:
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
        return urlunsplit(parts._replace(netloc=netloc))
    return url


class PostgresBase:
    SCHEMA_VERSION = migrations.MIGRATIONS[-1][0]

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
        self._small_users: dict[tuple[str, str], float] = {}
        self._fts_refresh: asyncio.Task[None] | None = None
        self._terms: dict[tuple[str, str], TermCache] = {}  # (user, model): gieok.store.term_cache

    async def open(self) -> None:
        if self._pool is not None:
            return
        try:
            con = await AsyncConnection.connect(self._conninfo, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            raise StoreError(f"cannot connect to PostgreSQL at {redacted(self.url)}: {exc}. Check "
                             "GIEOK_DATABASE_URL and that the server is running.") from exc
        async with con:
            try:
                await self._migrate(con)
            except psycopg.Error as exc:
                raise StoreError(f"cannot prepare the schema in {redacted(self.url)}: {exc}") from exc

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
            raise StoreError(f"cannot open a connection pool to {redacted(self.url)}: {exc}") from exc
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
        for ext in migrations.EXTENSIONS:
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
        while not await fetch_bool(con, "SELECT pg_try_advisory_lock(%s)", (_MIGRATION_LOCK,)):
            await asyncio.sleep(0.05)
        try:
            await self._ensure_extensions(con)
            await con.execute("CREATE TABLE IF NOT EXISTS migration_history (version integer PRIMARY KEY, "
                              "name text NOT NULL, applied_at timestamptz NOT NULL)")
            done = {r[0] for r in await (await con.execute("SELECT version FROM migration_history")).fetchall()}
            for version, name, fn in migrations.MIGRATIONS:
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
            while not await fetch_bool(con, "SELECT pg_try_advisory_lock(%s)", (_INDEX_LOCK,)):
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

    async def check(self) -> list[Check]:
        async with self._conn() as con:
            server = await (await con.execute("SHOW server_version")).fetchone()
            exts = dict(await (await con.execute("SELECT extname, extversion FROM pg_extension")).fetchall())
            have = {r[0] for r in await (await con.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
                "AND table_name = 'memory'")).fetchall()}
        missing = [e for e in migrations.EXTENSIONS if e not in exts]
        versions = ", ".join(f"{e} {exts[e]}" for e in migrations.EXTENSIONS if e in exts)
        ext_check = Check(not missing, f"PostgreSQL {server[0] if server else '?'} with {versions or 'no extensions'}"
                          + (f"; missing {', '.join(missing)}" if missing else ""),
                          "ask the database owner to run: " + " ".join(f"CREATE EXTENSION {e};" for e in missing))
        return [ext_check, columns_check(have)]


async def retry_deadlock(run: Callable[[], Awaitable[None]]) -> None:
    """Run once more if PostgreSQL broke a deadlock by aborting us: the other transaction has finished or
    holds its locks in the same order by now, so the retry goes through."""
    try:
        await run()
    except StoreError as exc:
        if not isinstance(exc.__cause__, psycopg.errors.DeadlockDetected):
            raise
        await asyncio.sleep(0.01)
        await run()

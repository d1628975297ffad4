"""The embedded backend: one SQLite file in WAL mode.

Why it looks like this:
- The stdlib `sqlite3` here cannot load extensions (no sqlite-vec), and an exact numpy scan of a user's
  vectors is fast (MEASURED.md: ~4 ms for 100k × 384), so vectors live in a BLOB column and each process
  keeps a per-(user, model) float32 matrix that it refreshes incrementally through `embed_gen`.
- Full-text search is FTS5 over `search_text`, a prepared form of the content (gieok.core.text) in which
  Korean is split into character bigrams, since no SQLite tokenizer finds 2-syllable Korean words.
- One connection per store, guarded by a lock. Short statements run inline on the event loop (they take
  microseconds; a thread hop would cost more than the work); scans that can take milliseconds run in a
  worker thread.
- Write transactions use BEGIN IMMEDIATE: a deferred read-then-write transaction fails with "database is
  locked" at once, whatever the busy timeout (MEASURED.md).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import numpy as np

from gieok.core.dates import from_iso, iso, utcnow
from gieok.core.errors import ConfigError, StoreError
from gieok.core.models import Memory, SearchFilters
from gieok.core.principal import Principal
from gieok.core.text import fts5_query
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
from gieok.store.context_sql import (
    CONTEXT_CHARS,
    changed_contexts,
    chunks,
    contexts_sql,
    neighbours_sql,
    rewrites_neighbours,
)
from gieok.store.sqlfilters import visible_clause, where_clause
from gieok.store.sqlite.auth_tables import SQLiteAuthTables
from gieok.store.sqlite.batch import insert_rows
from gieok.store.sqlite.migrations import MIGRATIONS

_JSON_COLS = ("p_tags", "d_tags", "meta")
_BOOL_COLS = ("is_subagent", "is_pinned", "is_active")
_TIME_COLS = ("lease_until", "last_accessed_at", "next_review_at", "archived_at", "deleted_at", "created_at",
              "updated_at")
_MEMORY_COLS = (
    "id", "user_id", "agent_platform", "agent_model", "is_subagent", "subagent_model", "subagent_role",
    "session_id", "role", "project", "p_tags", "d_tags", "privacy_scope", "team", "kind", "title", "content",
    "source", "importance", "is_pinned", "content_hash", "embedding_model", "tag_status", "embed_status",
    "cold_attempts", "cold_error", "lease_until", "view_count", "cite_count", "edit_count", "last_accessed_at",
    "next_review_at", "review_interval_days", "is_active", "archived_at", "deleted_at", "created_at",
    "updated_at", "meta",
)
_SELECT = ", ".join("m." + c for c in _MEMORY_COLS)
# The WHERE lets SQLite answer from the partial index on embed_gen instead of scanning the table (a full scan
# per librarian batch cost 7× throughput at 1M rows).
_MAX_GEN = "SELECT COALESCE((SELECT embed_gen FROM memory WHERE embed_gen > 0 ORDER BY embed_gen DESC LIMIT 1), 0)"
# Failed rows wait this long before a later cycle tries them again.
FAILED_COOLDOWN = timedelta(minutes=10)


def _tags_sql(col: str, ph: str) -> str:
    return f"EXISTS (SELECT 1 FROM json_each({col}) WHERE value = {ph})"


def _db_value(col: str, value: Any) -> Any:
    if col in _JSON_COLS:
        return json.dumps(value, ensure_ascii=False)
    if col in _TIME_COLS:
        return iso(value)
    if col in _BOOL_COLS:
        return int(bool(value))
    return value


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False) if value else ("[]" if isinstance(value, list) else "{}")


_CONVERTERS: tuple[tuple[str, Any], ...] = tuple(
    (c, _json if c in _JSON_COLS else iso if c in _TIME_COLS else int if c in _BOOL_COLS else None)
    for c in _MEMORY_COLS)


def _row_to_memory(row: tuple[Any, ...]) -> Memory:
    d = dict(zip(_MEMORY_COLS, row, strict=False))
    for c in _JSON_COLS:
        d[c] = json.loads(d[c])
    for c in _BOOL_COLS:
        d[c] = bool(d[c])
    for c in _TIME_COLS:
        d[c] = from_iso(d[c])
    return Memory(**d)


def _neighbour_ids(db: sqlite3.Connection, ids: list[str]) -> set[str]:
    out: set[str] = set()
    for chunk in chunks(ids):
        for row in db.execute(neighbours_sql("?", len(chunk)), chunk):
            out.update(x for x in row if x)
    return out


def _refresh_context(db: sqlite3.Connection, ids: list[str], *, expand: bool = True) -> int:
    """Rewrite `context_text` of `ids` (and, with `expand`, of their neighbours) where it changed; the FTS
    trigger reindexes only those rows."""
    targets = sorted(set(ids) | (_neighbour_ids(db, ids) if expand else set()))
    rows: list[tuple[str, str, str]] = []
    for chunk in chunks(targets):
        sql = contexts_sql("?", len(chunk), lambda c: f"substr({c}, -{CONTEXT_CHARS})",
                           lambda c: f"substr({c}, 1, {CONTEXT_CHARS})")
        rows.extend(db.execute(sql, chunk))
    changed = changed_contexts(rows)
    db.executemany("UPDATE memory SET context_text = ? WHERE id = ?", changed)
    return len(changed)


def sqlite_path(url: str) -> str:
    if not url.startswith("sqlite:///"):
        raise ConfigError(f"not a SQLite URL: {url!r} (expected sqlite:///path/to/memory.db)")
    return url[len("sqlite:///"):] or ":memory:"


@dataclass
class _VecCache:
    seqs: np.ndarray            # int64 row seqs
    mat: np.ndarray             # float32 (n, dim), L2-normalised
    gen: int                    # highest embed_gen loaded


class SQLiteStore(SQLiteAuthTables):
    def __init__(self, url: str, busy_timeout_ms: int = 5000) -> None:
        self.url = url
        self.path = sqlite_path(url)
        self._busy_timeout_ms = busy_timeout_ms
        self._lock = threading.RLock()
        self._db: sqlite3.Connection | None = None
        self._vec: dict[tuple[tuple[str, str], str], _VecCache] = {}

    # --- connection ------------------------------------------------------------------------------------
    async def open(self) -> None:
        if self._db is not None:
            return
        if self.path != ":memory:":
            Path(self.path).expanduser().parent.mkdir(parents=True, exist_ok=True)
        try:
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            db.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_ms)}")
            if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")
            db.execute("PRAGMA foreign_keys = ON")
            # Keep the WAL from growing without bound when readers are always active (MEASURED.md).
            db.execute("PRAGMA journal_size_limit = 67108864")
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open SQLite database {self.path}: {exc}. Check GIEOK_DATABASE_URL "
                             "and that the directory is writable.") from exc
        self._db = db
        try:
            self._migrate()
        except BaseException:
            db.close()
            self._db = None
            raise

    async def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            raise StoreError("store is not open: call `await store.open()` first")
        return self._db

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            db = self.db
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            else:
                db.execute("COMMIT")

    def _migrate(self) -> None:
        # Most opens find nothing to do: check with a plain read first, so a CLI or hook opening a busy
        # database does not queue for the write lock behind other agents' captures.
        try:
            done = {r[0] for r in self.db.execute("SELECT version FROM migration_history")}
            if all(v in done for v, _, _ in MIGRATIONS):
                return
        except sqlite3.OperationalError:
            pass  # no history table yet: a new database
        with self._write() as db:
            db.execute("CREATE TABLE IF NOT EXISTS migration_history (version INTEGER PRIMARY KEY, "
                       "name TEXT NOT NULL, applied_at TEXT NOT NULL)")
            done = {r[0] for r in db.execute("SELECT version FROM migration_history")}
            for version, name, fn in MIGRATIONS:
                if version in done:
                    continue
                try:
                    fn(db)
                except sqlite3.Error as exc:
                    raise StoreError(f"migration {version:03d}_{name} failed: {exc}") from exc
                db.execute("INSERT INTO migration_history VALUES (?, ?, ?)", (version, name, iso(utcnow())))

    async def schema_version(self) -> int:
        with self._lock:
            return int(self.db.execute("SELECT COALESCE(MAX(version), 0) FROM migration_history").fetchone()[0])

    # --- memory rows -----------------------------------------------------------------------------------
    _INSERT_COLS = (*_MEMORY_COLS, "search_text")
    _INSERT_SQL = (f"INSERT INTO memory ({', '.join(_INSERT_COLS)}) VALUES ({', '.join('?' * len(_INSERT_COLS))}) "
                   "ON CONFLICT (user_id, session_id, content_hash, created_at) DO NOTHING")

    def _insert_params(self, m: Memory, search_text: str) -> list[Any]:
        # Hot path: one precomputed converter per column instead of per-value type checks.
        return [conv(getattr(m, c)) if conv else getattr(m, c) for c, conv in _CONVERTERS] + [search_text]

    async def insert_memory(self, m: Memory, search_text: str) -> tuple[str, bool]:
        params = self._insert_params(m, search_text)
        with self._lock:
            db = self.db
            try:
                cur = db.execute(self._INSERT_SQL, params)
            except sqlite3.IntegrityError as exc:
                raise StoreError(f"row refused by the database: {exc}") from exc
            if cur.rowcount == 1:
                return m.id, True
            row = db.execute("SELECT id FROM memory WHERE user_id=? AND session_id=? AND content_hash=? "
                             "AND created_at=?", (m.user_id, m.session_id, m.content_hash,
                                                  iso(m.created_at))).fetchone()
            return str(row[0]), False

    async def insert_batch(self, rows: list[NewRow], *, request: RequestKey | None = None) -> list[tuple[str, bool]]:
        def run() -> list[tuple[str, bool]]:
            with self._write() as db:
                try:
                    return insert_rows(db, rows, request, self._INSERT_SQL, self._insert_params)
                except sqlite3.IntegrityError as exc:
                    raise StoreError(f"row refused by the database: {exc}") from exc
        # One row is the hot path (microseconds, inline as insert_memory); a batch goes to a worker thread.
        return run() if len(rows) <= 1 else await anyio.to_thread.run_sync(run)

    async def insert_many(self, rows: list[tuple[Memory, str]], vectors: dict[str, Vector] | None = None) -> int:
        """Bulk insert in one transaction (imports, copies); duplicates are skipped. Returns rows inserted."""
        vectors = vectors or {}

        def run() -> int:
            with self._write() as db:
                n = 0
                gen = int(db.execute(_MAX_GEN).fetchone()[0]) if vectors else 0
                for m, text in rows:
                    inserted = db.execute(self._INSERT_SQL, self._insert_params(m, text)).rowcount
                    n += inserted
                    vec = vectors.get(m.id)
                    if inserted and vec is not None:
                        gen += 1
                        db.execute("UPDATE memory SET embedding = ?, embed_gen = ? WHERE id = ?",
                                   (np.asarray(vec, dtype=np.float32).tobytes(), gen, m.id))
                return n
        return await anyio.to_thread.run_sync(run)

    async def get_memory(self, memory_id: str, *, include_deleted: bool = False,
                         viewer: Principal | None = None) -> Memory | None:
        sql = f"SELECT {_SELECT} FROM memory m WHERE m.id = ?"
        params: list[Any] = [memory_id]
        if not include_deleted:
            sql += " AND m.deleted_at IS NULL"
        if viewer is not None:
            vis, vparams = visible_clause(viewer, "?")
            sql += " AND " + vis
            params += vparams
        with self._lock:
            row = self.db.execute(sql, params).fetchone()
        return _row_to_memory(row) if row else None

    async def get_memories(self, ids: list[str], *, viewer: Principal | None = None) -> list[Memory]:
        if not ids:
            return []
        vis, vparams = visible_clause(viewer, "?") if viewer is not None else ("1 = 1", [])
        with self._lock:
            rows = self.db.execute(f"SELECT {_SELECT} FROM memory m WHERE m.id IN ({','.join('?' * len(ids))}) "
                                   f"AND m.deleted_at IS NULL AND {vis}", [*ids, *vparams]).fetchall()
        by_id = {r[0]: _row_to_memory(r) for r in rows}
        return [by_id[i] for i in ids if i in by_id]

    async def update_memory(self, memory_id: str, changes: dict[str, Any], search_text: str | None = None) -> bool:
        changes = checked_changes(changes)
        cols = list(changes)
        values = [_db_value(c, changes[c]) for c in cols]
        if search_text is not None:
            cols.append("search_text")
            values.append(search_text)
        with self._write() as db:
            cur = db.execute(f"UPDATE memory SET {', '.join(c + ' = ?' for c in cols)} WHERE id = ?",
                             [*values, memory_id])
            if cur.rowcount == 1 and rewrites_neighbours(changes, search_text):
                # The messages around this one index its words: they change with it, in this transaction.
                _refresh_context(db, [memory_id])
            if cur.rowcount == 1 and ("privacy_scope" in changes or "team" in changes):
                # A shared (or unshared) row moves between vector caches: a new generation makes every
                # process's cache of its new partition pick it up; the old one's SQL filter drops it.
                db.execute(f"UPDATE memory SET embed_gen = ({_MAX_GEN}) + 1 WHERE id = ? AND embed_gen > 0",
                           (memory_id,))
            return cur.rowcount == 1

    async def hard_delete(self, memory_id: str) -> bool:
        # Links and feedback go by ON DELETE CASCADE, the FTS entry by trigger, the vector with the row;
        # the in-process vector cache is dropped so the erased vector is not even held in memory. The
        # neighbours' context is rebuilt without the row in the same transaction: its words go too.
        with self._write() as db:
            around = _neighbour_ids(db, [memory_id])
            n = db.execute("DELETE FROM memory WHERE id = ?", (memory_id,)).rowcount
            _refresh_context(db, sorted(around), expand=False)
        if n:
            self._vec.clear()
        return n == 1

    async def refresh_context(self, ids: list[str]) -> int:
        if not ids:
            return 0
        with self._write() as db:
            return _refresh_context(db, ids)

    async def list_memories(self, f: SearchFilters, *, limit: int = 100, newest_first: bool = True,
                            after_id: str | None = None) -> list[Memory]:
        where, params = where_clause(f, "?", _tags_sql, iso)
        if after_id:
            where += " AND m.id < ?" if newest_first else " AND m.id > ?"
            params.append(after_id)
        order = "DESC" if newest_first else "ASC"
        sql = f"SELECT {_SELECT} FROM memory m WHERE {where} ORDER BY m.created_at {order}, m.id {order} LIMIT ?"
        with self._lock:
            rows = self.db.execute(sql, [*params, limit]).fetchall()
        return [_row_to_memory(r) for r in rows]

    async def iter_memories(self, user_id: str | None, *, include_deleted: bool = False,
                            batch: int = 500) -> AsyncIterator[Memory]:
        last = 0
        while True:
            sql = f"SELECT m.seq, {_SELECT} FROM memory m WHERE m.seq > ?"
            params: list[Any] = [last]
            if user_id is not None:
                sql += " AND m.user_id = ?"
                params.append(user_id)
            if not include_deleted:
                sql += " AND m.deleted_at IS NULL"
            with self._lock:
                rows = self.db.execute(sql + " ORDER BY m.seq LIMIT ?", [*params, batch]).fetchall()
            if not rows:
                return
            for r in rows:
                yield _row_to_memory(r[1:])
            last = rows[-1][0]

    async def get_embedding(self, memory_id: str) -> tuple[str, Vector] | None:
        with self._lock:
            row = self.db.execute("SELECT embedding_model, embedding FROM memory WHERE id = ?",
                                  (memory_id,)).fetchone()
        if not row or row[1] is None:
            return None
        return str(row[0]), np.frombuffer(row[1], dtype=np.float32)

    # --- search ----------------------------------------------------------------------------------------
    async def keyword_search(self, f: SearchFilters, terms: list[list[str]],
                             limit: int) -> list[tuple[Memory, float]]:
        if not terms:
            return []
        where, params = where_clause(f, "?", _tags_sql, iso)
        kept, potential = self._bounded_terms(terms)
        match = fts5_query(kept)
        # Two steps: rank inside the FTS index alone (its `ORDER BY rank LIMIT` path touches no memory rows),
        # then fetch and filter the top rows by rowid, widening until enough pass. Joining every match to
        # its memory row before sorting cost ~200 ms for common words at 100k rows.
        top_sql = "SELECT rowid, -rank FROM memory_fts WHERE memory_fts MATCH ? ORDER BY rank LIMIT ?"
        fetch_where = where.replace("m.user_id = ?", "+m.user_id = ?", 1)

        def newest_ranked() -> list[tuple[Memory, float]]:
            # Even the rarest term matches too many rows to score them all: score the newest
            # MAX_SCORED_MATCHES matches that pass the filters (FTS5 walks its matches in rowid order and
            # stops there), then rank those.
            with self._lock:
                scored = self.db.execute(
                    f"SELECT m.seq, -memory_fts.rank FROM memory_fts JOIN memory m ON m.seq = memory_fts.rowid "
                    f"WHERE memory_fts MATCH ? AND {fetch_where} ORDER BY memory_fts.rowid DESC LIMIT ?",
                    [match, *params, self.MAX_SCORED_MATCHES]).fetchall()
                top = sorted(scored, key=lambda r: -r[1])[:limit]
                score = {int(r[0]): float(r[1]) for r in top}
                rows = self.db.execute(
                    f"SELECT m.seq, {_SELECT} FROM memory m WHERE m.seq IN ({','.join('?' * len(top))})",
                    list(score)).fetchall() if top else []
            found = [(_row_to_memory(r[1:]), score[r[0]]) for r in rows]
            found.sort(key=lambda t: -t[1])
            return found

        def run() -> list[tuple[Memory, float]]:
            if potential > self.MAX_SCORED_MATCHES:
                return newest_ranked()
            want = max(limit * 2, 50)  # widened below when filters reject rows
            while True:
                with self._lock:
                    ranked = self.db.execute(top_sql, (match, want)).fetchall()
                    score = {int(r[0]): float(r[1]) for r in ranked}
                    found: list[tuple[Memory, float]] = []
                    seqs = list(score)
                    for start in range(0, len(seqs), 900):
                        chunk = seqs[start:start + 900]
                        rows = self.db.execute(
                            f"SELECT m.seq, {_SELECT} FROM memory m WHERE m.seq IN ({','.join('?' * len(chunk))}) "
                            f"AND {fetch_where}", [*chunk, *params]).fetchall()
                        found.extend((_row_to_memory(r[1:]), score[r[0]]) for r in rows)
                if len(found) >= limit or len(ranked) < want:
                    found.sort(key=lambda t: -t[1])
                    return found[:limit]
                if want >= 20_000:
                    # A very selective filter over a huge match set: let SQLite join and filter instead.
                    with self._lock:
                        rows = self.db.execute(
                            f"SELECT {_SELECT}, -memory_fts.rank FROM memory_fts JOIN memory m ON "
                            f"m.seq = memory_fts.rowid WHERE memory_fts MATCH ? AND {where} "
                            f"ORDER BY memory_fts.rank LIMIT ?", [match, *params, limit]).fetchall()
                    return [(_row_to_memory(r[:-1]), float(r[-1])) for r in rows]
                want *= 8
        return await anyio.to_thread.run_sync(run)

    MAX_SCORED_MATCHES = MAX_SCORED_MATCHES     # see gieok.store.base

    def _bounded_terms(self, terms: list[list[str]]) -> tuple[list[list[str]], int]:
        """The terms to match, rarest first within the cap, and how many rows they may match."""
        tokens = sorted({t for term in terms for t in term})
        with self._lock:
            df = dict(self.db.execute(
                f"SELECT term, doc FROM memory_fts_vocab WHERE term IN ({','.join('?' * len(tokens))})",
                tokens).fetchall())
        # A phrase matches no more rows than its rarest token.
        kept, total = rarest_terms(terms, [min(df.get(t, 0) for t in term) for term in terms],
                                   self.MAX_SCORED_MATCHES)
        return kept, int(total)

    async def substring_search(self, f: SearchFilters, needle: str, limit: int) -> list[Memory]:
        if not needle.strip():
            return []
        where, params = where_clause(f, "?", _tags_sql, iso)
        escaped = needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        sql = (f"SELECT {_SELECT} FROM memory m WHERE {where} AND m.content LIKE ? ESCAPE '\\' "
               f"ORDER BY m.created_at DESC LIMIT ?")

        def run() -> list[Memory]:
            with self._lock:
                rows = self.db.execute(sql, [*params, f"%{escaped}%", limit]).fetchall()
            return [_row_to_memory(r) for r in rows]
        return await anyio.to_thread.run_sync(run)

    def _refresh_vectors(self, part: tuple[str, str], model: str) -> _VecCache:
        """The vector cache of one partition: ("u", user) a user's own rows, ("t", team) a team's shared
        rows, ("p", "") public rows. A viewer's candidates are the union of its partitions' caches."""
        key = (part, model)
        cache = self._vec.get(key)
        gen = cache.gen if cache else 0
        kind, name = part
        if kind == "u":
            sql = ("SELECT seq, embedding, embed_gen FROM memory INDEXED BY memory_vec_gen WHERE user_id = ? "
                   "AND embedding_model = ? AND embed_gen > ? AND embedding IS NOT NULL ORDER BY embed_gen")
            params: tuple[Any, ...] = (name, model, gen)
        else:
            scope = "team" if kind == "t" else "public"
            sql = ("SELECT seq, embedding, embed_gen FROM memory INDEXED BY memory_shared_vec WHERE "
                   "privacy_scope = ? AND team = ? AND embedding_model = ? AND embed_gen > ? AND privacy_scope <> "
                   "'private' AND embed_gen > 0 AND embedding IS NOT NULL ORDER BY embed_gen")
            params = (scope, name, model, gen)
        with self._lock:
            rows = self.db.execute(sql, params).fetchall()
        if not rows:
            if cache is None:
                cache = _VecCache(np.zeros(0, np.int64), np.zeros((0, 0), np.float32), 0)
                self._vec[key] = cache
            return cache
        seqs = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        mat = np.vstack([np.frombuffer(r[1], dtype=np.float32) for r in rows])
        new_gen = int(rows[-1][2])
        if cache is None or cache.mat.size == 0:
            cache = _VecCache(seqs, mat, new_gen)
        else:
            # A re-embedded row replaces its old vector.
            keep = ~np.isin(cache.seqs, seqs)
            cache = _VecCache(np.concatenate([cache.seqs[keep], seqs]), np.vstack([cache.mat[keep], mat]), new_gen)
        self._vec[key] = cache
        return cache

    async def vector_search(self, f: SearchFilters, model: str, query: Vector,
                            limit: int) -> list[tuple[Memory, float]]:
        full_where, params = where_clause(f, "?", _tags_sql, iso)
        # The candidates are fetched by rowid; the unary + keeps the planner from preferring the
        # (user_id, …) indexes and scanning every row of the user instead (46 ms → ~1 ms at 100k rows).
        where = full_where.replace("m.user_id = ?", "+m.user_id = ?", 1)

        parts: list[tuple[str, str]] = [("u", f.user_id)]
        if f.viewer is not None:
            parts = [("u", f.viewer.user_id), *(("t", t) for t in f.viewer.teams), ("p", "")]

        def run() -> list[tuple[Memory, float]]:
            cache = self._viewer_vectors(parts, model)
            n = len(cache.seqs)
            if n == 0 or cache.mat.shape[1] != query.shape[0]:
                return []
            scores = cache.mat @ query.astype(np.float32)
            # Filters are applied in SQL to an over-sampled top list; widen until enough rows pass or
            # every vector has been considered.
            want = limit * 2  # widened below when filters reject rows
            while True:
                if want > 8192:
                    # A selective filter (a rare platform, a narrow date range): ask SQL which rows pass,
                    # using its indexes, and rank only those, instead of widening over most of the matrix.
                    with self._lock:
                        allowed = np.fromiter((r[0] for r in self.db.execute(
                            f"SELECT m.seq FROM memory m WHERE {full_where}", params)), dtype=np.int64)
                    scores = np.where(np.isin(cache.seqs, allowed), scores, -np.inf)
                    want = min(limit, len(allowed))
                    if want == 0:
                        return []
                k = min(want, n)
                top = np.argpartition(-scores, k - 1)[:k] if k < n else np.arange(n)
                top = top[np.argsort(-scores[top])]
                seq_score = {int(cache.seqs[i]): float(scores[i]) for i in top}
                found: list[tuple[Memory, float]] = []
                seq_list = list(seq_score)
                with self._lock:
                    for chunk_start in range(0, len(seq_list), 900):
                        chunk = seq_list[chunk_start:chunk_start + 900]
                        rows = self.db.execute(
                            f"SELECT m.seq, {_SELECT} FROM memory m WHERE m.seq IN ({','.join('?' * len(chunk))}) "
                            f"AND {where}", [*chunk, *params]).fetchall()
                        found.extend((_row_to_memory(r[1:]), seq_score[r[0]]) for r in rows)
                if len(found) >= limit or k >= n or np.isneginf(scores[top[-1]]):
                    found.sort(key=lambda t: -t[1])
                    return found[:limit]
                want *= 8
        return await anyio.to_thread.run_sync(run)

    def _viewer_vectors(self, parts: list[tuple[str, str]], model: str) -> _VecCache:
        caches = [c for c in (self._refresh_vectors(p, model) for p in parts) if c.seqs.size]
        if len(caches) <= 1:
            return caches[0] if caches else _VecCache(np.zeros(0, np.int64), np.zeros((0, 0), np.float32), 0)
        if len({c.mat.shape[1] for c in caches}) > 1:
            caches = [c for c in caches if c.mat.shape[1] == caches[0].mat.shape[1]]
        seqs = np.concatenate([c.seqs for c in caches])
        mat = np.vstack([c.mat for c in caches])
        # A user's own team/public rows are in two partitions: keep each row once.
        seqs, first = np.unique(seqs, return_index=True)
        return _VecCache(seqs, mat[first], 0)

    async def get_vectors(self, ids: list[str], model: str) -> dict[str, Vector]:
        if not ids:
            return {}
        with self._lock:
            rows = self.db.execute(f"SELECT id, embedding FROM memory WHERE id IN ({','.join('?' * len(ids))}) "
                                   "AND embedding_model = ? AND embedding IS NOT NULL", [*ids, model]).fetchall()
        return {r[0]: np.frombuffer(r[1], dtype=np.float32) for r in rows}

    async def list_due_reviews(self, user_id: str, now: datetime, limit: int) -> list[Memory]:
        with self._lock:
            rows = self.db.execute(f"SELECT {_SELECT} FROM memory m WHERE m.user_id = ? AND m.next_review_at <= ? "
                                   "AND m.deleted_at IS NULL AND m.is_active = 1 ORDER BY m.next_review_at LIMIT ?",
                                   (user_id, iso(now), limit)).fetchall()
        return [_row_to_memory(r) for r in rows]

    async def touch(self, ids: list[str], at: datetime) -> None:
        if not ids:
            return
        with self._write() as db:
            db.execute(f"UPDATE memory SET view_count = view_count + 1, last_accessed_at = ? "
                       f"WHERE id IN ({','.join('?' * len(ids))})", [iso(at), *ids])

    # --- cold path -------------------------------------------------------------------------------------
    _PENDING = "(m.tag_status <> 'ok' OR m.embed_status <> 'ok') AND m.deleted_at IS NULL"
    _PENDING_TAGS = "m.tag_status <> 'ok' AND m.deleted_at IS NULL"

    async def count_pending(self, max_attempts: int, *, need_embedding: bool = True) -> int:
        pending = self._PENDING if need_embedding else self._PENDING_TAGS
        with self._lock:
            row = self.db.execute(f"SELECT COUNT(*) FROM memory m WHERE {pending} AND "
                                  "(m.lease_until IS NULL OR m.lease_until < ?)", (iso(utcnow()),)).fetchone()
        return int(row[0])

    async def claim_pending(self, worker: str, limit: int, lease_seconds: float, max_attempts: int,
                            now: datetime, *, need_embedding: bool = True) -> list[Memory]:
        until = iso(now + timedelta(seconds=lease_seconds))
        pending = self._PENDING if need_embedding else self._PENDING_TAGS
        with self._write() as db:
            rows = db.execute(
                f"SELECT {_SELECT} FROM memory m WHERE {pending} AND (m.lease_until IS NULL OR "
                f"m.lease_until < ?) ORDER BY m.created_at LIMIT ?", (iso(now), limit)).fetchall()
            mems = [_row_to_memory(r) for r in rows]
            if mems:
                db.execute(f"UPDATE memory SET lease_until = ?, lease_owner = ? WHERE id IN "
                           f"({','.join('?' * len(mems))})", [until, worker, *[m.id for m in mems]])
        for m in mems:
            m.lease_until = from_iso(until)
        return mems

    async def complete_cold(self, results: list[ColdResult], now: datetime) -> None:
        with self._write() as db:
            gen = int(db.execute(_MAX_GEN).fetchone()[0])
            for r in results:
                sets = ["lease_until = NULL", "lease_owner = NULL", "updated_at = ?"]
                vals: list[Any] = [iso(now)]
                if r.p_tags is not None or r.d_tags is not None:
                    sets.append("tag_status = 'ok'")
                if r.p_tags is not None:
                    sets.append("p_tags = ?")
                    vals.append(json.dumps(r.p_tags, ensure_ascii=False))
                if r.d_tags is not None:
                    sets.append("d_tags = ?")
                    vals.append(json.dumps(r.d_tags, ensure_ascii=False))
                if r.embedding is not None:
                    gen += 1
                    sets += ["embedding = ?", "embedding_model = ?", "embed_status = 'ok'", "embed_gen = ?"]
                    vals += [np.asarray(r.embedding, dtype=np.float32).tobytes(), r.embedding_model or "", gen]
                done = db.execute(f"UPDATE memory SET {', '.join(sets)} WHERE id = ? RETURNING tag_status, "
                                  "embed_status", [*vals, r.id]).fetchone()
                if done and done[0] == "ok" and done[1] == "ok":
                    db.execute("UPDATE memory SET cold_attempts = 0, cold_error = '' WHERE id = ?", (r.id,))

    async def fail_cold(self, memory_id: str, error: str, *, permanent: bool, max_attempts: int,
                        now: datetime) -> None:
        with self._write() as db:
            row = db.execute("SELECT cold_attempts FROM memory WHERE id = ?", (memory_id,)).fetchone()
            if not row:
                return
            attempts = int(row[0]) + 1
            if permanent or attempts >= max_attempts:
                # Out of retries: record the error and leave the row for a later cycle.
                db.execute("UPDATE memory SET cold_attempts = ?, cold_error = ?, lease_owner = NULL, "
                           "lease_until = ?, "
                           "tag_status = CASE tag_status WHEN 'ok' THEN 'ok' ELSE 'failed' END, "
                           "embed_status = CASE embed_status WHEN 'ok' THEN 'ok' ELSE 'failed' END "
                           "WHERE id = ?", (attempts, error[:2000], iso(now + FAILED_COOLDOWN), memory_id))
            else:
                backoff = timedelta(seconds=2 ** attempts)
                db.execute("UPDATE memory SET cold_attempts = ?, cold_error = ?, lease_owner = NULL, "
                           "lease_until = ? WHERE id = ?", (attempts, error[:2000], iso(now + backoff), memory_id))

    async def reset_failed(self) -> int:
        with self._write() as db:
            return db.execute("UPDATE memory SET lease_until = NULL, cold_attempts = 0, "
                              "tag_status = CASE tag_status WHEN 'failed' THEN 'pending' ELSE tag_status END, "
                              "embed_status = CASE embed_status WHEN 'failed' THEN 'pending' ELSE embed_status END "
                              "WHERE tag_status = 'failed' OR embed_status = 'failed'").rowcount

    async def mark_for_reembed(self, model: str) -> int:
        with self._write() as db:
            return db.execute("UPDATE memory SET embed_status = 'pending', cold_attempts = 0 "
                              "WHERE embedding_model <> '' AND embedding_model <> ? AND embed_status <> 'pending' "
                              "AND deleted_at IS NULL", (model,)).rowcount

    # --- librarian jobs ---------------------------------------------------------------------------------
    async def list_user_ids(self) -> list[str]:
        with self._lock:
            return [r[0] for r in self.db.execute("SELECT DISTINCT user_id FROM memory ORDER BY user_id")]

    async def acquire_job(self, name: str, owner: str, *, lease_seconds: float, min_interval_s: float,
                          now: datetime) -> bool:
        # One upsert decides: a row updated (or inserted) means the lease is ours; the WHERE keeps a live
        # lease of another owner, and a job that finished too recently, untouched.
        with self._write() as db:
            cur = db.execute(
                "INSERT INTO librarian_jobs (name, owner, lease_until, last_started_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, lease_until = excluded.lease_until, "
                "last_started_at = excluded.last_started_at "
                "WHERE (librarian_jobs.lease_until IS NULL OR librarian_jobs.lease_until < ? "
                "       OR librarian_jobs.owner = excluded.owner) "
                "AND (librarian_jobs.last_finished_at IS NULL OR librarian_jobs.last_finished_at <= ?)",
                (name, owner, iso(now + timedelta(seconds=lease_seconds)), iso(now), iso(now),
                 iso(now - timedelta(seconds=min_interval_s))))
            return cur.rowcount == 1

    async def finish_job(self, name: str, owner: str, result: dict[str, Any], now: datetime) -> None:
        with self._write() as db:
            db.execute("UPDATE librarian_jobs SET owner = NULL, lease_until = NULL, last_finished_at = ?, "
                       "last_result = ? WHERE name = ? AND owner = ?",
                       (iso(now), json.dumps(result, ensure_ascii=False, default=str), name, owner))

    async def list_jobs(self) -> list[dict[str, Any]]:
        with self._lock:
            rows = self.db.execute("SELECT name, owner, lease_until, last_started_at, last_finished_at, "
                                   "last_result FROM librarian_jobs ORDER BY name").fetchall()
        return [{"name": r[0], "owner": r[1], "lease_until": from_iso(r[2]), "last_started_at": from_iso(r[3]),
                 "last_finished_at": from_iso(r[4]), "last_result": json.loads(r[5] or "{}")} for r in rows]

    # --- users, tags, links, feedback ------------------------------------------------------------------
    async def get_user(self, user_id: str) -> UserProfile | None:
        with self._lock:
            row = self.db.execute("SELECT user_id, user_name, core_profile, sub_profile, created_at, updated_at "
                                  "FROM users WHERE user_id = ?", (user_id,)).fetchone()
        if not row:
            return None
        return UserProfile(row[0], row[1], json.loads(row[2]), json.loads(row[3]), from_iso(row[4]),
                           from_iso(row[5]))

    async def save_user(self, profile: UserProfile) -> None:
        now = iso(utcnow())
        with self._write() as db:
            db.execute("INSERT INTO users (user_id, user_name, core_profile, sub_profile, created_at, updated_at) "
                       "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (user_id) DO UPDATE SET user_name = excluded.user_name, "
                       "core_profile = excluded.core_profile, sub_profile = excluded.sub_profile, "
                       "updated_at = excluded.updated_at",
                       (profile.user_id, profile.user_name, json.dumps(profile.core_profile, ensure_ascii=False),
                        json.dumps(profile.sub_profile, ensure_ascii=False), now, now))

    async def list_project_tags(self) -> list[ProjectTag]:
        with self._lock:
            rows = self.db.execute("SELECT name, alias_of, description, created_by, usage_count FROM project_tags "
                                   "ORDER BY usage_count DESC, name").fetchall()
        return [ProjectTag(*r) for r in rows]

    async def upsert_project_tag(self, tag: ProjectTag) -> None:
        with self._write() as db:
            db.execute("INSERT INTO project_tags (name, alias_of, description, created_by, usage_count, created_at) "
                       "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET alias_of = excluded.alias_of, "
                       "description = CASE excluded.description WHEN '' THEN description "
                       "ELSE excluded.description END, usage_count = excluded.usage_count",
                       (tag.name, tag.alias_of, tag.description, tag.created_by, tag.usage_count, iso(utcnow())))

    async def add_link(self, src: str, dst: str, relation: str) -> None:
        with self._write() as db:
            try:
                db.execute("INSERT INTO memory_links (src, dst, relation, created_at) VALUES (?, ?, ?, ?) "
                           "ON CONFLICT DO NOTHING", (src, dst, relation, iso(utcnow())))
            except sqlite3.IntegrityError as exc:
                raise StoreError(f"cannot link {src} → {dst}: {exc}") from exc

    async def list_links(self, memory_id: str, *, viewer: Principal | None = None) -> list[Link]:
        sql = "SELECT l.src, l.dst, l.relation, l.created_at FROM memory_links l WHERE (l.src = ? OR l.dst = ?)"
        params: list[Any] = [memory_id, memory_id]
        if viewer is not None:
            for end in ("src", "dst"):
                vis, vparams = visible_clause(viewer, "?", alias="v")
                sql += f" AND EXISTS (SELECT 1 FROM memory v WHERE v.id = l.{end} AND v.deleted_at IS NULL AND {vis})"
                params += vparams
        with self._lock:
            rows = self.db.execute(sql + " ORDER BY l.created_at", params).fetchall()
        return [Link(r[0], r[1], r[2], from_iso(r[3])) for r in rows]

    async def add_feedback(self, memory_id: str, event: str, score: float, ts: datetime) -> None:
        counter = {"cited": "cite_count", "edited": "edit_count", "used": "view_count"}.get(event)
        with self._write() as db:
            db.execute("INSERT INTO feedback_events (memory_id, event, score, ts) VALUES (?, ?, ?, ?)",
                       (memory_id, event, score, iso(ts)))
            if counter:
                db.execute(f"UPDATE memory SET {counter} = {counter} + 1 WHERE id = ?", (memory_id,))

    async def list_feedback(self, memory_id: str) -> list[FeedbackRow]:
        with self._lock:
            rows = self.db.execute("SELECT memory_id, event, score, ts FROM feedback_events WHERE memory_id = ? "
                                   "ORDER BY id", (memory_id,)).fetchall()
        return [FeedbackRow(r[0], r[1], r[2], from_iso(r[3]) or utcnow()) for r in rows]

    async def stats(self, user_id: str | None) -> dict[str, Any]:
        cond, params = ("WHERE user_id = ?", [user_id]) if user_id else ("", [])
        with self._lock:
            db = self.db
            r = db.execute(
                "SELECT COUNT(*), "
                "SUM(deleted_at IS NULL AND is_active = 1), SUM(deleted_at IS NULL AND is_active = 0), "
                "SUM(deleted_at IS NOT NULL), SUM(is_pinned = 1 AND deleted_at IS NULL), "
                "SUM((tag_status = 'pending' OR embed_status = 'pending') AND deleted_at IS NULL), "
                "SUM((tag_status = 'failed' OR embed_status = 'failed') AND deleted_at IS NULL), "
                "MIN(created_at), MAX(created_at) "
                f"FROM memory {cond}", params).fetchone()
            by_platform = db.execute(f"SELECT agent_platform, COUNT(*) FROM memory {cond} GROUP BY 1 ORDER BY 2 DESC",
                                     params).fetchall()
            by_model = db.execute(f"SELECT embedding_model, COUNT(*) FROM memory {cond} GROUP BY 1", params).fetchall()
            last_err = db.execute(
                f"SELECT id, cold_error, updated_at FROM memory {cond + (' AND' if cond else 'WHERE')} "
                "cold_error <> '' "
                "ORDER BY updated_at DESC LIMIT 1", params).fetchone()
            recent = db.execute(
                f"SELECT COUNT(*) FROM memory {cond + (' AND' if cond else 'WHERE')} embed_status = 'ok' "
                "AND updated_at >= ?", [*params, iso(utcnow() - timedelta(hours=1))]).fetchone()
        return {
            "backend": "sqlite", "path": self.path, "total": r[0] or 0, "active": r[1] or 0, "archived": r[2] or 0,
            "deleted": r[3] or 0, "pinned": r[4] or 0, "pending": r[5] or 0, "failed": r[6] or 0,
            "oldest": r[7], "newest": r[8],
            "by_platform": {k or "(none)": v for k, v in by_platform},
            "by_embedding_model": {k or "(none)": v for k, v in by_model},
            "last_error": {"id": last_err[0], "error": last_err[1], "at": last_err[2]} if last_err else None,
            "processed_last_hour": recent[0] or 0,
        }

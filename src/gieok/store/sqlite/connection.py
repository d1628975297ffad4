"""The SQLite connection: opening (WAL, busy timeout), write transactions, migrations, the doctor's checks.
The store's other parts (`memories`, `search`, `queue`, `profiles`) build on `SQLiteBase`.

Writes go through one connection under one lock (`_write`). Searches read through connections of their own
(`_read`): in WAL mode a reader sees the last commit and neither waits for the writer nor for other readers, so
eight concurrent searches no longer queue on the write connection's lock behind each other, the hot path's
inserts and the librarian's batch updates (and the event loop no longer blocks on that lock while a search
thread holds it)."""

from __future__ import annotations

import queue
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gieok.core.dates import iso, utcnow
from gieok.core.errors import ConfigError, StoreError
from gieok.store.base import Check
from gieok.store.shared import columns_check
from gieok.store.sqlite import migrations
from gieok.store.sqlite.doc_freq import DocFreqCache
from gieok.store.sqlite.vec_cache import VecCache
from gieok.store.term_cache import TermCache

# Per read connection (at most one per thread reading at once). mmap pages are the OS's page cache, shared
# by every connection, so only the page cache proper adds private memory.
READER_CACHE_KIB = 16 * 1024
READER_MMAP_BYTES = 256 * 1024 * 1024


def sqlite_path(url: str) -> str:
    if not url.startswith("sqlite:///"):
        raise ConfigError(f"not a SQLite URL: {url!r} (expected sqlite:///path/to/memory.db)")
    return url[len("sqlite:///"):] or ":memory:"


class SQLiteBase:
    SCHEMA_VERSION = migrations.MIGRATIONS[-1][0]

    def __init__(self, url: str, busy_timeout_ms: int = 5000) -> None:
        self.url = url
        self.path = sqlite_path(url)
        self._busy_timeout_ms = busy_timeout_ms
        self._lock = threading.RLock()
        self._db: sqlite3.Connection | None = None
        # Idle read connections; one is made whenever every existing one is in use (at most one per thread
        # reading at once, which the thread pool bounds).
        self._readers: queue.SimpleQueue[sqlite3.Connection] = queue.SimpleQueue()
        self._reader_count = 0
        self._readers_lock = threading.Lock()      # counts only: never the write lock, which a reader must not wait for
        self._vec: dict[tuple[tuple[str, str], str], VecCache] = {}  # ((partition kind, name), model)
        # Refreshes of the vector caches one at a time: a refresh appends into the buffers its cache shares with
        # the next (gieok.store.sqlite.vec_cache). Dropping the caches does not wait for it (a first load of
        # 100,000 vectors takes a second, and an erase runs on the event loop): it counts an epoch instead, and
        # a refresh that began before the drop does not put its cache back.
        self._vec_lock = threading.Lock()
        self._vec_epoch = 0
        self._terms: dict[tuple[str, str], TermCache] = {}  # (user, model): gieok.store.term_cache
        self._doc_freq = DocFreqCache()     # common tokens' document counts (gieok.store.sqlite.doc_freq)

    def _drop_vector_caches(self) -> None:
        """Forget every vector cache (a row's vector erased): the next search reloads its partition."""
        self._vec_epoch += 1
        self._vec.clear()

    async def open(self) -> None:
        if self._db is not None:
            return
        if self.path != ":memory:":
            Path(self.path).expanduser().parent.mkdir(parents=True, exist_ok=True)
        try:
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            db.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_ms)}")
            self._settings(db)
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

    def _settings(self, db: sqlite3.Connection) -> None:
        """WAL mode and the connection's pragmas. Some of these take a lock SQLite answers "database is locked"
        to at once, without calling the busy handler (switching a new file to WAL while another process does;
        seen once with four agents' hooks opening one file under load): tried again until the busy timeout."""
        deadline = time.monotonic() + self._busy_timeout_ms / 1000
        while True:
            try:
                if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                    db.execute("PRAGMA journal_mode = WAL")
                db.execute("PRAGMA synchronous = NORMAL")
                db.execute("PRAGMA foreign_keys = ON")
                # Keep the WAL from growing without bound when readers are always active (MEASURED.md).
                db.execute("PRAGMA journal_size_limit = 67108864")
                return
            except sqlite3.OperationalError as exc:
                if ("locked" not in str(exc) and "busy" not in str(exc)) or time.monotonic() > deadline:
                    raise
                time.sleep(0.02)

    async def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
            self._close_readers()

    def _close_readers(self) -> None:
        while True:
            try:
                self._readers.get_nowait().close()
            except queue.Empty:
                break
            with self._readers_lock:
                self._reader_count -= 1

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            raise StoreError("store is not open: call `await store.open()` first")
        return self._db

    def _open_reader(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        db.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_ms)}")
        db.execute("PRAGMA query_only = ON")     # a read connection that cannot write, whatever a bug asks
        # Searches read rows at random across the file (the vector arm's candidates, FTS5 posting lists): with
        # the 2 MB default page cache each read went back to the OS, through a system call.
        db.execute(f"PRAGMA cache_size = {-READER_CACHE_KIB}")
        db.execute(f"PRAGMA mmap_size = {READER_MMAP_BYTES}")
        with self._readers_lock:
            self._reader_count += 1
        return db

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """A connection for one read (autocommit: each statement reads the latest commit). An in-memory
        database exists only in its one connection, so there reads share the write connection and its lock.
        Not for reads inside a write transaction: those must see its uncommitted rows, through `_write`'s
        connection."""
        if self.path == ":memory:":
            with self._lock:
                yield self.db
            return
        self.db  # noqa: B018 - raises the clear "store is not open" error
        try:
            db = self._readers.get_nowait()
        except queue.Empty:
            try:
                db = self._open_reader()
            except sqlite3.Error as exc:
                raise StoreError(f"cannot open a read connection to {self.path}: {exc}") from exc
        try:
            yield db
        finally:
            if self._db is None:            # closed meanwhile
                db.close()
                with self._readers_lock:
                    self._reader_count -= 1
            else:
                self._readers.put(db)

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
            if all(v in done for v, _, _ in migrations.MIGRATIONS):
                return
        except sqlite3.OperationalError:
            pass  # no history table yet: a new database
        with self._write() as db:
            db.execute("CREATE TABLE IF NOT EXISTS migration_history (version INTEGER PRIMARY KEY, "
                       "name TEXT NOT NULL, applied_at TEXT NOT NULL)")
            done = {r[0] for r in db.execute("SELECT version FROM migration_history")}
            for version, name, fn in migrations.MIGRATIONS:
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


    async def check(self) -> list[Check]:
        # A fresh in-memory connection: the probe must not write to the user's database.
        probe = sqlite3.connect(":memory:")
        try:
            probe.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
            # Substring search's index (migration 18) needs the trigram tokenizer: SQLite 3.34 or newer.
            probe.execute("CREATE VIRTUAL TABLE t3 USING fts5(x, tokenize='trigram', detail=none)")
            checks = [Check(True, f"SQLite {sqlite3.sqlite_version} with FTS5 and trigrams")]
        except sqlite3.Error:
            checks = [Check(False, f"SQLite {sqlite3.sqlite_version} lacks FTS5 or its trigram tokenizer",
                            "use a Python whose SQLite is 3.34 or newer with FTS5 (Debian 12 and pyenv builds are)")]
        finally:
            probe.close()
        with self._lock:
            have = {r[1] for r in self.db.execute("PRAGMA table_info(memory)")}
        return [*checks, columns_check(have)]


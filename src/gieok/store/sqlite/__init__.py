"""The embedded backend: one SQLite file in WAL mode.

Why it looks like this:
- The stdlib `sqlite3` here cannot load extensions (no sqlite-vec), and an exact numpy scan of a user's
  vectors is fast (MEASURED.md: ~4 ms for 100k × 384), so vectors live in a BLOB column and each process
  keeps a per-(user, model) float32 matrix that it refreshes incrementally through `embed_gen`, appending the
  librarian's new rows in place (`vec_cache`: a copy of the whole matrix per batch had cost each search that
  followed a write ~0.1 s at 100,000 rows).
- Full-text search is FTS5 over `search_text`, a prepared form of the content (gieok.core.text) in which
  Korean is split into character bigrams, since no SQLite tokenizer finds 2-syllable Korean words.
- One connection per store, guarded by a lock. Short statements run inline on the event loop (they take
  microseconds; a thread hop would cost more than the work); scans that can take milliseconds run in a
  worker thread.
- Write transactions use BEGIN IMMEDIATE: a deferred read-then-write transaction fails with "database is
  locked" at once, whatever the busy timeout (MEASURED.md).

The modules: `connection` (open, transactions, migrations, checks), `codec` (a `Memory` as a row),
`memories` (the rows), `search` (FTS5, substring, vectors), `queue` (the librarian's queue and job leases),
`profiles` (profiles, project tags, links, feedback), `auth_tables` (teams, API keys, audit, erasure),
`migrations`; `browse` (the dashboard's timeline, chart and menus); `code_refs` (anchors and error fingerprints);
`vec_cache` (the in-process vector matrix).
"""

from __future__ import annotations

from gieok.store.sqlite.auth_tables import SQLiteAuthTables
from gieok.store.sqlite.browse import BrowseMixin
from gieok.store.sqlite.code_refs import SQLiteCodeRefs
from gieok.store.sqlite.connection import sqlite_path
from gieok.store.sqlite.memories import MemoryRowsMixin
from gieok.store.sqlite.profiles import ProfilesMixin, RelationsMixin
from gieok.store.sqlite.queue import ColdQueueMixin, JobLeasesMixin
from gieok.store.sqlite.search import SearchMixin
from gieok.store.sqlite.term_vectors import SQLiteTermVectors

__all__ = ["SQLiteStore", "sqlite_path"]


class SQLiteStore(MemoryRowsMixin, BrowseMixin, SearchMixin, ColdQueueMixin, JobLeasesMixin, ProfilesMixin,
                  RelationsMixin, SQLiteAuthTables, SQLiteCodeRefs, SQLiteTermVectors):
    """A `gieok.store.base.Store` on one SQLite file: `SQLiteStore("sqlite:///path/memory.db")`, then
    `await store.open()`."""

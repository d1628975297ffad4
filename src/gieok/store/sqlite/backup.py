"""SQLite's online backup API: a consistent copy of a live database file while servers keep writing."""

from __future__ import annotations

import sqlite3
from pathlib import Path

SQLITE_MAGIC = b"SQLite format 3\x00"


def is_sqlite_file(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            return fh.read(16) == SQLITE_MAGIC
    except OSError:
        return False


def online_backup(source: Path, target: Path, busy_timeout_ms: int = 30_000) -> None:
    """Copy `source` into `target` (a new file) in one pass. One pass holds a single read transaction, so the
    copy is one consistent snapshot; in WAL mode writers go on meanwhile (their commits land after it)."""
    src = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    try:
        src.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        dst = sqlite3.connect(target)
        try:
            src.backup(dst)
            # The copy is a database of its own: rolled back to a single file, no WAL beside it.
            dst.execute("PRAGMA journal_mode = DELETE")
            ok = dst.execute("PRAGMA quick_check").fetchone()[0]
            if ok != "ok":
                raise sqlite3.DatabaseError(f"the copy fails its integrity check: {ok}")
        finally:
            dst.close()
    finally:
        src.close()

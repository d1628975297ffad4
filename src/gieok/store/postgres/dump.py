"""PostgreSQL's own archive format for `gieok backup --pg-dump`: `pg_dump -Fc` and `pg_restore`, when the
client tools are installed (same major version as the server)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from gieok.core.errors import ConfigError, StoreError

PG_DUMP_MAGIC = b"PGDMP"


def is_pg_dump(path: Path) -> bool:
    with path.open("rb") as fh:
        return fh.read(5) == PG_DUMP_MAGIC


def _tool(name: str) -> str:
    exe = shutil.which(name)
    if exe is None:
        raise ConfigError(f"{name} is not on PATH: install the PostgreSQL client tools (same major version as "
                          "the server), or back up without --pg-dump (a verified SQLite file)")
    return exe


def _libpq_url(url: str) -> str:
    # psycopg's pool options ride in the URL; libpq's tools refuse them.
    head, _, query = url.partition("?")
    keep = [p for p in query.split("&") if p and not p.startswith(("pool_min_size=", "pool_max_size="))]
    return head + ("?" + "&".join(keep) if keep else "")


def _run(cmd: list[str]) -> None:
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise StoreError(f"{Path(cmd[0]).name} failed (exit {res.returncode}): {res.stderr.strip()[-2000:]}")


def pg_dump(url: str, out: Path) -> None:
    _run([_tool("pg_dump"), "--format=custom", "--no-owner", f"--file={out}", f"--dbname={_libpq_url(url)}"])


def pg_restore(path: Path, url: str) -> None:
    _run([_tool("pg_restore"), "--no-owner", "--exit-on-error", f"--dbname={_libpq_url(url)}", str(path)])


def pg_dump_problem(path: Path) -> str | None:
    """An archive is checked by its table of contents: the memory table's data must be in it."""
    res = subprocess.run([_tool("pg_restore"), "--list", str(path)], capture_output=True, text=True, check=False)
    if res.returncode != 0 or "TABLE DATA public memory" not in res.stdout:
        return f"pg_restore --list does not show the memory table's data: {res.stderr.strip()}"
    return None

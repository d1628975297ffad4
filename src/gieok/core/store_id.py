"""Which database a URL names, as a short fingerprint a server reports on `/health` and a hook compares with
its own: a hook must never write into whatever server happens to answer on its port (it may serve another
database). Stdlib only, and no database access: a hook computes it on every run.

Two spellings of one database give one fingerprint (relative vs absolute paths, symlinks, `postgres://` vs
`postgresql://`, default port); the password never enters it. A mismatch only costs the hook its shortcut
(it writes to its database directly), so erring towards "different" is safe.
"""

from __future__ import annotations

import os

_PG_SCHEMES = ("postgresql://", "postgres://", "postgresql+psycopg://")


def _canonical(url: str) -> str:
    if url.startswith("sqlite:///"):
        path = url[len("sqlite:///"):]
        if not path or path == ":memory:":
            return f"sqlite-memory:{os.getpid()}:{id(url)}"   # private to one process: matches nothing else
        return "sqlite:" + os.path.realpath(os.path.expanduser(path))
    if url.startswith(_PG_SCHEMES):
        from urllib.parse import parse_qsl, unquote, urlsplit  # only for PostgreSQL: the hook's path is SQLite's
        parts = urlsplit(url)
        query = dict(parse_qsl(parts.query))
        host = (query.get("host") or parts.hostname or "localhost").lower()
        port = query.get("port") or (str(parts.port) if parts.port else "5432")
        user = unquote(parts.username or query.get("user") or "")
        dbname = unquote(parts.path.lstrip("/")) or query.get("dbname") or user
        return f"postgresql:{user}@{host}:{port}/{dbname}"
    return url


_FNV_OFFSET = 0x6C62272E07BB014262B821756295C58D
_FNV_PRIME = 0x0000000001000000000000000000013B


def store_fingerprint(url: str) -> str:
    """128-bit FNV-1a of the canonical form: computed in pure Python because the hook's light path imports
    neither hashlib nor anything else it can do without (tests/test_hook_fast.py); the canonical form holds no
    secret, so a non-cryptographic hash only has to tell databases apart."""
    h = _FNV_OFFSET
    for byte in _canonical(url).encode("utf-8"):
        h = ((h ^ byte) * _FNV_PRIME) & ((1 << 128) - 1)
    return f"{h:032x}"

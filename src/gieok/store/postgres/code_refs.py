"""PostgreSQL's side of `gieok.store.code_refs`: anchors and error fingerprints of memory rows.

A mixin of `PostgresStore` on its pooled connections (`_conn`, where psycopg errors become `StoreError`); the
caller's scope is the same WHERE every candidate query uses (`gieok.store.sqlfilters`).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from gieok.core.anchors import Anchor
from gieok.core.models import SearchFilters

if TYPE_CHECKING:
    from gieok.core.fingerprint import Fingerprint

from gieok.store.code_refs import (
    ANCHOR_INSERT_COLS,
    ANCHOR_SELECT,
    FINGERPRINT_INSERT_COLS,
    AnchorCheck,
    AnchorRow,
    FingerprintMatch,
    anchor_insert_params,
    anchor_row,
    fingerprint_insert_params,
    fingerprint_match,
    first_per_memory,
)
from gieok.store.postgres.codec import tags_sql, ts
from gieok.store.postgres.connection import PostgresBase
from gieok.store.sqlfilters import where_clause

_ANCHOR_INSERT = (f"INSERT INTO memory_anchors ({', '.join(ANCHOR_INSERT_COLS)}) VALUES "
                  f"({', '.join(['%s'] * len(ANCHOR_INSERT_COLS))}) ON CONFLICT DO NOTHING")
_FP_INSERT = (f"INSERT INTO memory_fingerprints ({', '.join(FINGERPRINT_INSERT_COLS)}) VALUES "
              f"({', '.join(['%s'] * len(FINGERPRINT_INSERT_COLS))}) ON CONFLICT DO NOTHING")


class PostgresCodeRefs(PostgresBase):
    async def index_code_refs(self, memory_id: str, anchors: list[Anchor],
                              fingerprints: list[Fingerprint]) -> None:
        async with self._conn() as con, con.transaction(), con.cursor() as cur:
            # Lock the memory row first: a concurrent hard delete then waits, or has already removed it
            # (the inserts below then insert nothing for a row that is gone: the FK would refuse them).
            row = await (await cur.execute("SELECT 1 FROM memory WHERE id = %s FOR UPDATE", (memory_id,))).fetchone()
            await cur.execute("DELETE FROM memory_anchors WHERE memory_id = %s", (memory_id,))
            await cur.execute("DELETE FROM memory_fingerprints WHERE memory_id = %s", (memory_id,))
            if row is None:
                return
            if anchors:
                await cur.executemany(_ANCHOR_INSERT, [anchor_insert_params(memory_id, a) for a in anchors])
            if fingerprints:
                await cur.executemany(_FP_INSERT, [fingerprint_insert_params(memory_id, fp) for fp in fingerprints])

    async def anchors_for(self, memory_ids: list[str]) -> dict[str, list[AnchorRow]]:
        out: dict[str, list[AnchorRow]] = {}
        if not memory_ids:
            return out
        async with self._conn() as con:
            rows = await (await con.execute(
                f"SELECT {ANCHOR_SELECT} FROM memory_anchors a JOIN memory m ON m.id = a.memory_id "
                "WHERE a.memory_id = ANY(%s) ORDER BY a.id", (list(dict.fromkeys(memory_ids)),))).fetchall()
        for r in rows:
            out.setdefault(r[1], []).append(anchor_row(r))
        return out

    async def anchor_repos(self, user_id: str | None = None) -> list[tuple[str, str]]:
        cond, params = ("AND m.user_id = %s", [user_id]) if user_id else ("", [])
        async with self._conn() as con:
            rows = await (await con.execute(
                "SELECT DISTINCT a.repo_root, a.repo_remote FROM memory_anchors a JOIN memory m ON m.id = a.memory_id "
                f"WHERE m.deleted_at IS NULL AND (a.repo_root <> '' OR a.repo_remote <> '') {cond} "
                "ORDER BY 1, 2", params)).fetchall()
        return [(r[0], r[1]) for r in rows]

    async def anchors_in_repo(self, root: str, remote: str, *, user_id: str | None = None, after_id: int = 0,
                              limit: int = 500) -> list[AnchorRow]:
        where = ("(a.repo_root = %s OR (%s <> '' AND a.repo_remote = %s)) AND a.id > %s "
                 "AND m.deleted_at IS NULL")
        params: list[Any] = [root, remote, remote, after_id]
        if user_id:
            where += " AND m.user_id = %s"
            params.append(user_id)
        async with self._conn() as con:
            rows = await (await con.execute(f"SELECT {ANCHOR_SELECT} FROM memory_anchors a JOIN memory m ON "
                                            f"m.id = a.memory_id WHERE {where} ORDER BY a.id LIMIT %s",
                                            [*params, limit])).fetchall()
        return [anchor_row(r) for r in rows]

    async def record_checks(self, checks: list[AnchorCheck], now: datetime) -> None:
        if not checks:
            return
        async with self._conn() as con, con.transaction(), con.cursor() as cur:
            await cur.executemany(
                "UPDATE memory_anchors SET status = %s, detail = %s, current_path = %s, checked_head = %s, "
                "checked_blob = %s, checked_at = %s, commit_id = COALESCE(%s, commit_id), "
                "blob = COALESCE(%s, blob) WHERE id = %s",
                [(c.status, c.detail[:1000], c.current_path, c.checked_head, c.checked_blob, now, c.commit, c.blob,
                  c.id) for c in checks])

    async def fingerprint_matches(self, f: SearchFilters, digests: list[str], signatures: list[str],
                                  limit: int) -> list[FingerprintMatch]:
        if not digests and not signatures:
            return []
        where, params = where_clause(f, "%s", tags_sql, ts)
        q = (f"SELECT m.id, fp.digest, fp.language, fp.error_type, fp.message, fp.frames, "
             f"fp.digest = ANY(%s) AS exact FROM memory_fingerprints fp JOIN memory m ON m.id = fp.memory_id "
             f"WHERE (fp.digest = ANY(%s) OR fp.signature = ANY(%s)) AND {where} "
             f"ORDER BY exact DESC, m.created_at DESC, m.id DESC LIMIT %s")
        async with self._conn() as con:
            rows = await (await con.execute(q, [digests, digests, signatures, *params, limit * 4])).fetchall()
        return first_per_memory((fingerprint_match(r[0], r[1], digests, r[1:6]) for r in rows), limit)

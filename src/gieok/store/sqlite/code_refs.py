"""SQLite's side of `gieok.store.code_refs`: anchors and error fingerprints of memory rows.

A mixin of `SQLiteStore` on its connection, lock and write transaction; the caller's scope is the same WHERE
every candidate query uses (`gieok.store.sqlfilters`).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from gieok.core.anchors import Anchor
from gieok.core.dates import from_iso, iso
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
from gieok.store.context_sql import chunks
from gieok.store.sqlfilters import where_clause
from gieok.store.sqlite.codec import tags_sql
from gieok.store.sqlite.connection import SQLiteBase

_ANCHOR_INSERT = (f"INSERT INTO memory_anchors ({', '.join(ANCHOR_INSERT_COLS)}) VALUES "
                  f"({', '.join('?' * len(ANCHOR_INSERT_COLS))}) ON CONFLICT DO NOTHING")
_FP_INSERT = (f"INSERT INTO memory_fingerprints ({', '.join(FINGERPRINT_INSERT_COLS)}) VALUES "
              f"({', '.join('?' * len(FINGERPRINT_INSERT_COLS))}) ON CONFLICT DO NOTHING")


class SQLiteCodeRefs(SQLiteBase):
    async def index_code_refs(self, memory_id: str, anchors: list[Anchor],
                              fingerprints: list[Fingerprint]) -> None:
        with self._write() as db:
            db.execute("DELETE FROM memory_anchors WHERE memory_id = ?", (memory_id,))
            db.execute("DELETE FROM memory_fingerprints WHERE memory_id = ?", (memory_id,))
            if db.execute("SELECT 1 FROM memory WHERE id = ?", (memory_id,)).fetchone() is None:
                return          # erased meanwhile: nothing to index
            db.executemany(_ANCHOR_INSERT, [anchor_insert_params(memory_id, a) for a in anchors])
            db.executemany(_FP_INSERT, [fingerprint_insert_params(memory_id, fp) for fp in fingerprints])

    async def anchors_for(self, memory_ids: list[str]) -> dict[str, list[AnchorRow]]:
        out: dict[str, list[AnchorRow]] = {}
        with self._read() as db:
            for chunk in chunks(list(dict.fromkeys(memory_ids))):
                rows = db.execute(
                    f"SELECT {ANCHOR_SELECT} FROM memory_anchors a JOIN memory m ON m.id = a.memory_id "
                    f"WHERE a.memory_id IN ({','.join('?' * len(chunk))}) ORDER BY a.id", chunk).fetchall()
                for r in rows:
                    out.setdefault(r[1], []).append(anchor_row(r, from_iso))
        return out

    async def anchor_repos(self, user_id: str | None = None) -> list[tuple[str, str]]:
        cond, params = ("AND m.user_id = ?", [user_id]) if user_id else ("", [])
        with self._lock:
            rows = self.db.execute(
                "SELECT DISTINCT a.repo_root, a.repo_remote FROM memory_anchors a JOIN memory m ON m.id = a.memory_id "
                f"WHERE m.deleted_at IS NULL AND (a.repo_root <> '' OR a.repo_remote <> '') {cond} "
                "ORDER BY 1, 2", params).fetchall()
        return [(r[0], r[1]) for r in rows]

    async def anchors_in_repo(self, root: str, remote: str, *, user_id: str | None = None, after_id: int = 0,
                              limit: int = 500) -> list[AnchorRow]:
        where = "(a.repo_root = ? OR (? <> '' AND a.repo_remote = ?)) AND a.id > ? AND m.deleted_at IS NULL"
        params: list[Any] = [root, remote, remote, after_id]
        if user_id:
            where += " AND m.user_id = ?"
            params.append(user_id)
        with self._lock:
            rows = self.db.execute(f"SELECT {ANCHOR_SELECT} FROM memory_anchors a JOIN memory m ON "
                                   f"m.id = a.memory_id WHERE {where} ORDER BY a.id LIMIT ?",
                                   [*params, limit]).fetchall()
        return [anchor_row(r, from_iso) for r in rows]

    async def record_checks(self, checks: list[AnchorCheck], now: datetime) -> None:
        if not checks:
            return
        with self._write() as db:
            db.executemany(
                "UPDATE memory_anchors SET status = ?, detail = ?, current_path = ?, checked_head = ?, "
                "checked_blob = ?, checked_at = ?, commit_id = COALESCE(?, commit_id), blob = COALESCE(?, blob) "
                "WHERE id = ?",
                [(c.status, c.detail[:1000], c.current_path, c.checked_head, c.checked_blob, iso(now), c.commit, c.blob,
                  c.id) for c in checks])

    async def fingerprint_matches(self, f: SearchFilters, digests: list[str], signatures: list[str],
                                  limit: int) -> list[FingerprintMatch]:
        if not digests and not signatures:
            return []
        where, params = where_clause(f, "?", tags_sql, iso)
        ds, ss = digests or [""], signatures or [""]      # IN () is not SQL; no fingerprint is ''
        d_in, s_in = ",".join("?" * len(ds)), ",".join("?" * len(ss))
        sql = (f"SELECT m.id, fp.digest, fp.language, fp.error_type, fp.message, fp.frames, "
               f"fp.digest IN ({d_in}) AS exact FROM memory_fingerprints fp "
               f"JOIN memory m ON m.id = fp.memory_id WHERE (fp.digest IN ({d_in}) OR fp.signature IN ({s_in})) "
               f"AND {where} ORDER BY exact DESC, m.created_at DESC, m.id DESC LIMIT ?")
        with self._read() as db:
            rows = db.execute(sql, [*ds, *ds, *ss, *params, limit * 4]).fetchall()
        return first_per_memory((fingerprint_match(r[0], r[1], digests, r[1:6]) for r in rows), limit)

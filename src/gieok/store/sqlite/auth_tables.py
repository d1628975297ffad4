"""SQLite side of the team server's tables (gieok.store.auth_base): teams, members, API keys, audit, erasure.
A mixin of `SQLiteStore`: it uses the connection, lock and write transaction of `SQLiteBase`."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime
from typing import Any

from gieok.core.dates import from_iso, iso, utcnow
from gieok.store.auth_base import ApiKeyRecord, AuditEntry, EraseReport, Team
from gieok.store.sqlite.connection import SQLiteBase

_KEY_COLS = "key_id, secret_hash, user_id, role, name, teams, created_at, expires_at, revoked_at, last_used_at"
_AUDIT_COLS = ("ts, actor, action, outcome, on_behalf, key_id, via, client, memory_ids, owners, detail, remote")


def _key(r: tuple[Any, ...]) -> ApiKeyRecord:
    return ApiKeyRecord(key_id=r[0], secret_hash=r[1], user_id=r[2], role=r[3], name=r[4], teams=json.loads(r[5]),
                        created_at=from_iso(r[6]), expires_at=from_iso(r[7]), revoked_at=from_iso(r[8]),
                        last_used_at=from_iso(r[9]))


class SQLiteAuthTables(SQLiteBase):
    # --- teams -----------------------------------------------------------------------------------------
    async def upsert_team(self, name: str, description: str = "") -> None:
        with self._write() as db:
            db.execute("INSERT INTO teams (name, description, created_at) VALUES (?, ?, ?) ON CONFLICT (name) "
                       "DO UPDATE SET description = CASE excluded.description WHEN '' THEN description "
                       "ELSE excluded.description END", (name, description, iso(utcnow())))

    async def delete_team(self, name: str) -> bool:
        with self._write() as db:
            return db.execute("DELETE FROM teams WHERE name = ?", (name,)).rowcount == 1

    async def list_teams(self) -> list[Team]:
        with self._lock:
            teams = self.db.execute("SELECT name, description, created_at FROM teams ORDER BY name").fetchall()
            members = self.db.execute("SELECT team, user_id FROM team_members ORDER BY user_id").fetchall()
        by: dict[str, list[str]] = {}
        for t, u in members:
            by.setdefault(t, []).append(u)
        return [Team(n, d, by.get(n, []), from_iso(c)) for n, d, c in teams]

    async def add_member(self, team: str, user_id: str, *, source: str = "admin") -> None:
        now = iso(utcnow())
        with self._write() as db:
            db.execute("INSERT INTO teams (name, description, created_at) VALUES (?, '', ?) "
                       "ON CONFLICT (name) DO NOTHING", (team, now))
            db.execute("INSERT INTO team_members (team, user_id, source, added_at) VALUES (?, ?, ?, ?) "
                       "ON CONFLICT (team, user_id) DO NOTHING", (team, user_id, source, now))

    async def remove_member(self, team: str, user_id: str) -> bool:
        with self._write() as db:
            return db.execute("DELETE FROM team_members WHERE team = ? AND user_id = ?",
                              (team, user_id)).rowcount == 1

    async def teams_of(self, user_id: str) -> tuple[str, ...]:
        with self._read() as db:
            rows = db.execute("SELECT team FROM team_members WHERE user_id = ? ORDER BY team",
                                   (user_id,)).fetchall()
        return tuple(r[0] for r in rows)

    # --- API keys --------------------------------------------------------------------------------------
    async def insert_api_key(self, rec: ApiKeyRecord) -> None:
        with self._write() as db:
            db.execute(f"INSERT INTO api_keys ({_KEY_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       (rec.key_id, rec.secret_hash, rec.user_id, rec.role, rec.name, json.dumps(rec.teams),
                        iso(rec.created_at or utcnow()), iso(rec.expires_at), iso(rec.revoked_at),
                        iso(rec.last_used_at)))

    async def get_api_key(self, key_id: str) -> ApiKeyRecord | None:
        with self._read() as db:
            row = db.execute(f"SELECT {_KEY_COLS} FROM api_keys WHERE key_id = ?", (key_id,)).fetchone()
        return _key(row) if row else None

    async def key_with_teams(self, key_id: str) -> tuple[ApiKeyRecord, tuple[str, ...]] | None:
        # Two local reads, no round trip to save: the two lookups as they are.
        rec = await self.get_api_key(key_id)
        return (rec, await self.teams_of(rec.user_id)) if rec else None

    async def list_api_keys(self, user_id: str | None = None) -> list[ApiKeyRecord]:
        cond, params = ("WHERE user_id = ?", [user_id]) if user_id else ("", [])
        with self._lock:
            rows = self.db.execute(f"SELECT {_KEY_COLS} FROM api_keys {cond} ORDER BY created_at, key_id",
                                   params).fetchall()
        return [_key(r) for r in rows]

    async def revoke_api_key(self, key_id: str, at: datetime) -> bool:
        with self._write() as db:
            return db.execute("UPDATE api_keys SET revoked_at = ? WHERE key_id = ? AND revoked_at IS NULL",
                              (iso(at), key_id)).rowcount == 1

    async def touch_api_keys(self, used: dict[str, datetime]) -> None:
        if not used:
            return
        with self._write() as db:
            db.executemany("UPDATE api_keys SET last_used_at = ? WHERE key_id = ?",
                           [(iso(t), k) for k, t in sorted(used.items())])

    # --- audit log -------------------------------------------------------------------------------------
    async def append_audit(self, entries: list[AuditEntry]) -> None:
        if not entries:
            return
        rows = [(iso(e.ts), e.actor, e.action, e.outcome, e.on_behalf, e.key_id, e.via, e.client,
                 json.dumps(e.memory_ids), json.dumps(e.owners), e.detail[:2000], e.remote) for e in entries]
        with self._write() as db:
            db.executemany(f"INSERT INTO audit_log ({_AUDIT_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                           rows)

    async def list_audit(self, *, user_id: str | None = None, since: datetime | None = None,
                         limit: int = 1000, after_id: int | None = None) -> list[AuditEntry]:
        conds: list[str] = []
        params: list[Any] = []
        if user_id:
            conds.append("(actor = ? OR on_behalf = ? OR EXISTS (SELECT 1 FROM json_each(owners) "
                         "WHERE value = ?))")
            params += [user_id, user_id, user_id]
        if since is not None:
            conds.append("ts >= ?")
            params.append(iso(since))
        if after_id is not None:
            conds.append("id > ?")
            params.append(after_id)
        where = ("WHERE " + " AND ".join(conds)) if conds else ""
        with self._lock:
            rows = self.db.execute(f"SELECT id, {_AUDIT_COLS} FROM audit_log {where} ORDER BY id LIMIT ?",
                                   [*params, limit]).fetchall()
        return [AuditEntry(ts=from_iso(r[1]) or utcnow(), actor=r[2], action=r[3], outcome=r[4], on_behalf=r[5],
                           key_id=r[6], via=r[7], client=r[8], memory_ids=json.loads(r[9]),
                           owners=json.loads(r[10]), detail=r[11], remote=r[12], id=r[0]) for r in rows]

    # --- erasure ---------------------------------------------------------------------------------------
    async def erase_user(self, user_id: str, pseudonym: str) -> EraseReport:
        rep = EraseReport(user_id)
        with self._write() as db:
            # Links and feedback go with the rows (ON DELETE CASCADE), full-text entries by trigger, vectors
            # with the rows; a link from another user's row to one of these goes by the same cascade.
            rep.memories = db.execute("DELETE FROM memory WHERE user_id = ?", (user_id,)).rowcount
            rep.profile = db.execute("DELETE FROM users WHERE user_id = ?", (user_id,)).rowcount == 1
            rep.memberships = db.execute("DELETE FROM team_members WHERE user_id = ?", (user_id,)).rowcount
            rep.api_keys = db.execute("DELETE FROM api_keys WHERE user_id = ?", (user_id,)).rowcount
            db.execute("DELETE FROM term_vectors WHERE user_id = ?", (user_id,))
            rep.audit_pseudonymised = _pseudonymise(db, user_id, pseudonym)
        self._drop_vector_caches()
        self._terms.clear()
        return rep


def _pseudonymise(db: sqlite3.Connection, user_id: str, pseudonym: str) -> int:
    n = db.execute("UPDATE audit_log SET actor = ? WHERE actor = ?", (pseudonym, user_id)).rowcount
    n += db.execute("UPDATE audit_log SET on_behalf = ? WHERE on_behalf = ?", (pseudonym, user_id)).rowcount
    rows = db.execute("SELECT id, owners FROM audit_log WHERE EXISTS (SELECT 1 FROM json_each(owners) "
                      "WHERE value = ?)", (user_id,)).fetchall()
    for rid, owners in rows:
        db.execute("UPDATE audit_log SET owners = ? WHERE id = ?",
                   (json.dumps([pseudonym if o == user_id else o for o in json.loads(owners)]), rid))
    return n + len(rows)

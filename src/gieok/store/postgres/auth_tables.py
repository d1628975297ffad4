"""PostgreSQL side of the team server's tables (gieok.store.auth_base): teams, members, API keys, audit,
erasure. A mixin of `PostgresStore`: it uses the pooled connections of `PostgresBase` (`_conn`, the one place psycopg
errors become StoreError)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from gieok.core.dates import utcnow
from gieok.store.auth_base import ApiKeyRecord, AuditEntry, EraseReport, Team
from gieok.store.postgres.connection import PostgresBase

_KEY_COLS = "key_id, secret_hash, user_id, role, name, teams, created_at, expires_at, revoked_at, last_used_at"
_AUDIT_COLS = "ts, actor, action, outcome, on_behalf, key_id, via, client, memory_ids, owners, detail, remote"


def _key(r: tuple[Any, ...]) -> ApiKeyRecord:
    return ApiKeyRecord(key_id=r[0], secret_hash=r[1], user_id=r[2], role=r[3], name=r[4], teams=list(r[5] or []),
                        created_at=r[6], expires_at=r[7], revoked_at=r[8], last_used_at=r[9])


class PostgresAuthTables(PostgresBase):
    # --- teams -----------------------------------------------------------------------------------------
    async def upsert_team(self, name: str, description: str = "") -> None:
        async with self._conn() as con:
            await con.execute("INSERT INTO teams (name, description, created_at) VALUES (%s, %s, %s) "
                              "ON CONFLICT (name) DO UPDATE SET description = CASE EXCLUDED.description "
                              "WHEN '' THEN teams.description ELSE EXCLUDED.description END",
                              (name, description, utcnow()))

    async def delete_team(self, name: str) -> bool:
        async with self._conn() as con:
            return (await con.execute("DELETE FROM teams WHERE name = %s", (name,))).rowcount == 1

    async def list_teams(self) -> list[Team]:
        async with self._conn() as con:
            teams = await (await con.execute("SELECT name, description, created_at FROM teams "
                                             "ORDER BY name")).fetchall()
            members = await (await con.execute("SELECT team, user_id FROM team_members "
                                               "ORDER BY user_id")).fetchall()
        by: dict[str, list[str]] = {}
        for t, u in members:
            by.setdefault(t, []).append(u)
        return [Team(n, d, by.get(n, []), c) for n, d, c in teams]

    async def add_member(self, team: str, user_id: str, *, source: str = "admin") -> None:
        now = utcnow()
        async with self._conn() as con, con.transaction():
            await con.execute("INSERT INTO teams (name, description, created_at) VALUES (%s, '', %s) "
                              "ON CONFLICT (name) DO NOTHING", (team, now))
            await con.execute("INSERT INTO team_members (team, user_id, source, added_at) VALUES (%s, %s, %s, %s) "
                              "ON CONFLICT (team, user_id) DO NOTHING", (team, user_id, source, now))

    async def remove_member(self, team: str, user_id: str) -> bool:
        async with self._conn() as con:
            cur = await con.execute("DELETE FROM team_members WHERE team = %s AND user_id = %s", (team, user_id))
            return cur.rowcount == 1

    async def teams_of(self, user_id: str) -> tuple[str, ...]:
        async with self._conn() as con:
            rows = await (await con.execute("SELECT team FROM team_members WHERE user_id = %s ORDER BY team",
                                            (user_id,))).fetchall()
        return tuple(r[0] for r in rows)

    # --- API keys --------------------------------------------------------------------------------------
    async def insert_api_key(self, rec: ApiKeyRecord) -> None:
        async with self._conn() as con:
            await con.execute(f"INSERT INTO api_keys ({_KEY_COLS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                              (rec.key_id, rec.secret_hash, rec.user_id, rec.role, rec.name, list(rec.teams),
                               rec.created_at or utcnow(), rec.expires_at, rec.revoked_at, rec.last_used_at))

    async def get_api_key(self, key_id: str) -> ApiKeyRecord | None:
        async with self._conn() as con:
            row = await (await con.execute(f"SELECT {_KEY_COLS} FROM api_keys WHERE key_id = %s",
                                           (key_id,))).fetchone()
        return _key(row) if row else None

    async def key_with_teams(self, key_id: str) -> tuple[ApiKeyRecord, tuple[str, ...]] | None:
        async with self._conn() as con:
            row = await (await con.execute(
                f"SELECT {_KEY_COLS}, ARRAY(SELECT t.team FROM team_members t WHERE t.user_id = k.user_id "
                "ORDER BY t.team) FROM api_keys k WHERE k.key_id = %s", (key_id,))).fetchone()
        return (_key(row[:-1]), tuple(row[-1] or ())) if row else None

    async def list_api_keys(self, user_id: str | None = None) -> list[ApiKeyRecord]:
        cond, params = ("WHERE user_id = %s", [user_id]) if user_id else ("", [])
        async with self._conn() as con:
            rows = await (await con.execute(f"SELECT {_KEY_COLS} FROM api_keys {cond} ORDER BY created_at, key_id",
                                            params)).fetchall()
        return [_key(r) for r in rows]

    async def revoke_api_key(self, key_id: str, at: datetime) -> bool:
        async with self._conn() as con:
            cur = await con.execute("UPDATE api_keys SET revoked_at = %s WHERE key_id = %s AND revoked_at IS NULL",
                                    (at, key_id))
            return cur.rowcount == 1

    async def touch_api_keys(self, used: dict[str, datetime]) -> None:
        if not used:
            return
        async with self._conn() as con, con.transaction(), con.cursor() as cur:
            await cur.executemany("UPDATE api_keys SET last_used_at = %s WHERE key_id = %s",
                                  [(t, k) for k, t in sorted(used.items())])

    # --- audit log -------------------------------------------------------------------------------------
    async def append_audit(self, entries: list[AuditEntry]) -> None:
        if not entries:
            return
        rows = [(e.ts, e.actor, e.action, e.outcome, e.on_behalf, e.key_id, e.via, e.client, list(e.memory_ids),
                 list(e.owners), e.detail[:2000], e.remote) for e in entries]
        async with self._conn() as con, con.transaction(), con.cursor() as cur:
            await cur.executemany(f"INSERT INTO audit_log ({_AUDIT_COLS}) VALUES "
                                  "(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)", rows)

    async def list_audit(self, *, user_id: str | None = None, since: datetime | None = None,
                         limit: int = 1000, after_id: int | None = None) -> list[AuditEntry]:
        conds: list[str] = []
        params: list[Any] = []
        if user_id:
            conds.append("(actor = %s OR on_behalf = %s OR owners @> ARRAY[%s]::text[])")
            params += [user_id, user_id, user_id]
        if since is not None:
            conds.append("ts >= %s")
            params.append(since)
        if after_id is not None:
            conds.append("id > %s")
            params.append(after_id)
        where = ("WHERE " + " AND ".join(conds)) if conds else ""
        async with self._conn() as con:
            rows = await (await con.execute(f"SELECT id, {_AUDIT_COLS} FROM audit_log {where} ORDER BY id LIMIT %s",
                                            [*params, limit])).fetchall()
        return [AuditEntry(ts=r[1], actor=r[2], action=r[3], outcome=r[4], on_behalf=r[5], key_id=r[6], via=r[7],
                           client=r[8], memory_ids=list(r[9]), owners=list(r[10]), detail=r[11], remote=r[12],
                           id=r[0]) for r in rows]

    # --- erasure ---------------------------------------------------------------------------------------
    async def erase_user(self, user_id: str, pseudonym: str) -> EraseReport:
        rep = EraseReport(user_id)
        async with self._conn() as con, con.transaction():
            # Links and feedback go with the rows (ON DELETE CASCADE); full text and vectors live in the row.
            rep.memories = (await con.execute("DELETE FROM memory WHERE user_id = %s", (user_id,))).rowcount
            rep.profile = (await con.execute("DELETE FROM users WHERE user_id = %s", (user_id,))).rowcount == 1
            rep.memberships = (await con.execute("DELETE FROM team_members WHERE user_id = %s",
                                                 (user_id,))).rowcount
            rep.api_keys = (await con.execute("DELETE FROM api_keys WHERE user_id = %s", (user_id,))).rowcount
            await con.execute("DELETE FROM term_vectors WHERE user_id = %s", (user_id,))
            n = (await con.execute("UPDATE audit_log SET actor = %s WHERE actor = %s",
                                   (pseudonym, user_id))).rowcount
            n += (await con.execute("UPDATE audit_log SET on_behalf = %s WHERE on_behalf = %s",
                                    (pseudonym, user_id))).rowcount
            n += (await con.execute("UPDATE audit_log SET owners = array_replace(owners, %s, %s) "
                                    "WHERE owners @> ARRAY[%s]::text[]", (user_id, pseudonym, user_id))).rowcount
            rep.audit_pseudonymised = n
        self._terms.clear()
        return rep

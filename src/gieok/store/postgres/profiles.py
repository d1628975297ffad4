"""PostgreSQL: user profiles and project tags (`Profiles`), links between rows and feedback on them
(`Relations`)."""

from __future__ import annotations

from datetime import datetime

import psycopg
from psycopg.types.json import Jsonb

from gieok.core.dates import utcnow
from gieok.core.errors import StoreError
from gieok.core.principal import Principal
from gieok.store.base import FeedbackRow, Link, ProjectTag, UserProfile
from gieok.store.postgres.connection import PostgresBase
from gieok.store.shared import links_sql


class ProfilesMixin(PostgresBase):
    async def get_user(self, user_id: str) -> UserProfile | None:
        async with self._conn() as con:
            row = await (await con.execute("SELECT user_id, user_name, core_profile, sub_profile, created_at, "
                                           "updated_at FROM users WHERE user_id = %s", (user_id,))).fetchone()
        if not row:
            return None
        return UserProfile(row[0], row[1], list(row[2]), list(row[3]), row[4], row[5])

    async def save_user(self, profile: UserProfile) -> None:
        now = utcnow()
        async with self._conn() as con:
            await con.execute(
                "INSERT INTO users (user_id, user_name, core_profile, sub_profile, created_at, updated_at) "
                "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (user_id) DO UPDATE SET user_name = EXCLUDED.user_name, "
                "core_profile = EXCLUDED.core_profile, sub_profile = EXCLUDED.sub_profile, "
                "updated_at = EXCLUDED.updated_at",
                (profile.user_id, profile.user_name, Jsonb(profile.core_profile), Jsonb(profile.sub_profile),
                 now, now))

    async def list_project_tags(self) -> list[ProjectTag]:
        async with self._conn() as con:
            rows = await (await con.execute("SELECT name, alias_of, description, created_by, usage_count "
                                            "FROM project_tags ORDER BY usage_count DESC, name")).fetchall()
        return [ProjectTag(*r) for r in rows]

    async def upsert_project_tag(self, tag: ProjectTag) -> None:
        async with self._conn() as con:
            await con.execute(
                "INSERT INTO project_tags (name, alias_of, description, created_by, usage_count, created_at) "
                "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (name) DO UPDATE SET alias_of = EXCLUDED.alias_of, "
                "description = CASE EXCLUDED.description WHEN '' THEN project_tags.description "
                "ELSE EXCLUDED.description END, usage_count = EXCLUDED.usage_count",
                (tag.name, tag.alias_of, tag.description, tag.created_by, tag.usage_count, utcnow()))


class RelationsMixin(PostgresBase):
    async def add_link(self, src: str, dst: str, relation: str) -> None:
        try:
            async with self._conn() as con:
                await con.execute("INSERT INTO memory_links (src, dst, relation, created_at) VALUES (%s, %s, %s, %s) "
                                  "ON CONFLICT DO NOTHING", (src, dst, relation, utcnow()))
        except StoreError as exc:
            if isinstance(exc.__cause__, psycopg.errors.IntegrityError):
                raise StoreError(f"cannot link {src} → {dst}: {exc.__cause__}") from exc.__cause__
            raise

    async def remove_link(self, src: str, dst: str, relation: str) -> bool:
        async with self._conn() as con:
            cur = await con.execute("DELETE FROM memory_links WHERE src = %s AND dst = %s AND relation = %s",
                                    (src, dst, relation))
            return cur.rowcount > 0

    async def list_links(self, memory_id: str, *, viewer: Principal | None = None) -> list[Link]:
        q, params = links_sql(memory_id, viewer, "%s")
        async with self._conn() as con:
            rows = await (await con.execute(q, params)).fetchall()
        return [Link(r[0], r[1], r[2], r[3]) for r in rows]

    async def add_feedback(self, memory_id: str, event: str, score: float, ts: datetime) -> None:
        # helpful feedback is usage as much as a cite; "neglected"/"not_helpful" lower importance instead.
        counter = {"cited": "cite_count", "helpful": "cite_count", "edited": "edit_count",
                   "used": "view_count"}.get(event)
        async with self._conn() as con, con.transaction():
            await con.execute("INSERT INTO feedback_events (memory_id, event, score, ts) VALUES (%s, %s, %s, %s)",
                              (memory_id, event, score, ts))
            if counter:
                await con.execute(f"UPDATE memory SET {counter} = {counter} + 1 WHERE id = %s", (memory_id,))

    async def list_feedback(self, memory_id: str) -> list[FeedbackRow]:
        async with self._conn() as con:
            rows = await (await con.execute("SELECT memory_id, event, score, ts FROM feedback_events "
                                            "WHERE memory_id = %s ORDER BY id", (memory_id,))).fetchall()
        return [FeedbackRow(r[0], r[1], float(r[2]), r[3]) for r in rows]


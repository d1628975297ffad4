"""SQLite: user profiles and project tags (`Profiles`), links between rows and feedback on them
(`Relations`)."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime

from gieok.core.dates import from_iso, iso, utcnow
from gieok.core.errors import StoreError
from gieok.core.principal import Principal
from gieok.store.base import FeedbackRow, Link, ProjectTag, UserProfile
from gieok.store.shared import links_sql
from gieok.store.sqlite.connection import SQLiteBase


class ProfilesMixin(SQLiteBase):
    async def get_user(self, user_id: str) -> UserProfile | None:
        with self._lock:
            row = self.db.execute("SELECT user_id, user_name, core_profile, sub_profile, created_at, updated_at "
                                  "FROM users WHERE user_id = ?", (user_id,)).fetchone()
        if not row:
            return None
        return UserProfile(row[0], row[1], json.loads(row[2]), json.loads(row[3]), from_iso(row[4]),
                           from_iso(row[5]))

    async def save_user(self, profile: UserProfile) -> None:
        now = iso(utcnow())
        with self._write() as db:
            db.execute("INSERT INTO users (user_id, user_name, core_profile, sub_profile, created_at, updated_at) "
                       "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (user_id) DO UPDATE SET user_name = excluded.user_name, "
                       "core_profile = excluded.core_profile, sub_profile = excluded.sub_profile, "
                       "updated_at = excluded.updated_at",
                       (profile.user_id, profile.user_name, json.dumps(profile.core_profile, ensure_ascii=False),
                        json.dumps(profile.sub_profile, ensure_ascii=False), now, now))

    async def list_project_tags(self) -> list[ProjectTag]:
        with self._lock:
            rows = self.db.execute("SELECT name, alias_of, description, created_by, usage_count FROM project_tags "
                                   "ORDER BY usage_count DESC, name").fetchall()
        return [ProjectTag(*r) for r in rows]

    async def upsert_project_tag(self, tag: ProjectTag) -> None:
        with self._write() as db:
            db.execute("INSERT INTO project_tags (name, alias_of, description, created_by, usage_count, created_at) "
                       "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET alias_of = excluded.alias_of, "
                       "description = CASE excluded.description WHEN '' THEN description "
                       "ELSE excluded.description END, usage_count = excluded.usage_count",
                       (tag.name, tag.alias_of, tag.description, tag.created_by, tag.usage_count, iso(utcnow())))


class RelationsMixin(SQLiteBase):
    async def add_link(self, src: str, dst: str, relation: str) -> None:
        with self._write() as db:
            try:
                db.execute("INSERT INTO memory_links (src, dst, relation, created_at) VALUES (?, ?, ?, ?) "
                           "ON CONFLICT DO NOTHING", (src, dst, relation, iso(utcnow())))
            except sqlite3.IntegrityError as exc:
                raise StoreError(f"cannot link {src} → {dst}: {exc}") from exc

    async def remove_link(self, src: str, dst: str, relation: str) -> bool:
        with self._write() as db:
            cur = db.execute("DELETE FROM memory_links WHERE src = ? AND dst = ? AND relation = ?",
                             (src, dst, relation))
            return cur.rowcount > 0

    async def list_links(self, memory_id: str, *, viewer: Principal | None = None) -> list[Link]:
        sql, params = links_sql(memory_id, viewer, "?")
        with self._lock:
            rows = self.db.execute(sql, params).fetchall()
        return [Link(r[0], r[1], r[2], from_iso(r[3])) for r in rows]

    async def add_feedback(self, memory_id: str, event: str, score: float, ts: datetime) -> None:
        # helpful feedback is usage as much as a cite; "neglected"/"not_helpful" lower importance instead.
        counter = {"cited": "cite_count", "helpful": "cite_count", "edited": "edit_count",
                   "used": "view_count"}.get(event)
        with self._write() as db:
            db.execute("INSERT INTO feedback_events (memory_id, event, score, ts) VALUES (?, ?, ?, ?)",
                       (memory_id, event, score, iso(ts)))
            if counter:
                db.execute(f"UPDATE memory SET {counter} = {counter} + 1 WHERE id = ?", (memory_id,))

    async def list_feedback(self, memory_id: str) -> list[FeedbackRow]:
        with self._lock:
            rows = self.db.execute("SELECT memory_id, event, score, ts FROM feedback_events WHERE memory_id = ? "
                                   "ORDER BY id", (memory_id,)).fetchall()
        return [FeedbackRow(r[0], r[1], r[2], from_iso(r[3]) or utcnow()) for r in rows]


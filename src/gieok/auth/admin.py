"""What an admin does to the team server's tables — create and revoke keys, manage teams, erase a person —
each audited at once. Used by the CLI (and any admin surface, such as the dashboard)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from gieok.auth.audit import AuditLog, entry
from gieok.auth.keys import NewKey, generate_key, parse_expiry
from gieok.core.dates import utcnow
from gieok.core.errors import InvalidInput, NotFound
from gieok.core.principal import Principal, normalise_role
from gieok.store.auth_base import ApiKeyRecord, EraseReport
from gieok.store.base import Store


@dataclass(frozen=True, slots=True)
class CreatedKey:
    key: NewKey
    record: ApiKeyRecord


def pseudonym(user_id: str) -> str:
    """What an erased user's id becomes in the audit log: stable (one person's entries stay together), not
    reversible to the id without knowing it."""
    return "erased:" + hashlib.sha256(user_id.encode()).hexdigest()[:16]


class Admin:
    def __init__(self, store: Store, actor: Principal) -> None:
        self.store = store
        self.actor = actor
        self.audit = AuditLog(store)

    async def _audit(self, action: str, detail: str, *, outcome: str = "ok") -> None:
        await self.audit.record_now(entry(self.actor, action, outcome=outcome, detail=detail))

    async def create_key(self, user_id: str, *, role: str = "editor", teams: list[str] | None = None,
                         expires: str | None = None, name: str = "") -> CreatedKey:
        user = user_id.strip()
        if not user:
            raise InvalidInput("user", "is required: whose key is this?")
        try:
            role = normalise_role(role)
        except ValueError as exc:
            raise InvalidInput("role", str(exc)) from None
        now = utcnow()
        key = generate_key()
        rec = ApiKeyRecord(key_id=key.key_id, secret_hash=key.secret_hash, user_id=user, role=role, name=name,
                           teams=sorted({t.strip() for t in teams or [] if t.strip()}), created_at=now,
                           expires_at=parse_expiry(expires, now))
        for t in rec.teams:
            await self.store.add_member(t, user, source="key")
        await self.store.insert_api_key(rec)
        await self._audit("keys create", f"key {key.key_id} for {user} role={role} teams={','.join(rec.teams)}")
        return CreatedKey(key, rec)

    async def revoke_key(self, key_id: str) -> ApiKeyRecord:
        rec = await self.store.get_api_key(key_id)
        if rec is None:
            raise NotFound(f"no API key {key_id!r} (see `gieok keys list`)")
        if not await self.store.revoke_api_key(key_id, utcnow()):
            raise InvalidInput("key_id", f"key {key_id} was already revoked")
        await self._audit("keys revoke", f"key {key_id} of {rec.user_id}")
        return rec

    async def add_member(self, team: str, user_id: str) -> None:
        await self.store.add_member(team, user_id)
        await self._audit("teams add", f"{user_id} → {team}")

    async def remove_member(self, team: str, user_id: str) -> None:
        if not await self.store.remove_member(team, user_id):
            raise NotFound(f"{user_id!r} is not a member of {team!r}")
        await self._audit("teams remove", f"{user_id} ✕ {team}")

    async def create_team(self, team: str, description: str = "") -> None:
        await self.store.upsert_team(team, description)
        await self._audit("teams create", team)

    async def delete_team(self, team: str) -> None:
        if not await self.store.delete_team(team):
            raise NotFound(f"no team {team!r}")
        await self._audit("teams delete", team)

    async def erase_user(self, user_id: str) -> EraseReport:
        """GDPR-style erasure: every memory (with its links, feedback, full-text and vector entries, and the
        summaries the librarian built from it, which are the user's own rows), the profile, memberships and
        keys. The audit log keeps that it happened, under a pseudonym."""
        rep = await self.store.erase_user(user_id, pseudonym(user_id))
        await self._audit("erase user", f"{pseudonym(user_id)}: {rep.memories} memories, profile={rep.profile}, "
                                        f"{rep.memberships} memberships, {rep.api_keys} keys")
        return rep

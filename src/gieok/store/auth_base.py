"""The team server's tables (ARCHITECTURE §13): teams and their members, API keys (a hash of the secret, never
the secret), the audit log, and erasing a person. A narrow Protocol beside the memory Store's; each backend
implements it in its own `auth_tables` module."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol


@dataclass(slots=True)
class ApiKeyRecord:
    key_id: str
    secret_hash: str
    user_id: str
    role: str = "editor"
    name: str = ""
    teams: list[str] = field(default_factory=list)
    created_at: datetime | None = None
    expires_at: datetime | None = None
    revoked_at: datetime | None = None
    last_used_at: datetime | None = None

    def public(self) -> dict[str, Any]:
        """Everything but the hash: what `gieok keys list` shows."""
        return {"key_id": self.key_id, "user_id": self.user_id, "role": self.role, "name": self.name,
                "teams": list(self.teams),
                **{k: (v.isoformat() if v else None) for k, v in (
                    ("created_at", self.created_at), ("expires_at", self.expires_at),
                    ("revoked_at", self.revoked_at), ("last_used_at", self.last_used_at))}}


@dataclass(slots=True)
class Team:
    name: str
    description: str = ""
    members: list[str] = field(default_factory=list)
    created_at: datetime | None = None


@dataclass(slots=True)
class AuditEntry:
    """One line of the audit log: who (actor, key, client), when, what (action, memory ids, outcome)."""

    ts: datetime
    actor: str
    action: str
    outcome: str = "ok"            # ok | denied | refused | error
    on_behalf: str = ""
    key_id: str = ""
    via: str = ""
    client: str = ""
    memory_ids: list[str] = field(default_factory=list)
    owners: list[str] = field(default_factory=list)
    detail: str = ""
    remote: str = ""
    id: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "ts": self.ts.isoformat(), "actor": self.actor, "on_behalf": self.on_behalf,
                "key_id": self.key_id, "via": self.via, "client": self.client, "action": self.action,
                "outcome": self.outcome, "memory_ids": list(self.memory_ids), "owners": list(self.owners),
                "detail": self.detail, "remote": self.remote}


@dataclass(slots=True)
class EraseReport:
    """What `gieok erase --user` removed."""

    user_id: str
    memories: int = 0
    profile: bool = False
    memberships: int = 0
    api_keys: int = 0
    audit_pseudonymised: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"user_id": self.user_id, "memories": self.memories, "profile": self.profile,
                "memberships": self.memberships, "api_keys": self.api_keys,
                "audit_pseudonymised": self.audit_pseudonymised}


class AuthTables(Protocol):
    # --- teams -----------------------------------------------------------------------------------------
    async def upsert_team(self, name: str, description: str = "") -> None: ...

    async def delete_team(self, name: str) -> bool:
        """Remove the team and its memberships. Its `team` rows stay their owners' and become visible to
        nobody else (no one is a member any more)."""
        ...

    async def list_teams(self) -> list[Team]: ...

    async def add_member(self, team: str, user_id: str, *, source: str = "admin") -> None:
        """Add `user_id` to `team` (created if missing)."""
        ...

    async def remove_member(self, team: str, user_id: str) -> bool: ...

    async def teams_of(self, user_id: str) -> tuple[str, ...]:
        """The teams `user_id` belongs to, sorted."""
        ...

    # --- API keys --------------------------------------------------------------------------------------
    async def insert_api_key(self, rec: ApiKeyRecord) -> None: ...

    async def get_api_key(self, key_id: str) -> ApiKeyRecord | None: ...

    async def key_with_teams(self, key_id: str) -> tuple[ApiKeyRecord, tuple[str, ...]] | None:
        """The key and its user's teams (`teams_of`), in one round trip: every authenticated request asks."""
        ...

    async def list_api_keys(self, user_id: str | None = None) -> list[ApiKeyRecord]: ...

    async def revoke_api_key(self, key_id: str, at: datetime) -> bool:
        """Mark the key revoked; False if there is no such key or it was revoked already."""
        ...

    async def touch_api_keys(self, used: dict[str, datetime]) -> None:
        """Record when keys were last used (batched by the caller, off the request path)."""
        ...

    # --- audit log -------------------------------------------------------------------------------------
    async def append_audit(self, entries: list[AuditEntry]) -> None:
        """Write entries in one transaction."""
        ...

    async def list_audit(self, *, user_id: str | None = None, since: datetime | None = None,
                         limit: int = 1000, after_id: int | None = None) -> list[AuditEntry]:
        """Oldest first. `user_id` matches the actor, the user acted for, or an owner whose memory was read."""
        ...

    # --- erasure ---------------------------------------------------------------------------------------
    async def erase_user(self, user_id: str, pseudonym: str) -> EraseReport:
        """Remove a person from every table and index (memories with their links, feedback, full-text and
        vectors; profile; memberships; API keys) in one transaction; in the audit log their id becomes
        `pseudonym`, so the record that something happened stays without saying who."""
        ...

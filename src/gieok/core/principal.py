"""Who a request acts for, once its credentials are verified (ARCHITECTURE §13).

A `Principal` is plain data so the store can filter by it: a row is visible to a principal when the principal
owns it, when it is `team`-scoped to one of the principal's teams, or when it is `public`. Roles rank
viewer < editor < admin; `editor` is the default.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

Role = Literal["viewer", "editor", "admin"]
ROLE_NAMES: tuple[str, ...] = ("viewer", "editor", "admin")
_RANK = {r: i for i, r in enumerate(ROLE_NAMES)}

# How the principal was established: `local` is the single-user case (stdio, loopback without auth).
Via = Literal["local", "apikey", "jwt"]


@dataclass(frozen=True, slots=True)
class Principal:
    user_id: str
    teams: tuple[str, ...] = ()
    roles: tuple[str, ...] = ("editor",)
    key_id: str = ""          # the API key's id, or the JWT's jti
    client: str = ""          # the key's name or the JWT's client (azp / client_id)
    via: Via = "local"
    acting_for: str = ""      # set when an admin acts for another user: the admin's own user id
    meta: dict[str, str] = field(default_factory=dict, compare=False, hash=False)

    @property
    def role(self) -> str:
        """The highest role held (unknown role names count as nothing)."""
        known = [r for r in self.roles if r in _RANK]
        return max(known, key=_RANK.__getitem__) if known else "viewer"

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"

    @property
    def can_write(self) -> bool:
        return _RANK[self.role] >= _RANK["editor"]

    @property
    def actor(self) -> str:
        """The person really making the request (the admin, when acting for someone)."""
        return self.acting_for or self.user_id

    def acting_as(self, user_id: str, teams: tuple[str, ...]) -> Principal:
        """This admin acting for `user_id` with that user's teams (the caller checks `is_admin` and audits)."""
        return replace(self, user_id=user_id, teams=teams, acting_for=self.actor)


def normalise_role(value: str) -> str:
    v = value.strip().lower()
    if v not in _RANK:
        raise ValueError(f"{value!r} is not a role: use {', '.join(ROLE_NAMES)}")
    return v

"""A key table standing in for the team server's credential verifier (issue 12) until it lands: it answers the
dashboard's `CredentialVerifier` Protocol, so the dashboard's own sign-in, cookie, CSRF, role and scope code runs
for real."""

from __future__ import annotations

from dataclasses import dataclass, field

from gieok.ui.principal import Principal


@dataclass
class KeyTable:
    keys: dict[str, Principal] = field(default_factory=dict)
    revoked: set[str] = field(default_factory=set)

    async def verify(self, credential: str) -> Principal | None:
        if credential in self.revoked:
            return None
        p = self.keys.get(credential)
        return Principal(p.user_id, p.teams, p.roles, via="apikey") if p else None


def team_keys() -> KeyTable:
    return KeyTable({
        "gk-alice-editor": Principal("alice", ("core",), ("editor",)),
        "gk-alice-viewer": Principal("alice", ("core",), ("viewer",)),
        "gk-bob-editor": Principal("bob", ("core",), ("editor",)),
        "gk-root-admin": Principal("root", (), ("admin",)),
    })

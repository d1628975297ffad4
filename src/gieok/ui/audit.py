"""Every change made from the dashboard, every refusal and every sign-in goes to the team server's audit log
(`gieok audit`), as `ui <action>` entries with the memory ids and their owners. Written at once (`record_now`):
changes from a person are few, and the admin pages show them straight after."""

from __future__ import annotations

from collections.abc import Iterable

from gieok.auth.audit import entry
from gieok.auth.team import TeamAuth
from gieok.core.principal import Principal


async def record(team: TeamAuth, principal: Principal | None, action: str, *, outcome: str = "ok",
                 memory_ids: Iterable[str] = (), owners: Iterable[str] = (), detail: str = "",
                 remote: str = "") -> None:
    if team.audit is not None:
        await team.audit.record_now(entry(principal, f"ui {action}", outcome=outcome, memory_ids=memory_ids,
                                          owners=owners, detail=detail, remote=remote))

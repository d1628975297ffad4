"""Every change made from the dashboard is recorded: who (the principal), what, on which memory, with what.

Until the audit log of issue 12 lands these records go to the `gieok.audit` logger as one JSON object per line
(the server's log); `AuditSink` is the seam the audit table will fill.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Protocol

from gieok.core.dates import iso, utcnow
from gieok.ui.principal import Principal

log = logging.getLogger("gieok.audit")


class AuditSink(Protocol):
    async def record(self, principal: Principal, action: str, target: str, detail: dict[str, Any]) -> None: ...


class LogAudit:
    async def record(self, principal: Principal, action: str, target: str, detail: dict[str, Any]) -> None:
        log.info(json.dumps({"at": iso(utcnow()), "user": principal.user_id, "via": principal.via,
                             "roles": sorted(principal.roles), "action": action, "target": target,
                             "detail": detail, "surface": "dashboard"}, ensure_ascii=False, default=str))

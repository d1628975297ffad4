"""What the memory service needs from the layers above it, as small typed Protocols.

The service sits below the librarian: it never imports it. When a librarian runs in the same process, the
composition root (`gieok.app.runtime`) hands it to the service as a `RowProcessor`, so an explicit
"remember this" is tagged and embedded at once and a thread can be summarised on request.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol

from gieok.core.models import Memory

__all__ = ["RowProcessor", "RowStatus", "Status"]

Status = Literal["ok", "pending", "failed"]
# (tagged, embedded, notes) of one row processed now.
RowStatus = tuple[Status, Status, list[str]]


class RowProcessor(Protocol):
    """The librarian, as the service and the tools see it."""

    async def process_now(self, rows: Sequence[Memory]) -> dict[str, RowStatus]:
        """Tag and embed `rows` now; a failing provider leaves a row pending for the cold path and says so."""
        ...

    processed: int

    def throughput(self) -> float:
        """Rows processed per second since this processor started (the dashboard shows it)."""
        ...

    async def summarize_thread(self, user_id: str, session_id: str) -> dict[str, Any]:
        """Summarise one session into a semantic memory (see `gieok.librarian.consolidate`)."""
        ...

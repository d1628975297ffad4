"""The librarian's periodic jobs as `gieok stats`, `gieok doctor` and the dashboard show them."""

from __future__ import annotations

from typing import Any

from gieok.core.dates import utcnow
from gieok.store.base import Store


async def librarian_status(store: Store) -> dict[str, Any]:
    """When each job last finished, who runs it now, and its last result in counts."""
    now = utcnow()
    out: dict[str, Any] = {}
    for job in await store.list_jobs():
        res = job["last_result"] or {}
        lease = job["lease_until"]
        out[job["name"]] = {
            "last_finished_at": job["last_finished_at"],
            "running_on": job["owner"] if lease is not None and lease > now else None,
            "last_result": {k: (len(v) if isinstance(v, list) else v) for k, v in res.items()
                            if not isinstance(v, dict)},
        }
    return out

"""What operators read from a running gieok process: logs (text or JSON), health and readiness, and the
Prometheus exposition. Used by `gieok serve` (beside `/mcp`) and `gieok worker` (its own small HTTP server).

- `/health` answers while the event loop runs: for liveness probes, which restart a hung process.
- `/ready` answers 200 only when this process can do its work: the service is open, the database answers,
  its schema is the one this code migrates to, and (when `GIEOK_READY_MAX_LAG_S` is set) the librarian is not
  too far behind. Lag is always reported but fails readiness only on request: taking every replica out of the
  load balancer because the workers are slow would turn a backlog into an outage.
- `/metrics` refreshes the queue gauges from the database, then renders the default registry.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Any

import anyio
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from gieok.core.dates import utcnow
from gieok.core.errors import GieokError
from gieok.core.metrics import BUILD, QUEUE_LAG, QUEUE_ROWS
from gieok.core.settings import Settings
from gieok.core.version import __version__
from gieok.memory.service import MemoryService
from gieok.store.base import QueueStatus

BUILD.info({"version": __version__})
READY_TIMEOUT_S = 5.0
# Scrapes every few seconds from several Prometheus servers should not each count the queue.
QUEUE_CACHE_S = 2.0

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def configure_logging(settings: Settings, level: int = logging.INFO) -> None:
    """Root logging to stderr, as text or (GIEOK_LOG_FORMAT=json) one JSON object per line with the time,
    level, logger and message (and any `extra=` fields), for log collectors."""
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(_drop_color)
    if settings.log_format == "json":
        from pythonjsonlogger.json import JsonFormatter
        handler.setFormatter(JsonFormatter("%(asctime)s %(levelname)s %(name)s %(message)s",
                                           rename_fields={"asctime": "time", "levelname": "level",
                                                          "name": "logger"}))
    else:
        handler.setFormatter(logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    root.addHandler(handler)
    root.setLevel(level)
    # uvicorn's loggers go through the root handler (run with log_config=None), so they share the format.
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        lg = logging.getLogger(name)
        lg.handlers.clear()
        lg.propagate = True
    # The SDK logs every stateless request's end ("Terminating session") at INFO: one line per call.
    logging.getLogger("mcp.server.streamable_http").setLevel(max(level, logging.WARNING))


def _drop_color(record: logging.LogRecord) -> bool:
    # uvicorn attaches an ANSI-coloured copy of its message; in JSON it is only noise.
    record.__dict__.pop("color_message", None)
    return True


class QueueProbe:
    """The librarian queue, read at most every QUEUE_CACHE_S seconds per process."""

    def __init__(self) -> None:
        self._at = 0.0
        self._last: QueueStatus | None = None

    async def read(self, svc: MemoryService) -> QueueStatus:
        now = time.monotonic()
        if self._last is None or now - self._at > QUEUE_CACHE_S:
            with anyio.fail_after(READY_TIMEOUT_S):
                self._last = await svc.store.queue_status(need_embedding=svc.embedder is not None)
            self._at = now
        return self._last


def lag_seconds(q: QueueStatus) -> float:
    return max(0.0, (utcnow() - q.oldest_pending_at).total_seconds()) if q.oldest_pending_at else 0.0


async def readiness(svc: MemoryService | None, settings: Settings, probe: QueueProbe) -> tuple[bool, dict[str, Any]]:
    """(ready, body): every check with its own result, so a failing probe says which one failed."""
    if svc is None:
        return False, {"ready": False, "checks": {"service": "starting"}}
    checks: dict[str, Any] = {}
    ok = True
    try:
        with anyio.fail_after(READY_TIMEOUT_S):
            applied = await svc.store.schema_version()
        q = await probe.read(svc)
    except (GieokError, TimeoutError) as exc:
        reason = "no answer within 5 s" if isinstance(exc, TimeoutError) else str(exc)
        return False, {"ready": False, "checks": {"database": f"unreachable: {reason}"}}
    checks["database"] = "ok"
    expected = svc.store.SCHEMA_VERSION
    checks["schema"] = {"applied": applied, "expected": expected}
    if applied < expected:
        ok = False
        checks["schema"]["problem"] = "migrations pending: restart one process so it migrates"
    lag = lag_seconds(q)
    checks["librarian"] = {"pending": q.pending, "failed": q.failed, "lag_seconds": round(lag, 1)}
    if settings.ready_max_lag_s and lag > settings.ready_max_lag_s:
        ok = False
        checks["librarian"]["problem"] = f"oldest pending row waits {lag:.0f}s > GIEOK_READY_MAX_LAG_S"
    return ok, {"ready": ok, "version": __version__, "checks": checks}


async def metrics_payload(svc: MemoryService | None, probe: QueueProbe) -> tuple[bytes, str]:
    """The exposition text; queue gauges are refreshed first (left as they were if the database is down)."""
    if svc is not None:
        try:
            q = await probe.read(svc)
        except (GieokError, TimeoutError):
            pass
        else:
            QUEUE_ROWS.labels("pending").set(q.pending)
            QUEUE_ROWS.labels("failed").set(q.failed)
            QUEUE_LAG.set(lag_seconds(q))
    return generate_latest(), CONTENT_TYPE_LATEST



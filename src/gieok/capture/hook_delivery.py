"""Where a hook's messages and its SessionStart context come from: the running server (`gieok serve`, over
`gieok.capture.server_client`) when one answers for this store, else the database opened directly, without
the service (and with the full settings, only then imported)."""

from __future__ import annotations

from gieok.capture.server_client import server_for
from gieok.capture.transcript import CLAUDE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from gieok.capture.hook_config import HookSettings
    from gieok.core.settings import Settings

CONTEXT_MAX_CHARS = 9500


def full_settings(cfg: HookSettings | None = None) -> Settings:
    """The full settings, for the paths that open the database (they import pydantic anyway)."""
    from gieok.core.settings import Settings, load_settings
    return cfg if isinstance(cfg, Settings) else load_settings()


# --- talking to a server, or to the database ---------------------------------------------------------------
def deliver(cfg: HookSettings, msgs: list[dict[str, Any]]) -> list[str]:
    """Store messages through the running server, else directly. Returns the refusals (bad input)."""
    if not msgs:
        return []
    server = server_for(cfg)
    if server is not None:
        res = server.post_json("/v1/messages", msgs)
        if res is not None and res[0] == 200:
            return []
    # No server, or it refused part of the batch: the direct path stores what is valid and names the rest.
    import asyncio
    return asyncio.run(_insert_direct(full_settings(cfg), msgs))


async def _insert_direct(settings: Settings, msgs: list[dict[str, Any]]) -> list[str]:
    # The hot path of MemoryService.ingest without importing the service: that pulls in retrieval and the
    # embedder (~0.5 s), and a hook process has no librarian to wake.
    from gieok.core.errors import InvalidInput
    from gieok.core.models import Identity
    from gieok.memory.ingest import message_from_json, prepare
    from gieok.store import open_store
    store = open_store(settings.resolved_database_url, busy_timeout_ms=settings.busy_timeout_ms)
    await store.open()
    errors: list[str] = []
    base = Identity(user_id=settings.user_id)
    try:
        for m in msgs:
            try:
                row, text = prepare(message_from_json(m, base), max_bytes=settings.max_content_bytes,
                                    redact_secrets=settings.redact_secrets)
            except InvalidInput as exc:
                errors.append(str(exc))
                continue
            await store.insert_memory(row, text)
    finally:
        await store.close()
    return errors


def session_context(cfg: HookSettings, *, model: str, project: str) -> str | None:
    budget = max(100, min(cfg.token_budget, int(CONTEXT_MAX_CHARS / cfg.chars_per_token)))
    q = _query({"platform": CLAUDE, "model": model, "project": project, "budget": budget, "user_id": cfg.user_id})
    server = server_for(cfg)
    res = server.get_json(f"/v1/context?{q}") if server is not None else None
    if res is not None and res[0] == 200 and isinstance(res[1], dict):
        block = res[1]
    else:
        import asyncio
        block = asyncio.run(_context_direct(full_settings(cfg), model=model, project=project, budget=budget))
    if not block.get("sections"):
        return None             # an empty memory says nothing worth a place in the context
    return str(block.get("text", ""))[:CONTEXT_MAX_CHARS]


_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def _query(params: dict[str, Any]) -> str:
    """A URL query string, percent-encoded (RFC 3986): `urllib.parse` would import `re` and more on the hook's
    path to the server."""
    def enc(v: object) -> str:
        return "".join(chr(b) if b in _UNRESERVED else f"%{b:02X}" for b in str(v).encode("utf-8"))
    return "&".join(f"{enc(k)}={enc(v)}" for k, v in params.items())


async def _context_direct(settings: Settings, *, model: str, project: str, budget: int) -> dict[str, Any]:
    from gieok.app.runtime import open_service
    from gieok.core.models import Identity
    from gieok.memory.context import load_context
    async with open_service(settings, with_embedder=False) as svc:
        ident = Identity(user_id=settings.user_id, agent_platform=CLAUDE, agent_model=model.lower(),
                         project=project)
        return (await load_context(svc, ident, project=project, token_budget=budget)).to_dict()


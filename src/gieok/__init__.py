"""gieok (기억): long-term memory for AI agents, served over MCP.

What a program that embeds gieok needs, in one import:

    import gieok

    settings = gieok.load_settings(database_url="sqlite:////tmp/memory.db", user_id="alice")
    async with gieok.open_service(settings, run_librarian=True) as svc:
        mid, _ = await svc.ingest(gieok.MessageIn(content="I prefer tea to coffee.", user_id="alice"))
        hits = (await svc.search(svc.filters("alice"), "what do I drink?")).hits

Every error gieok raises on purpose is a `gieok.GieokError` (see `gieok.core.errors` for the tree).

The names are loaded on first use: every agent hook imports this package (`gieok.capture.hooks` is inside it),
and a hook must not pay for the store, the providers and the librarian it may never touch.
"""

from __future__ import annotations

# No `typing` at run time: every hook imports this package, and typing (with re under it) is a noticeable part
# of a bare interpreter start (tests/test_hook_fast.py). `TYPE_CHECKING = False` is the idiom type checkers know.
from gieok.core.version import __version__

TYPE_CHECKING = False


# name → the module that defines it. Kept in step with the TYPE_CHECKING imports below (tests/test_public_api.py).
_EXPORTS: dict[str, str] = {
    # open a service
    "open_service": "gieok.app.runtime",
    "open_runtime": "gieok.app.runtime",
    "Runtime": "gieok.app.runtime",
    "Settings": "gieok.core.settings",
    "load_settings": "gieok.core.settings",
    # talk to it
    "MemoryService": "gieok.memory.service",
    "KnowledgeResult": "gieok.memory.service",
    "MessageIn": "gieok.memory.ingest",
    "load_context": "gieok.memory.context",
    "ContextBlock": "gieok.memory.context",
    "Identity": "gieok.core.models",
    "Memory": "gieok.core.models",
    "SearchFilters": "gieok.core.models",
    "Hit": "gieok.core.models",
    "SearchOutcome": "gieok.retrieval.search",
    "UserProfile": "gieok.store.base",
    "Principal": "gieok.core.principal",
    # the error tree
    "GieokError": "gieok.core.errors",
    "InvalidInput": "gieok.core.errors",
    "MalformedAnswer": "gieok.core.errors",
    "RejectedInput": "gieok.core.errors",
    "NotFound": "gieok.core.errors",
    "AuthError": "gieok.core.errors",
    "Unauthorized": "gieok.core.errors",
    "Forbidden": "gieok.core.errors",
    "RateLimited": "gieok.core.errors",
    "ConfigError": "gieok.core.errors",
    "StoreError": "gieok.core.errors",
    "ProviderError": "gieok.core.errors",
    "TransientProviderError": "gieok.core.errors",
    "PermanentProviderError": "gieok.core.errors",
}

# Literal, so linters and type checkers read it; the test checks it against _EXPORTS.
__all__ = [
    "AuthError",
    "ConfigError",
    "ContextBlock",
    "Forbidden",
    "GieokError",
    "Hit",
    "Identity",
    "InvalidInput",
    "KnowledgeResult",
    "MalformedAnswer",
    "Memory",
    "MemoryService",
    "MessageIn",
    "NotFound",
    "PermanentProviderError",
    "Principal",
    "ProviderError",
    "RateLimited",
    "RejectedInput",
    "Runtime",
    "SearchFilters",
    "SearchOutcome",
    "Settings",
    "StoreError",
    "TransientProviderError",
    "Unauthorized",
    "UserProfile",
    "__version__",
    "load_context",
    "load_settings",
    "open_runtime",
    "open_service",
]

if TYPE_CHECKING:  # what type checkers (and tests/test_architecture.py) see; at run time __getattr__ loads them
    from gieok.app.runtime import Runtime, open_runtime, open_service
    from gieok.core.errors import (
        AuthError,
        ConfigError,
        Forbidden,
        GieokError,
        InvalidInput,
        MalformedAnswer,
        NotFound,
        PermanentProviderError,
        ProviderError,
        RateLimited,
        RejectedInput,
        StoreError,
        TransientProviderError,
        Unauthorized,
    )
    from gieok.core.models import Hit, Identity, Memory, SearchFilters
    from gieok.core.principal import Principal
    from gieok.core.settings import Settings, load_settings
    from gieok.memory.context import ContextBlock, load_context
    from gieok.memory.ingest import MessageIn
    from gieok.memory.service import KnowledgeResult, MemoryService
    from gieok.retrieval.search import SearchOutcome
    from gieok.store.base import UserProfile


def __getattr__(name: str) -> object:
    from importlib import import_module

    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'gieok' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # the next access skips this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})

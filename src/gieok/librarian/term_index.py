"""The librarian's part of the cross-lingual bridge (gieok.retrieval.bridge): each new English word of the
rows it processed is embedded once, per user, into that user's vocabulary.

Best effort: a provider failure leaves the words out for now (they are tried again when a later row holds
them, and by the next catch-up) and never holds up a row.

`catch_up` walks every stored row once in a while (the librarian's "vocabulary" job): rows stored before the
vocabulary existed (migration 012), or remembered before `remember` indexed its words, were never processed
by the cold path with it, so a Korean question could not bridge to them. Idempotent: a word already in the
vocabulary costs a look-up, not an embedding. Cost: one short text per *new* word; a memory's vocabulary grows slowly
(a LoCoMo conversation of ~600 turns holds ~1,400 such words).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any, Protocol

from gieok.core.errors import ProviderError
from gieok.core.metrics import record_provider_error
from gieok.core.models import Memory
from gieok.core.text import doc_words
from gieok.providers.embed.base import Embedder
from gieok.store.base import MemoryRows, TermVectors

log = logging.getLogger(__name__)


async def index_terms(store: TermVectors, emb: Embedder | None, rows: Sequence[Memory], *,
                      give_up: bool = False) -> int:
    """Embed the rows' English words that their users' vocabularies lack; returns how many were added. A
    provider failure is logged and skipped, or, with `give_up`, raised."""
    if emb is None or not rows:
        return 0
    per_user: dict[str, list[str]] = {}
    for m in rows:
        per_user.setdefault(m.user_id, []).extend(doc_words(m.content))
    added = 0
    for user_id, words in per_user.items():
        new = await store.missing_terms(user_id, emb.name, words)
        if not new:
            continue
        try:
            vecs = await emb.embed_documents(new)
        except ProviderError as exc:
            record_provider_error("embedder", exc)
            log.warning("vocabulary embedding failed (%d words, tried again later): %s", len(new), exc)
            if give_up:
                raise
            continue
        await store.add_term_vectors(user_id, emb.name, new, vecs)
        added += len(new)
    return added


class _CatchUpStore(TermVectors, MemoryRows, Protocol):
    pass


CATCH_UP_PAGE = 500


async def catch_up(store: _CatchUpStore, emb: Embedder | None, *, page: int = CATCH_UP_PAGE) -> dict[str, Any]:
    """Every stored row's English words in its user's vocabulary; returns what it walked and added. Stops at
    the first provider failure (the next run goes on): a provider that is down would fail every page."""
    report: dict[str, Any] = {"users": 0, "rows": 0, "words_added": 0}
    if emb is None:
        return report
    users: set[str] = set()
    batch: list[Memory] = []

    async def flush() -> None:
        report["words_added"] += await index_terms(store, emb, batch, give_up=True)
        report["rows"] += len(batch)
        batch.clear()

    try:
        async for m in store.iter_memories(None, batch=page):
            users.add(m.user_id)
            batch.append(m)
            if len(batch) >= page:
                await flush()
                await asyncio.sleep(0)      # requests are served between pages
        if batch:
            await flush()
    except ProviderError as exc:
        report["stopped"] = f"embedding failed: {exc}"
    report["users"] = len(users)
    return report

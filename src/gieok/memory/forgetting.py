"""Forgetting a memory reaches everything built from it: the summaries that quote it, the profile facts
learned from it and, when it is erased, the words of the cross-lingual vocabulary that only it held. The
service's `forget` and the librarian's hard delete both go through `forget_row`.
"""

from __future__ import annotations

from gieok.core.dates import utcnow
from gieok.core.models import SearchFilters
from gieok.core.text import doc_words, index_text, query_terms
from gieok.memory.ingest import content_hash
from gieok.memory.ports import RowProcessor
from gieok.memory.summaries import MAX_SENTENCE_CHARS, extractive_summary, project_key, summary_title
from gieok.store.base import Store

__all__ = ["drop_from_summaries", "drop_profile_sources", "drop_vocabulary", "forget_row"]


async def forget_row(store: Store, memory_id: str, user_id: str, *, hard: bool,
                     processor: RowProcessor | None = None) -> None:
    """Soft: hidden from search and context, kept for audit/undo. Hard: erased everywhere. The caller has
    checked that `memory_id` is `user_id`'s."""
    # Summaries quote their sources: forgetting a row must reach the summaries built from it.
    await drop_from_summaries(store, memory_id, processor)
    if hard:
        row = await store.get_memory(memory_id, include_deleted=True)
        await store.hard_delete(memory_id)
        await drop_profile_sources(store, user_id, memory_id)
        if row is not None:
            await drop_vocabulary(store, user_id, row.content)
        return
    await store.update_memory(memory_id, {"deleted_at": utcnow()})


async def drop_profile_sources(store: Store, user_id: str, memory_id: str) -> None:
    """Erasure reaches the profile too: a fact whose only source is the erased row goes with it."""
    prof = await store.get_user(user_id)
    if prof is None:
        return
    changed = False
    for section in (prof.core_profile, prof.sub_profile):
        for fact in list(section):
            srcs = fact.get("sources", [])
            if memory_id in srcs:
                srcs.remove(memory_id)
                changed = True
                if not srcs and fact.get("origin") != "user":
                    section.remove(fact)
    if changed:
        await store.save_user(prof)


async def drop_from_summaries(store: Store, memory_id: str, processor: RowProcessor | None = None) -> list[str]:
    """Call before forgetting `memory_id`: an extractive summary quotes its sources, so erasure must reach it.
    Each summary derived from the row is rebuilt (offline, no provider sees the rest) from its remaining
    visible sources and re-embedded (by `processor`, when one is attached), or erased when none is left.
    Returns the summaries changed."""
    changed: list[str] = []
    for link in await store.list_links(memory_id):
        if link.relation != "derived_from" or link.dst != memory_id:
            continue
        summary = await store.get_memory(link.src, include_deleted=True)
        if summary is None:
            continue
        others = [x.dst for x in await store.list_links(summary.id)
                  if x.src == summary.id and x.relation == "derived_from" and x.dst != memory_id]
        rows = await store.get_memories(others)  # soft-forgotten sources are not quoted either
        if not rows:
            await store.hard_delete(summary.id)
            changed.append(summary.id)
            continue
        n = max(1, len(summary.content.splitlines()))
        stmts = extractive_summary(rows, n) or [f"{m.role}: {' '.join(m.content.split())[:MAX_SENTENCE_CHARS]}"
                                                for m in rows[:n]]
        content = "\n".join(f"- {x}" for x in stmts)
        title = summary_title(rows, project_key(summary))
        meta = {**summary.meta, "method": "extractive", "source_count": len(rows), "rebuilt_after_forget": True}
        await store.update_memory(summary.id, {"content": content, "title": title, "content_hash":
                                               content_hash(content), "embed_status": "pending", "meta": meta},
                                  search_text=index_text(f"{title}\n{content}"))
        fresh = await store.get_memory(summary.id)
        if fresh is not None and processor is not None:
            await processor.process_now([fresh])  # replace the vector computed from the old text now
        changed.append(summary.id)
    return changed


async def drop_vocabulary(store: Store, user_id: str, content: str) -> int:
    """Erasure reaches the vocabulary (gieok.retrieval.bridge): the erased text's words that no other memory
    of the user still holds (live or archived; the full-text index answers) leave it. Returns how many went."""
    f = SearchFilters(user_id=user_id, include_archived=True)
    gone = [w for w in doc_words(content) if (terms := query_terms(w)) and not await store.keyword_search(f, terms, 1)]
    return await store.forget_terms(user_id, gone) if gone else 0

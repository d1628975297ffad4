""""We saw this before": a query holding an error (a stack trace, an error line) is fingerprinted
(`gieok.core.fingerprint`), and past rows with the same fingerprint go first, across sessions and agents,
each with the answer that followed it in its session ("fixed by …"). Whole fingerprints (type, message and
the project's frames) rank above type-and-message matches; a row that has an answer ranks above one that
does not yet (such as the question being asked right now); then the newest.

Matches are found inside the caller's filters (the store applies them in SQL), so scope holds as for
every other candidate list.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from gieok.core.fingerprint import Fingerprint, fingerprints
from gieok.core.models import Hit, Memory, SearchFilters
from gieok.store.base import Store

MAX_SAME_ERROR = 5
FIX_CHARS = 600
# The answer to a turn comes within its session, and soon: later rows answer other questions.
FIX_WINDOW = timedelta(hours=12)


def _about(fp: dict[str, Any]) -> str:
    where = f" in {fp['frames'][0]}" if fp.get("frames") else ""
    return f"{fp.get('error_type', 'error')}{where}"


async def fix_after(store: Store, f: SearchFilters, m: Memory) -> Memory | None:
    """The assistant's answer that followed `m` in its session, if any, and if the caller of `f` may see it (a
    teammate's shared question may have a private answer)."""
    if m.role == "assistant" or not m.session_id or m.created_at is None:
        return None
    rows = await store.list_memories(SearchFilters(user_id=f.user_id, viewer=f.viewer, session_id=m.session_id,
                                                   since=m.created_at, until=m.created_at + FIX_WINDOW,
                                                   roles=("assistant",)), limit=4, newest_first=False)
    return next((r for r in rows if r.id != m.id and r.user_id == m.user_id and r.created_at
                 and r.created_at > m.created_at), None)


def fix_dict(m: Memory) -> dict[str, Any]:
    text = m.content if len(m.content) <= FIX_CHARS else m.content[:FIX_CHARS] + "…"
    return {"id": m.id, "content": text, "created_at": m.created_at.isoformat() if m.created_at else None,
            "agent_platform": m.agent_platform, "agent_model": m.agent_model, "session_id": m.session_id}


async def with_same_error(store: Store, f: SearchFilters, query: str, hits: list[Hit], *, limit: int,
                          fps: list[Fingerprint] | None = None) -> list[Hit]:
    """`hits` with the rows that share the query's error fingerprint first."""
    fps = fingerprints(query) if fps is None else fps
    if not fps:
        return hits
    matches = await store.fingerprint_matches(f, [fp.digest for fp in fps], [fp.signature for fp in fps],
                                              MAX_SAME_ERROR * 2)
    if not matches:
        return hits
    rows = {m.id: m for m in await store.get_memories([x.memory_id for x in matches], viewer=f.viewer)}
    ranked = {h.memory.id: h for h in hits}
    found: list[tuple[tuple[int, int, int], Hit]] = []
    for i, x in enumerate(matches):
        m = rows.get(x.memory_id)
        if m is None:
            continue
        fix = await fix_after(store, f, m)
        before = ranked.get(m.id)
        why = f"same error as the query ({_about(x.fingerprint)})" + ("" if x.exact else ", other frames")
        hit = Hit(m, 1.0 + (before.score if before else 0.0), {**(before.parts if before else {}), "same_error": 1.0},
                  [why, *(before.recall_reason if before else [])],
                  fixed_by=fix_dict(fix) if fix is not None else None, repeats=before.repeats if before else [])
        answered = fix is not None or m.role == "assistant"
        found.append(((0 if x.exact else 1, 0 if answered else 1, i), hit))
    found.sort(key=lambda t: t[0])
    first = [h for _, h in found[:MAX_SAME_ERROR]]
    ids = {h.memory.id for h in first}
    out = (first + [h for h in hits if h.memory.id not in ids])[:limit]
    for h in out:
        # The same error pasted twice: each paste is a result of its own here (each with what followed it),
        # so neither is folded into the other as a repeat (gieok.retrieval.ranking.same_words_key).
        h.repeats = [m for m in h.repeats if m.id not in ids]
    return out

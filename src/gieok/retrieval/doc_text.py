"""What a row's vector is computed from (the librarian embeds this; search compares queries against it).

A chat turn alone is often not understandable ("Yes, it was great!"), so a captured message is embedded
together with the message before it in the same session: the vector then carries what the turn answers.
Only the *previous* turn is used: it always exists by the time the librarian runs, so a row's vector does not
depend on how far behind the librarian was. Rows outside a session (notes, files, explicit memories) are
embedded alone. The author (title) stays in front of each part, as the speaker of a chat.
"""

from __future__ import annotations

from collections.abc import Sequence

from gieok.core.models import Memory
from gieok.retrieval.scripts import text_script
from gieok.store.base import MemoryRows

# The e5 models read 512 tokens; a long previous message must not crowd out the row itself.
_CONTEXT_CHARS = 400


def embed_text(m: Memory) -> str:
    """A row on its own: its title (author or heading) and content."""
    return f"{m.title}: {m.content}" if m.title else m.content


def _with_context(m: Memory, prev: Memory | None) -> str:
    if prev is None:
        return embed_text(m)
    before = embed_text(prev)
    if len(before) > _CONTEXT_CHARS:
        before = "…" + before[-_CONTEXT_CHARS:]
    return f"{before}\n{embed_text(m)}"


async def _contexts(store: MemoryRows, rows: Sequence[Memory]) -> dict[str, Memory]:
    """The message each chat row of a session is embedded with, by row id (one query for all of `rows`)."""
    return await store.embedded_after([m.id for m in rows if m.session_id and m.source == "chat"])


async def embed_texts(store: MemoryRows, rows: Sequence[Memory]) -> list[str]:
    """The texts to embed for `rows`, each with its session's previous message as context."""
    prev = await _contexts(store, rows)
    return [_with_context(m, prev.get(m.id)) for m in rows]


async def embedded_scripts(store: MemoryRows, rows: Sequence[Memory]) -> dict[str, set[str]]:
    """The scripts (gieok.retrieval.scripts) of what each row's vector was computed from, where its context
    message adds one: a Korean user's question before an English reply puts the reply's vector in the
    Korean band of cosines, and the no-match verdict must judge it there."""
    prev = await _contexts(store, rows) if rows else {}
    out: dict[str, set[str]] = {}
    for m in rows:
        if (p := prev.get(m.id)) is not None and (ps := text_script(p.content)) != (own := text_script(m.content)):
            out[m.id] = {own, ps}
    return out

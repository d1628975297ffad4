"""Indexing what a processed row says about code: its anchors (from `meta["anchors"]`, written at capture or
by an explicit `files=[…]`) and the fingerprints of the errors in its text and in the tool output excerpts
capture kept (`meta["tool_errors"]`). Offline and cheap, so it runs for every row the librarian processes,
before the row is marked done (if it fails, the lease runs out and the batch comes back)."""

from __future__ import annotations

from collections.abc import Sequence

from gieok.core.anchors import from_meta
from gieok.core.fingerprint import Fingerprint, fingerprints
from gieok.core.models import Memory
from gieok.store.code_refs import CodeRefs


def error_text(m: Memory) -> str:
    """The text whose errors a row is fingerprinted by."""
    extra = m.meta.get("tool_errors") if isinstance(m.meta, dict) else None
    parts = [m.content] + [t for t in (extra if isinstance(extra, list) else []) if isinstance(t, str)]
    return "\n\n".join(parts)


def row_fingerprints(m: Memory) -> list[Fingerprint]:
    return fingerprints(error_text(m))


async def index_rows(store: CodeRefs, rows: Sequence[Memory]) -> int:
    """Write the anchors and fingerprints of `rows`; returns how many rows have any. A row edited since it
    was indexed is indexed again (its old anchors and fingerprints are replaced, also by none)."""
    n = 0
    for m in rows:
        anchors = from_meta(m.meta)
        fps = row_fingerprints(m)
        if anchors or fps or m.edit_count:
            await store.index_code_refs(m.id, anchors, fps)
            n += 1 if anchors or fps else 0
    return n

"""What search and context show about code: a memory's anchors and why it may be stale, and the anchors an
explicit `files=[…]` adds to a memory."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from gieok.core.anchors import MAX_ANCHORS, gather, parse_ref
from gieok.core.errors import InvalidInput
from gieok.core.models import Hit
from gieok.store.code_refs import AnchorRow, CodeRefs, file_keys

MAX_REASON_CHARS = 300
STALE_CHOICES = ("only", "exclude")


def stale_reason(rows: Sequence[AnchorRow]) -> str:
    """Why a memory may be out of date, from its anchors' last check ('' when none changed)."""
    details = [r.detail or f"{r.anchor.path} {r.status}" for r in rows if r.stale]
    text = "; ".join(details)
    return text if len(text) <= MAX_REASON_CHARS else text[:MAX_REASON_CHARS - 1] + "…"


async def annotate(store: CodeRefs, hits: Sequence[Hit]) -> None:
    """Give each hit its anchors and stale reason (one query for all of them)."""
    if not hits:
        return
    by_id = await store.anchors_for([h.memory.id for h in hits])
    for h in hits:
        rows = by_id.get(h.memory.id, [])
        h.anchors = [r.to_dict() for r in rows]
        h.stale = stale_reason(rows)


def check_filters(file: str | None, repo: str | None, stale: str | None) -> tuple[str, str, str]:
    """The `file=`, `repo=` and `stale=` search filters, checked."""
    f = file_keys(file or "")
    r = (repo or "").strip()
    for name, value in (("file", f), ("repo", r)):
        if len(value) > 1000 or "\x00" in value:
            raise InvalidInput(name, "must be a path or name of at most 1000 characters")
    s = (stale or "").strip().lower()
    if s and s not in STALE_CHOICES:
        raise InvalidInput("stale", f"{stale!r} is not one of {', '.join(STALE_CHOICES)} (only: just memories whose "
                                    "files changed since; exclude: leave them out)")
    return f, r, s


def explicit_anchors(files: Sequence[Any], repo: str | None = None) -> list[dict[str, Any]]:
    """Anchors for `files=[…]` of an explicit memory: `path`, `path:42`, `path:10-20` or `path::symbol`,
    relative to `repo` (a directory) or to this process's working directory. A file this machine cannot see
    (a remote server) is still anchored by its path: `file=` finds it, a check where it exists dates it."""
    if not isinstance(files, (list, tuple)) or not all(isinstance(f, str) and f.strip() for f in files):
        raise InvalidInput("files", "must be a list of file paths (\"billing/retry.py\", \"src/app.ts:10-20\")")
    if len(files) > MAX_ANCHORS:
        raise InvalidInput("files", f"at most {MAX_ANCHORS} files per memory")
    refs = [parse_ref(f) for f in files]
    base = os.path.abspath(os.path.expanduser(repo)) if repo else os.getcwd()
    if repo and not os.path.isdir(base):
        # Another machine's checkout (a client of a team server): anchored by root and path, to be dated by
        # `gieok anchors check --repo` where the checkout is.
        out = []
        for r in refs:
            a: dict[str, Any] = {"root": base, "remote": "", "path": file_keys(r.path), "via": "explicit"}
            if r.line_start is not None:
                a["lines"] = [r.line_start, r.line_end or r.line_start]
            if r.symbol:
                a["symbol"] = r.symbol
            out.append(a)
        return out
    return gather(refs, base)

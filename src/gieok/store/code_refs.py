"""The store's index of what memories say about code: anchors (files, with the state they were in and what the
last staleness check found) and error fingerprints. Both are derived from a row's meta and content by the
librarian, live in their own tables (`memory_anchors`, `memory_fingerprints`, migration 006 on both backends)
and go with their row: hard forget cascades, soft forget hides them with the row.

The SQL here is what both backends speak alike (placeholders passed in): the search filters `file=`,
`repo=` and `stale=` as EXISTS conditions on the anchors of the row being filtered, so they hold inside every
candidate query and never by filtering results afterwards.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from gieok.core.anchors import Anchor
from gieok.core.models import SearchFilters

if TYPE_CHECKING:  # its regular expressions are compiled on import: only callers that fingerprint pay
    from gieok.core.fingerprint import Fingerprint

# An anchor's status after a check. Only the last three make its memory "possibly stale".
ANCHOR_STATUSES = ("unchecked", "unchanged", "changed", "moved", "deleted", "unknown")
STALE_STATUSES = ("changed", "moved", "deleted")


@dataclass(slots=True)
class AnchorRow:
    """An indexed anchor of one memory, with what the last check found."""

    id: int
    memory_id: str
    anchor: Anchor
    status: str = "unchecked"
    detail: str = ""              # the reason, as shown: "billing/retry.py changed 3 commits ago (+12 −4 lines)"
    current_path: str = ""        # where a moved file is now
    checked_head: str = ""        # HEAD and the file's blob at the last check: unchanged since, nothing to redo
    checked_blob: str = ""
    checked_at: datetime | None = None
    created_at: datetime | None = None   # the memory's

    @property
    def stale(self) -> bool:
        return self.status in STALE_STATUSES

    def to_dict(self) -> dict[str, Any]:
        a = self.anchor
        d: dict[str, Any] = {"repo": a.repo, "path": a.path, "status": self.status}
        if a.line_start is not None:
            d["lines"] = [a.line_start, a.line_end or a.line_start]
        if a.symbol:
            d["symbol"] = a.symbol
        if self.detail:
            d["detail"] = self.detail
        if self.current_path:
            d["current_path"] = self.current_path
        return d


@dataclass(slots=True)
class AnchorCheck:
    """What a staleness check wrote for one anchor. `commit`/`blob`, when set, fill in what capture could
    not record (an imported turn: the commit of its time)."""

    id: int
    status: str
    detail: str = ""
    current_path: str = ""
    checked_head: str = ""
    checked_blob: str = ""
    commit: str | None = None
    blob: str | None = None


@dataclass(slots=True)
class FingerprintMatch:
    memory_id: str
    exact: bool                    # the whole fingerprint matched, not only type and message
    fingerprint: dict[str, Any] = field(default_factory=dict)


class CodeRefs(Protocol):
    async def index_code_refs(self, memory_id: str, anchors: list[Anchor], fingerprints: list[Fingerprint]) -> None:
        """Replace the row's anchors and fingerprints (the librarian indexes a row once it is processed,
        again when its content changes). Anchors start 'unchecked'."""
        ...

    async def anchors_for(self, memory_ids: list[str]) -> dict[str, list[AnchorRow]]:
        """The anchors of these rows, by row id (rows without anchors are left out)."""
        ...

    async def anchor_repos(self, user_id: str | None = None) -> list[tuple[str, str]]:
        """Distinct (repository root, remote URL) pairs anchors name, of live rows (of one user)."""
        ...

    async def anchors_in_repo(self, root: str, remote: str, *, user_id: str | None = None, after_id: int = 0,
                              limit: int = 500) -> list[AnchorRow]:
        """Anchors of live rows captured in this repository: at `root`, or in another clone with the same
        (non-empty) `remote`; in id order after `after_id`."""
        ...

    async def record_checks(self, checks: list[AnchorCheck], now: datetime) -> None:
        """Write what a staleness check found."""
        ...

    async def fingerprint_matches(self, f: SearchFilters, digests: list[str], signatures: list[str],
                                  limit: int) -> list[FingerprintMatch]:
        """Rows visible under `f` with one of these fingerprints (whole, or type and message only), whole
        matches first, then newest first."""
        ...


# --- SQL both backends run -------------------------------------------------------------------------------
def file_keys(path: str) -> str:
    """The form a `file=` filter compares: forward slashes, no leading `./`, no trailing slash."""
    p = path.strip().replace("\\", "/")
    while p.startswith("./"):
        p = p[2:]
    return p.rstrip("/")


def anchor_conditions(f: SearchFilters, ph: str, alias: str = "m") -> tuple[list[str], list[Any]]:
    """WHERE parts for `file=`, `repo=` and `stale=` on the row `alias`."""
    parts: list[str] = []
    params: list[Any] = []
    conds: list[str] = []
    if f.file:
        p = file_keys(f.file)
        # The path itself, the file a move took it to, a trailing part of it at a path boundary
        # ("retry.py", "billing/retry.py"), or root + path (an absolute path). substr from a computed start
        # rather than LIKE: LIKE differs in case sensitivity between the backends, and `_` is common in paths.
        conds.append(f"(x.path = {ph} OR x.current_path = {ph} OR "
                     f"substr('/' || x.path, length(x.path) + 2 - CAST({ph} AS INTEGER)) = {ph} OR "
                     f"x.repo_root || '/' || x.path = {ph})")
        params += [p, p, len(p) + 1, "/" + p, p]
    if f.repo:
        r = f.repo.strip().rstrip("/")
        name = r[:-4] if r.endswith(".git") else r
        conds.append(f"(x.repo_name = {ph} OR x.repo_root = {ph} OR x.repo_remote = {ph} OR x.repo_remote = {ph})")
        params += [name, r, name, name + ".git"]
    if conds:
        parts.append(f"EXISTS (SELECT 1 FROM memory_anchors x WHERE x.memory_id = {alias}.id AND "
                     f"{' AND '.join(conds)})")
    if f.stale:
        stale = ", ".join(f"'{s}'" for s in STALE_STATUSES)
        op = "EXISTS" if f.stale == "only" else "NOT EXISTS"
        parts.append(f"{op} (SELECT 1 FROM memory_anchors s WHERE s.memory_id = {alias}.id AND s.status IN ({stale}))")
    return parts, params


ANCHOR_COLS = ("a.id", "a.memory_id", "a.repo_root", "a.repo_remote", "a.path", "a.commit_id", "a.blob",
               "a.line_start", "a.line_end", "a.symbol", "a.via", "a.status", "a.detail", "a.current_path",
               "a.checked_head", "a.checked_blob", "a.checked_at", "m.created_at")
ANCHOR_SELECT = ", ".join(ANCHOR_COLS)


def anchor_row(r: tuple[Any, ...], to_time: Any = None) -> AnchorRow:
    """An AnchorRow from the ANCHOR_COLS of a query; `to_time` converts stored times (SQLite keeps text)."""
    conv = to_time or (lambda v: v)
    a = Anchor(r[4], root=r[2], remote=r[3], commit=r[5], blob=r[6], line_start=r[7], line_end=r[8], symbol=r[9],
               via=r[10])
    return AnchorRow(int(r[0]), r[1], a, r[11], r[12], r[13], r[14], r[15], conv(r[16]), conv(r[17]))


def anchor_insert_params(memory_id: str, a: Anchor) -> list[Any]:
    return [memory_id, a.root, a.remote, a.repo, a.path, a.commit, a.blob, a.line_start, a.line_end, a.symbol,
            a.via]


ANCHOR_INSERT_COLS = ("memory_id", "repo_root", "repo_remote", "repo_name", "path", "commit_id", "blob",
                      "line_start", "line_end", "symbol", "via")
FINGERPRINT_INSERT_COLS = ("memory_id", "digest", "signature", "language", "error_type", "message", "frames")


def fingerprint_insert_params(memory_id: str, fp: Fingerprint) -> list[Any]:
    return [memory_id, fp.digest, fp.signature, fp.language, fp.error_type, fp.message,
            json.dumps(list(fp.frames), ensure_ascii=False)]


def fingerprint_match(memory_id: str, digest: str, digests: list[str], row: tuple[Any, ...]) -> FingerprintMatch:
    """A match from (digest, language, error_type, message, frames JSON) of a fingerprint row."""
    return FingerprintMatch(memory_id, digest in digests, {
        "language": row[1], "error_type": row[2], "message": row[3], "frames": json.loads(row[4] or "[]")})


def first_per_memory(matches: Iterable[FingerprintMatch], limit: int) -> list[FingerprintMatch]:
    """One match per row (its best: matches come whole-first), at most `limit`."""
    out: list[FingerprintMatch] = []
    seen: set[str] = set()
    for m in matches:
        if m.memory_id not in seen:
            seen.add(m.memory_id)
            out.append(m)
            if len(out) >= limit:
                break
    return out

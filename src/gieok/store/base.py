"""The storage seam. Domain code talks to a `Store`; which database is behind it stays in the backend module.

A backend is chosen by URL scheme (`open_store`). Every backend passes the same contract suite
(`tests/test_store_contract.py`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from gieok.core.models import Memory, SearchFilters
from gieok.core.principal import Principal
from gieok.store.auth_base import AuthTables

Vector = npt.NDArray[np.float32]

# Columns a caller may change with `update_memory`; anything else is refused (ids, user, created_at …).
UPDATABLE = frozenset({
    "title", "content", "kind", "source", "importance", "is_pinned", "content_hash", "p_tags", "d_tags",
    "privacy_scope", "team", "tag_status", "embed_status", "cold_attempts", "cold_error", "lease_until",
    "view_count", "cite_count", "edit_count", "last_accessed_at", "next_review_at", "review_interval_days",
    "is_active", "archived_at", "deleted_at", "updated_at", "meta", "project",
})


# BM25 scores every matching row before it can sort; a query of very common words over a big store would
# score most of it. Both backends bound that work: above this many potential matches the most common terms are
# left out (they carry little idf weight, and rows matching only them would not reach the top anyway), and if
# the rarest term alone matches more, only its newest matches are scored. Small stores never reach the cap,
# so their ranking is exact.
MAX_SCORED_MATCHES = 2000


def rarest_terms(terms: list[list[str]], doc_freq: list[float], cap: int) -> tuple[list[list[str]], float]:
    """The terms to match, rarest first while their document frequencies add up to at most `cap` (the rarest
    always), and how many rows they may match. Terms found nowhere are dropped unless nothing is left."""
    freq = sorted(((n, i) for i, n in enumerate(doc_freq) if n > 0), key=lambda t: t[0]) or \
        [(n, i) for i, n in enumerate(doc_freq)]
    kept: list[list[str]] = []
    total = 0.0
    for n, i in freq:
        if kept and total + n > cap:
            break
        kept.append(terms[i])
        total += n
    return kept, total


def checked_changes(changes: dict[str, Any]) -> dict[str, Any]:
    """The changes of an `update_memory`, refused when they touch a column callers may not change, with
    `updated_at` stamped unless given. Shared by the backends so both refuse the same things."""
    bad = set(changes) - UPDATABLE
    if bad:
        from gieok.core.errors import StoreError
        raise StoreError(f"cannot update columns {sorted(bad)}")
    out = dict(changes)
    if "updated_at" not in out:
        from gieok.core.dates import utcnow
        out["updated_at"] = utcnow()
    return out


@dataclass(slots=True)
class NewRow:
    """A row to insert. Besides the exact duplicate key (user, session, content hash, created_at), a row with
    `retry_since` is also a duplicate of an identical row (same content, role, agent and session) created at
    or after that time: a client resending a message it never heard back about, with no time of its own."""

    memory: Memory
    search_text: str
    retry_since: datetime | None = None


@dataclass(frozen=True, slots=True)
class RequestKey:
    """A client's Idempotency-Key: the same key (per user) always gets the first request's answer.
    `fingerprint` identifies the request body, so a key reused for a different body is refused."""

    user_id: str
    key: str
    fingerprint: str


# Idempotency keys are kept this long: retries come within minutes, not days.
REQUEST_KEY_TTL_S = 24 * 3600.0


@dataclass(slots=True)
class ProjectTag:
    name: str
    alias_of: str | None = None
    description: str = ""
    created_by: str = "librarian"
    usage_count: int = 0


@dataclass(slots=True)
class UserProfile:
    """`core_profile` / `sub_profile` are lists of facts: {"key", "value", "sources": [memory ids], "at"}."""

    user_id: str
    user_name: str = ""
    core_profile: list[dict[str, Any]] = field(default_factory=list)
    sub_profile: list[dict[str, Any]] = field(default_factory=list)
    created_at: datetime | None = None
    updated_at: datetime | None = None


@dataclass(slots=True)
class Link:
    src: str
    dst: str
    relation: str
    created_at: datetime | None = None


@dataclass(slots=True)
class FeedbackRow:
    memory_id: str
    event: str
    score: float
    ts: datetime


@dataclass(slots=True)
class ColdResult:
    """What the librarian learned about one row. None leaves a field as it is."""

    id: str
    p_tags: list[str] | None = None
    d_tags: list[str] | None = None
    embedding: Vector | None = None
    embedding_model: str | None = None


class Store(AuthTables, Protocol):
    url: str

    async def open(self) -> None:
        """Connect and apply pending migrations."""
        ...

    async def close(self) -> None: ...

    async def schema_version(self) -> int: ...

    # --- memory rows -------------------------------------------------------------------------------------
    async def insert_memory(self, m: Memory, search_text: str) -> tuple[str, bool]:
        """Insert one row; returns (id, inserted). A row with the same user, session, content hash and
        created_at already present is a duplicate: its id is returned with inserted=False."""
        ...

    async def insert_batch(self, rows: list[NewRow], *, request: RequestKey | None = None) -> list[tuple[str, bool]]:
        """Insert every row in one transaction, or none of them; returns (id, inserted) per row, duplicates
        (see `NewRow`) answered with the existing id. With `request`, a key already used returns the ids its
        first request stored, and nothing is inserted; a key used for a different body raises InvalidInput."""
        ...

    async def insert_many(self, rows: list[tuple[Memory, str]], vectors: dict[str, Vector] | None = None) -> int:
        """Bulk insert in one transaction (imports, copies); duplicates are skipped. Returns rows inserted.
        `vectors` (id → embedding under that row's `embedding_model`) are stored with their rows: a copy
        between stores keeps the vectors it does not need to recompute."""
        ...

    async def get_memory(self, memory_id: str, *, include_deleted: bool = False,
                         viewer: Principal | None = None) -> Memory | None:
        """The row, if it exists (and, with a `viewer`, only if the viewer may see it: the scope is part of
        the query, so an invisible row and a missing one look the same)."""
        ...

    async def get_memories(self, ids: list[str], *, viewer: Principal | None = None) -> list[Memory]: ...

    async def update_memory(self, memory_id: str, changes: dict[str, Any], search_text: str | None = None) -> bool:
        """Change the given UPDATABLE columns (and the indexed text when given). False if no such row."""
        ...

    async def hard_delete(self, memory_id: str) -> bool:
        """Erase the row from every table and index (links, feedback, full-text, vectors), including the
        neighbour context of the messages around it (`gieok.store.context_sql`)."""
        ...

    async def refresh_context(self, ids: list[str]) -> int:
        """Recompute the neighbour context (`gieok.store.context_sql`) of these rows and of the chat messages
        next to them; returns how many rows changed. `update_memory` does it itself when the indexed text
        or `deleted_at` changes."""
        ...

    async def list_memories(self, f: SearchFilters, *, limit: int = 100, newest_first: bool = True,
                            after_id: str | None = None) -> list[Memory]: ...

    def iter_memories(self, user_id: str | None, *, include_deleted: bool = False,
                      batch: int = 500) -> AsyncIterator[Memory]:
        """Every row in id (= time) order, for export and copy."""
        ...

    # --- search ------------------------------------------------------------------------------------------
    async def keyword_search(self, f: SearchFilters, terms: list[list[str]], limit: int) -> list[tuple[Memory, float]]:
        """Full-text candidates with a BM25 score (higher is better). `terms` from gieok.core.text.query_terms."""
        ...

    async def substring_search(self, f: SearchFilters, needle: str, limit: int) -> list[Memory]:
        """Case-insensitive substring match on content (the seed's ILIKE fallback)."""
        ...

    async def vector_search(self, f: SearchFilters, model: str, query: Vector,
                            limit: int) -> list[tuple[Memory, float]]:
        """Exact-enough top-`limit` by cosine among rows embedded with `model`, after filters."""
        ...

    async def get_vectors(self, ids: list[str], model: str) -> dict[str, Vector]: ...

    async def list_due_reviews(self, user_id: str, now: datetime, limit: int) -> list[Memory]:
        """Active rows whose spaced-review date has come, earliest first."""
        ...

    async def touch(self, ids: list[str], at: datetime) -> None:
        """Count a view (view_count, last_accessed_at) for rows returned to an agent."""
        ...

    # --- cold path ---------------------------------------------------------------------------------------
    async def count_pending(self, max_attempts: int, *, need_embedding: bool = True) -> int:
        """Rows the librarian could claim now. `need_embedding=False` (no embedder configured) counts only
        rows still needing tags: an embed-pending row then waits for an embedder, not for a worker."""
        ...

    async def claim_pending(self, worker: str, limit: int, lease_seconds: float, max_attempts: int,
                            now: datetime, *, need_embedding: bool = True) -> list[Memory]:
        """Lease up to `limit` rows needing tags or an embedding, oldest first; no row is leased twice while
        its lease holds. Rows that failed `max_attempts` times are skipped until `reset_failed`.
        `need_embedding=False` leases only rows still needing tags (as `count_pending`)."""
        ...

    async def complete_cold(self, results: list[ColdResult], now: datetime) -> None:
        """Write what the librarian produced and release the leases."""
        ...

    async def fail_cold(self, memory_id: str, error: str, *, permanent: bool, max_attempts: int,
                        now: datetime) -> None: ...

    async def reset_failed(self) -> int: ...

    async def mark_for_reembed(self, model: str) -> int:
        """Rows whose embedding_model differs from `model` go back to embed_status='pending'.
        Their old vectors stay usable for search under the old model until replaced."""
        ...

    # --- users, tags, links, feedback ----------------------------------------------------------------------
    async def get_user(self, user_id: str) -> UserProfile | None: ...

    async def save_user(self, profile: UserProfile) -> None: ...

    async def list_project_tags(self) -> list[ProjectTag]: ...

    async def upsert_project_tag(self, tag: ProjectTag) -> None: ...

    async def add_link(self, src: str, dst: str, relation: str) -> None: ...

    async def list_links(self, memory_id: str, *, viewer: Principal | None = None) -> list[Link]:
        """Links from or to the row; with a `viewer`, only those whose both ends it may see."""
        ...

    async def add_feedback(self, memory_id: str, event: str, score: float, ts: datetime) -> None: ...

    async def list_feedback(self, memory_id: str) -> list[FeedbackRow]: ...

    async def stats(self, user_id: str | None) -> dict[str, Any]: ...

    async def list_user_ids(self) -> list[str]:
        """Every user with at least one memory row (deleted rows included), sorted: the librarian's
        maintenance walks users one at a time."""
        ...

    # --- librarian jobs (maintenance, consolidation) ----------------------------------------------------
    async def acquire_job(self, name: str, owner: str, *, lease_seconds: float, min_interval_s: float,
                          now: datetime) -> bool:
        """Take the lease on job `name` unless another owner holds a live lease or the job last finished
        less than `min_interval_s` ago. Several workers share one database; a job runs in one at a time, and
        a crashed owner's lease simply expires."""
        ...

    async def finish_job(self, name: str, owner: str, result: dict[str, Any], now: datetime) -> None:
        """Release `owner`'s lease on `name`, recording when it finished and what it did (JSON-able)."""
        ...

    async def list_jobs(self) -> list[dict[str, Any]]:
        """Each job's state: name, owner, lease_until, last_started_at, last_finished_at, last_result."""
        ...

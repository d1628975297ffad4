"""The storage seam. Domain code talks to a `Store`; which database is behind it stays in the backend package.

`Store` is the composition of narrow Protocols, one per concern, so a caller that needs only one of them
(the librarian's queue, say) can be typed against it:

- `Lifecycle`    open, close, schema version, self-checks (`gieok doctor`);
- `MemoryRows`   the memory rows: insert, read, change, erase, list, iterate, counts;
- `SearchIndex`  keyword, substring and vector candidates;
- `ColdQueue`    the librarian's work queue of rows still needing tags or an embedding;
- `JobLeases`    leases on the librarian's periodic jobs (one runner at a time across processes);
- `Profiles`     user profiles and project tags;
- `Relations`    links between rows and feedback on them;
- `AuthTables`   the team server's teams, API keys, audit log and erasure (`gieok.store.auth_base`).

A backend is chosen by URL scheme (`gieok.store.open_store`). Every backend passes the same contract suite
(`tests/test_store_contract.py`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol

import numpy as np
import numpy.typing as npt

from gieok.core.columns import UPDATABLE
from gieok.core.models import Memory, SearchFilters
from gieok.core.principal import Principal
from gieok.store.auth_base import AuthTables
from gieok.store.code_refs import CodeRefs

Vector = npt.NDArray[np.float32]
# Row id → (neighbour id, neighbour vector) of its session neighbours (Store.neighbour_vectors).
NeighbourVectors = dict[str, list[tuple[str, Vector]]]


@dataclass(slots=True)
class VectorSink:
    """Where a keyword or vector search also puts the `model` vectors of the rows it returns, for a caller that
    scores them next: read with the rows, in the same query, instead of a `get_vectors` round trip after it.
    `looked`: every returned row's id, whether it has such a vector or not (not embedded yet, another model)."""

    model: str
    found: dict[str, Vector] = field(default_factory=dict)
    looked: set[str] = field(default_factory=set)

    def put(self, rows: list[tuple[Memory, Any]], vectors: list[Vector | None]) -> None:
        for (m, _score), v in zip(rows, vectors, strict=True):
            self.looked.add(m.id)
            if v is not None and m.embedding_model == self.model:
                self.found[m.id] = v

__all__ = [
    "UPDATABLE",
    "Check",
    "ColdQueue",
    "ColdResult",
    "FeedbackRow",
    "JobLeases",
    "Lifecycle",
    "Link",
    "MemoryRows",
    "Profiles",
    "ProjectTag",
    "Relations",
    "SearchIndex",
    "Store",
    "UserProfile",
    "Vector",
    "VectorSink",
]


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
    # The profile step (promoting the row's facts): "ok" once done, "pending" when it must be tried again.
    profile: Literal["ok", "pending"] | None = None


@dataclass(frozen=True, slots=True)
class Check:
    """One line of `gieok doctor`: what was checked, whether it is fine, and how to fix it when not."""

    ok: bool
    what: str
    fix: str = ""


@dataclass(slots=True)
class QueueStatus:
    """The librarian's queue as operators watch it (metrics, /ready): rows waiting, rows that ran out of
    retries, and when the oldest waiting row arrived."""

    pending: int
    failed: int
    oldest_pending_at: datetime | None


class Lifecycle(Protocol):
    url: str
    SCHEMA_VERSION: int   # the newest migration this code knows; `schema_version()` is what the database has

    async def open(self) -> None:
        """Connect and apply pending migrations."""
        ...

    async def close(self) -> None: ...

    async def schema_version(self) -> int: ...

    async def check(self) -> list[Check]:
        """What only this backend knows to check on an open store (its engine and extensions, and that the
        `memory` table has every column of `gieok.core.columns`)."""
        ...


class MemoryRows(Protocol):
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

    async def has_archived(self, user_id: str, viewer: Principal | None = None) -> bool:
        """Whether the user has any archived (not forgotten) row, or with `viewer`, whether any archived row it
        may see exists (its own, its teams' `team` rows, `public` rows): index steps only (migrations 16, 17)."""
        ...

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

    async def set_search_text(self, rows: list[tuple[str, str, str]]) -> int:
        """Rewrite the indexed text of rows given as (id, the content_hash it was made from, text), where the
        content is still that (an edit in between wins) and the text differs, with the neighbour context of
        the rows around them; returns how many changed. The librarian adds to a row's own words with it
        (gieok.librarian.glosses); `updated_at` stays: the memory itself did not change."""
        ...

    async def list_memories(self, f: SearchFilters, *, limit: int = 100, newest_first: bool = True,
                            after_id: str | None = None) -> list[Memory]: ...

    async def embedded_after(self, ids: list[str]) -> dict[str, Memory]:
        """The message each of these chat rows is embedded with: its session's previous one
        (`gieok.store.context_sql.embedded_after_sql`), for the rows that have one. Internal: not scoped to a
        viewer, for the librarian and for search to know what a vector was computed from."""
        ...

    def iter_pages(self, f: SearchFilters, *, batch: int = 500) -> AsyncIterator[list[Memory]]:
        """Every row `f` lets through, oldest first (created_at, then id), in pages of at most `batch` rows.
        The position is kept as the last row's (created_at, id), so rows changed, archived or erased while a
        caller works through a page neither repeat nor make later rows be skipped. Between pages the event
        loop gets a turn: a long pass does not hold up requests."""
        ...

    def iter_memories(self, user_id: str | None, *, include_deleted: bool = False,
                      batch: int = 500) -> AsyncIterator[Memory]:
        """Every row (of one user, or of all) in insertion order, for export and copy."""
        ...

    async def list_due_reviews(self, user_id: str, now: datetime, limit: int) -> list[Memory]:
        """Active rows whose spaced-review date has come, earliest first."""
        ...

    async def touch(self, ids: list[str], at: datetime) -> None:
        """Count an appearance in search results (shown_count, last_accessed_at) for rows returned to an
        agent. Explicit opens, cites and edits have their own counters."""
        ...

    async def list_user_ids(self) -> list[str]:
        """Every user with at least one memory row (deleted rows included), sorted: the librarian's
        maintenance walks users one at a time."""
        ...

    async def stats(self, user_id: str | None) -> dict[str, Any]:
        """Counts by state (`total` counts every row, deleted ones included), platform and embedding model,
        the last librarian error and the rows processed in the last hour."""
        ...


class SearchIndex(Protocol):
    async def keyword_search(self, f: SearchFilters, terms: list[list[str]], limit: int, *,
                             rankable_only: bool = False,
                             sink: VectorSink | None = None) -> list[tuple[Memory, float]]:
        """Full-text candidates with a BM25 score (higher is better), equal scores in the order the rows were
        stored (both backends, whatever their plan). `terms` from gieok.core.text.query_terms. `rankable_only`:
        leave out the terms too common for all their matches to be ranked (gieok.store.shared.MAX_SCORED_MATCHES),
        and find nothing when every term is. `sink`: also the returned rows' vectors."""
        ...

    async def substring_search(self, f: SearchFilters, needle: str, limit: int) -> list[Memory]:
        """Case-insensitive substring match on content (the seed's ILIKE fallback)."""
        ...

    async def vector_search(self, f: SearchFilters, model: str, query: Vector, limit: int, *,
                            sink: VectorSink | None = None) -> list[tuple[Memory, float]]:
        """Exact-enough top-`limit` by cosine among rows embedded with `model`, after filters. `sink` (of the
        same model): also the returned rows' vectors."""
        ...

    async def get_vectors(self, ids: list[str], model: str) -> dict[str, Vector]: ...

    async def neighbour_vectors(self, f: SearchFilters, ids: list[str], model: str) -> NeighbourVectors:
        """For each chat row of `ids`, the ids and `model` vectors of the chat messages just before and after it
        in its session (the neighbours of gieok.store.context_sql), only those that have one and pass `f`
        (scope and filters); rows with none are left out."""
        ...


class ColdQueue(Protocol):
    # True when `wait_for_pending` is woken by new rows from any process (PostgreSQL LISTEN/NOTIFY); False
    # when it can only wait out its timeout, and the librarian should rather wait for its own wake-up event.
    wakes_on_pending: bool

    async def queue_status(self, *, need_embedding: bool = True) -> QueueStatus:
        """Pending and failed live rows and the oldest pending row's time (`need_embedding=False`: rows only
        waiting for a vector do not count, as when no embedder is configured)."""
        ...

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

    async def wait_for_pending(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for new librarian work; True if woken by it. A store whose
        `wakes_on_pending` is False waits out the timeout and returns False."""
        ...


class JobLeases(Protocol):
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


class Profiles(Protocol):
    async def get_user(self, user_id: str) -> UserProfile | None: ...

    async def save_user(self, profile: UserProfile) -> None: ...

    async def list_project_tags(self) -> list[ProjectTag]: ...

    async def upsert_project_tag(self, tag: ProjectTag) -> None: ...


class Relations(Protocol):
    async def add_link(self, src: str, dst: str, relation: str) -> None: ...

    async def remove_link(self, src: str, dst: str, relation: str) -> bool:
        """Drop one link; whether it was there."""
        ...

    async def list_links(self, memory_id: str, *, viewer: Principal | None = None) -> list[Link]:
        """Links from or to the row; with a `viewer`, only those whose both ends it may see."""
        ...

    async def add_feedback(self, memory_id: str, event: str, score: float, ts: datetime) -> None: ...

    async def list_feedback(self, memory_id: str) -> list[FeedbackRow]: ...


class TermVectors(Protocol):
    """Each user's vocabulary of English words with their vectors (gieok.retrieval.bridge): written by the
    librarian, read by search to bridge a Korean query to English memory. Erased with the user."""

    async def missing_terms(self, user_id: str, model: str, terms: list[str]) -> list[str]:
        """Those of `terms` with no vector of `model` for this user yet."""
        ...

    async def add_term_vectors(self, user_id: str, model: str, terms: list[str], vectors: Vector) -> None: ...

    async def term_matrix(self, user_id: str, model: str) -> tuple[list[str], Vector] | None:
        """(terms, L2-normalised matrix) of the user's vocabulary, None when it is empty."""
        ...

    async def forget_terms(self, user_id: str, terms: list[str]) -> int:
        """Erase these words from the user's vocabulary (every model), here and, at their next search, in
        every other process's copy; returns how many rows went. Erasing a memory erases its words that no
        other memory of the user holds (gieok.memory.forgetting)."""
        ...


class Store(Lifecycle, MemoryRows, SearchIndex, ColdQueue, JobLeases, Profiles, Relations, AuthTables, CodeRefs,
            TermVectors, Protocol):
    """Everything a backend provides."""

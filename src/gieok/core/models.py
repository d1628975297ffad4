"""Plain data that crosses module boundaries: what is ingested, what is stored, what search returns."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any, Literal

from gieok.core.principal import Principal

Role = Literal["user", "assistant", "system", "tool"]
Kind = Literal["working", "episodic", "semantic", "procedural"]
Source = Literal["chat", "tool", "file", "url", "manual"]
Status = Literal["pending", "ok", "failed"]
Privacy = Literal["private", "team", "public"]
Relation = Literal["cause_of", "derived_from", "duplicates", "contradicts", "supersedes"]
FeedbackEvent = Literal["used", "cited", "edited", "neglected", "helpful", "not_helpful"]

ROLES: tuple[str, ...] = ("user", "assistant", "system", "tool")
KINDS: tuple[str, ...] = ("working", "episodic", "semantic", "procedural")
SOURCES: tuple[str, ...] = ("chat", "tool", "file", "url", "manual")
PRIVACY: tuple[str, ...] = ("private", "team", "public")
RELATIONS: tuple[str, ...] = ("cause_of", "derived_from", "duplicates", "contradicts", "supersedes")
FEEDBACK_EVENTS: tuple[str, ...] = ("used", "cited", "edited", "neglected", "helpful", "not_helpful")


@dataclass(slots=True)
class Identity:
    """Who is speaking and where: the scope a memory is written in and read from."""

    user_id: str
    agent_platform: str = ""
    agent_model: str = ""
    is_subagent: bool = False
    subagent_model: str = ""
    subagent_role: str = ""
    session_id: str = ""
    project: str = ""


@dataclass(slots=True)
class Memory:
    """One row of the `memory` table (ARCHITECTURE §3)."""

    id: str
    user_id: str
    content: str
    role: str = "user"
    kind: str = "episodic"
    source: str = "chat"
    title: str = ""
    agent_platform: str = ""
    agent_model: str = ""
    is_subagent: bool = False
    subagent_model: str = ""
    subagent_role: str = ""
    session_id: str = ""
    project: str = ""
    p_tags: list[str] = field(default_factory=list)
    d_tags: list[str] = field(default_factory=list)
    privacy_scope: str = "private"
    team: str = ""                  # the team a `team`-scoped memory is shared with ('' otherwise)
    importance: float = 0.5
    is_pinned: bool = False
    content_hash: str = ""
    embedding_model: str = ""
    tag_status: str = "pending"
    embed_status: str = "pending"
    cold_attempts: int = 0
    cold_error: str = ""
    lease_until: datetime | None = None
    view_count: int = 0
    cite_count: int = 0
    edit_count: int = 0
    shown_count: int = 0           # appearances in search results (a view is an explicit open)
    last_accessed_at: datetime | None = None
    next_review_at: datetime | None = None
    review_interval_days: float = 0.0
    is_active: bool = True
    archived_at: datetime | None = None
    deleted_at: datetime | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for k, v in d.items():
            if isinstance(v, datetime):
                d[k] = v.isoformat()
        return d


@dataclass(slots=True)
class SearchFilters:
    """Everything search can be narrowed by. Empty means "any".

    `viewer` decides which owners' rows are candidates: None means only `user_id`'s own rows (the librarian,
    which never works across users); a principal means every row it may see (its own, its teams' `team` rows,
    `public` rows), applied inside the store's queries."""

    user_id: str
    agent_platform: str = ""
    agent_model: str = ""
    subagent_role: str = ""
    is_subagent: bool | None = None
    session_id: str = ""
    project: str = ""
    roles: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    p_tag: str = ""
    tags: tuple[str, ...] = ()
    since: datetime | None = None
    until: datetime | None = None
    include_archived: bool = False
    pinned_only: bool = False
    viewer: Principal | None = None
    # Anchored to code (gieok.store.code_refs): a file (path, trailing part of one, or absolute), a repository
    # (name, root or remote URL), and stale = "only" | "exclude" for memories whose files changed since.
    file: str = ""
    repo: str = ""
    stale: str = ""


@dataclass(slots=True)
class Hit:
    """One search result with the parts of its score and why it was returned."""

    memory: Memory
    score: float
    parts: dict[str, float] = field(default_factory=dict)
    recall_reason: list[str] = field(default_factory=list)
    anchors: list[dict[str, Any]] = field(default_factory=list)   # the files it is about, and their state
    stale: str = ""                     # why it may be out of date ("billing/retry.py changed 3 commits ago")
    fixed_by: dict[str, Any] | None = None   # the answer that followed a turn with the same error
    # Other rows of the same owner with the same words (a rule said again in later sessions, an agent's stock
    # reply), oldest first: folded into this result rather than filling the list with copies of it.
    repeats: list[Memory] = field(default_factory=list)

    def memories(self) -> list[Memory]:
        """The rows this result shows: its own and those folded into it (what a read audit must name)."""
        return [self.memory, *self.repeats]

    def to_dict(self, max_chars: int | None = None) -> dict[str, Any]:
        m = self.memory
        content = m.content if max_chars is None or len(m.content) <= max_chars else m.content[:max_chars] + "…"
        return {
            "id": m.id, "content": content, "role": m.role, "kind": m.kind, "title": m.title,
            "created_at": m.created_at.isoformat() if m.created_at else None,
            "agent_platform": m.agent_platform, "agent_model": m.agent_model,
            "subagent_role": m.subagent_role, "session_id": m.session_id, "project": m.project,
            "p_tags": m.p_tags, "d_tags": m.d_tags, "is_pinned": m.is_pinned,
            "owner": m.user_id, "privacy_scope": m.privacy_scope, **({"team": m.team} if m.team else {}),
            "archived": not m.is_active, "score": round(self.score, 4),
            "parts": {k: round(v, 4) for k, v in self.parts.items()},
            "recall_reason": self.recall_reason,
            **({"anchors": self.anchors} if self.anchors else {}),
            **({"possibly_stale": True, "stale_reason": self.stale} if self.stale else {}),
            **({"fixed_by": self.fixed_by} if self.fixed_by else {}),
            **({"repeated": self._repeated()} if self.repeats else {}),
        }

    def said_between(self) -> tuple[datetime | None, datetime | None]:
        """When the words of this result were first and last written, its folded repeats included."""
        times = sorted(m.created_at for m in self.memories() if m.created_at)
        return (times[0], times[-1]) if times else (None, None)

    def _repeated(self) -> dict[str, Any]:
        first, last = self.said_between()
        return {"times": 1 + len(self.repeats), "ids": [m.id for m in self.repeats],
                "first_at": first.isoformat() if first else None, "last_at": last.isoformat() if last else None}

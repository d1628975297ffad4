"""The memory service: what the MCP tools, the CLI and the HTTP endpoint call. It holds the store, the
embedder and the settings, and knows nothing about which database or provider is behind them."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from gieok.core.dates import describe_window, parse_date_range, parse_time, utcnow
from gieok.core.errors import Forbidden, InvalidInput, NotFound
from gieok.core.ids import is_uuid
from gieok.core.limits import MAX_TITLE_CHARS, check_label, check_query, check_str, check_tags
from gieok.core.metrics import INGESTED, SEARCH_LATENCY
from gieok.core.models import FEEDBACK_EVENTS, KINDS, PRIVACY, RELATIONS, ROLES, Hit, Identity, Memory, SearchFilters
from gieok.core.principal import Principal
from gieok.core.redact import redact
from gieok.core.settings import Settings
from gieok.core.text import index_text
from gieok.memory.code_refs import annotate, check_filters, explicit_anchors
from gieok.memory.forgetting import forget_row
from gieok.memory.ingest import MessageIn, check_team, content_hash, norm_label, prepare
from gieok.memory.ports import RowProcessor, Status
from gieok.providers.embed.base import Embedder
from gieok.retrieval.model_cosines import model_fallback_threshold, model_pair_thresholds
from gieok.retrieval.recipes import Recipe, get_recipe
from gieok.retrieval.relative_dates import bare_time, relative_window
from gieok.retrieval.search import SearchOutcome, search
from gieok.store.base import NewRow, RequestKey, Store, UserProfile

log = logging.getLogger(__name__)

@dataclass(slots=True)
class KnowledgeResult:
    """The answer of an explicit "remember this": stored always, tagged/embedded when providers allow."""

    id: str
    stored: bool = True
    tagged: Status = "pending"
    embedded: Status = "pending"
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "stored": self.stored, "tagged": self.tagged, "embedded": self.embedded,
                **({"notes": self.notes} if self.notes else {})}


def read_date_range(text: str, now: datetime | None) -> tuple[datetime | None, datetime | None]:
    """A date filter: what gieok.core.dates reads ("2026-11-01..2026-11-30", "3d", "last week"), or one relative
    time that a search query may name too ("the week before last", "last Friday", "지지난주", "3일 전"), with
    what may stand around it ("on Friday", "지난주에"). A filter and a query read a time alike."""
    try:
        return parse_date_range(text, now=now)
    except InvalidInput:
        if not isinstance(text, str) or len(text) > 100:
            raise       # what the reader refuses before reading (not text, too long) stays refused
        bare = bare_time(text)
        if bare != text:
            with contextlib.suppress(InvalidInput):
                return parse_date_range(bare, now=now)
        window = relative_window(bare, now or utcnow())
        if window is None:
            raise
        return window


def empty_window_note(f: SearchFilters, now: datetime) -> str:
    """Why a date-filtered search came back empty, so "nothing" is not read as "nothing happened then"."""
    where = describe_window(f.since, f.until)
    if f.since is not None and f.since > now:
        return f"nothing can match {where}: that window is in the future"
    return f"nothing stored {where} matches; widen date_range or drop it"


class MemoryService:
    def __init__(self, settings: Settings, store: Store, embedder: Embedder | None) -> None:
        self.settings = settings
        self.store = store
        self.embedder = embedder
        self.processor: RowProcessor | None = None  # the librarian, when one runs in this process
        self._pending_event: asyncio.Event | None = None
        self._ingested_since_wake = 0
        self._usage: set[asyncio.Task[None]] = set()   # appearance counts being written (see `search`)

    # --- identity --------------------------------------------------------------------------------------
    def default_identity(self) -> Identity:
        s = self.settings
        return Identity(user_id=s.user_id, agent_platform=norm_label(s.agent_platform),
                        agent_model=norm_label(s.agent_model), is_subagent=bool(s.subagent_role or s.subagent_model),
                        subagent_model=norm_label(s.subagent_model), subagent_role=norm_label(s.subagent_role),
                        session_id=s.session_id, project=s.project)

    def attach_wakeup(self, event: asyncio.Event) -> None:
        """The in-process librarian waits on this; ingest sets it once enough rows are pending."""
        self._pending_event = event

    def attach_processor(self, processor: RowProcessor, wakeup: asyncio.Event | None = None) -> None:
        """Wire the in-process librarian in (done by `gieok.app.runtime`): it tags and embeds explicit
        memories at once, and `wakeup` is set once enough captured rows are pending."""
        self.processor = processor
        if wakeup is not None:
            self.attach_wakeup(wakeup)

    # --- hot path --------------------------------------------------------------------------------------
    async def ingest(self, msg: MessageIn, *, now: datetime | None = None) -> tuple[str, bool]:
        """Store one raw message. Returns (id, inserted); a re-sent identical message is not stored twice."""
        return (await self.ingest_batch([msg], now=now))[0]

    def _new_row(self, msg: MessageIn, now: datetime | None) -> NewRow:
        row, text = prepare(msg, max_bytes=self.settings.max_content_bytes,
                            redact_secrets=self.settings.redact_secrets, now=now)
        window = self.settings.retry_window_s
        # A message that brings its own time is deduplicated by it exactly; one stamped here may be a retry.
        stamped = msg.created_at in (None, "") and window > 0 and row.created_at is not None
        return NewRow(row, text, row.created_at - timedelta(seconds=window) if stamped and row.created_at else None)

    async def ingest_batch(self, msgs: list[MessageIn], *, now: datetime | None = None,
                           request_key: str | None = None, fingerprint: str = "") -> list[tuple[str, bool]]:
        """Store messages all together or not at all: every one is validated before anything is written
        (an error names the item, `[2].role: …`) and they are inserted in one transaction. A retried message
        and a repeated `request_key` (Idempotency-Key) are stored once."""
        if len(msgs) > self.settings.max_batch:
            raise InvalidInput("body", f"has {len(msgs)} messages, over the limit of {self.settings.max_batch} "
                                       "(GIEOK_MAX_BATCH): send them in smaller batches")
        rows: list[NewRow] = []
        for i, msg in enumerate(msgs):
            try:
                rows.append(self._new_row(msg, now))
            except InvalidInput as exc:
                if len(msgs) == 1:
                    raise
                raise InvalidInput(f"[{i}].{exc.field}", str(exc).split(": ", 1)[-1]) from None
        key = None
        if request_key is not None:
            key = RequestKey(rows[0].memory.user_id if rows else "", request_key, fingerprint)
        out = await self.store.insert_batch(rows, request=key)
        fresh = sum(1 for _, inserted in out if inserted)
        INGESTED.labels("stored").inc(fresh)
        INGESTED.labels("duplicate").inc(len(out) - fresh)
        if fresh and self._pending_event is not None:
            self._ingested_since_wake += fresh
            if self._ingested_since_wake >= self.settings.librarian_wake_pending:
                self._ingested_since_wake = 0
                self._pending_event.set()
        return out

    async def remember(self, msg: MessageIn, *, files: list[str] | None = None,
                       repo: str | None = None) -> KnowledgeResult:
        """An explicit memory: pinned, tagged and embedded now; if a provider fails it is still stored and
        the librarian finishes it later. `files` anchor it to code (`gieok.memory.code_refs`)."""
        if files:
            msg.meta = {**msg.meta, "anchors": explicit_anchors(files, repo)}
        msg.is_pinned = True
        if msg.source == "chat":
            msg.source = "manual"
        mid, _ = await self.ingest(msg)
        result = KnowledgeResult(mid)
        row = await self.store.get_memory(mid)
        if row is None:  # pragma: no cover - just inserted
            raise NotFound(mid)
        await self._process_now(row, result)
        return result

    async def _process_now(self, row: Memory, result: KnowledgeResult) -> None:
        if self.processor is None:
            result.notes.append("no librarian attached: tags and embedding will be added by `gieok worker`")
            return
        statuses = await self.processor.process_now([row])
        tagged, embedded, notes = statuses.get(row.id, ("pending", "pending", []))
        result.tagged, result.embedded = tagged, embedded
        result.notes.extend(notes)

    # --- reading ---------------------------------------------------------------------------------------
    def filters(self, user_id: str, *, query_scope: Identity | None = None, role: str | None = None,
                kind: str | None = None, p_tag: str | None = None, tags: list[str] | None = None,
                date_range: str | None = None, include_archived: bool = False, platform: str | None = None,
                model: str | None = None, subagent_role: str | None = None, session_id: str | None = None,
                project: str | None = None, file: str | None = None, repo: str | None = None,
                stale: str | None = None, now: datetime | None = None,
                viewer: Principal | None = None) -> SearchFilters:
        p_tag, platform, model, subagent_role, session_id, project = (
            check_label(name, v) if v is not None else None
            for name, v in (("p_tag", p_tag), ("platform", platform), ("model", model),
                            ("subagent_role", subagent_role), ("session_id", session_id), ("project", project)))
        tags = check_tags("tags", tags)
        role = check_label("role", role) if role is not None else None
        kind = check_label("kind", kind) if kind is not None else None
        roles: tuple[str, ...] = ()
        if role:
            roles = tuple(norm_label(r) for r in role.split(",") if r.strip())
            for r in roles:
                if r not in ROLES:
                    raise InvalidInput("role", f"{r!r} is not one of {', '.join(ROLES)}")
        kinds: tuple[str, ...] = ()
        if kind:
            kinds = tuple(norm_label(k) for k in kind.split(",") if k.strip())
            for k in kinds:
                if k not in KINDS:
                    raise InvalidInput("kind", f"{k!r} is not one of {', '.join(KINDS)}")
        since, until = read_date_range(date_range, now) if date_range else (None, None)
        file_f, repo_f, stale_f = check_filters(file, repo, stale)
        return SearchFilters(
            user_id=user_id, agent_platform=norm_label(platform), agent_model=norm_label(model),
            subagent_role=norm_label(subagent_role), session_id=session_id or "", project=project or "",
            roles=roles, kinds=kinds, p_tag=norm_label(p_tag), tags=tuple(norm_label(t) for t in tags or () if t),
            since=since, until=until, include_archived=include_archived, viewer=viewer, file=file_f, repo=repo_f,
            stale=stale_f)

    async def search(self, f: SearchFilters, query: str | None, *, limit: int = 10, recipe: str | Recipe | None = None,
                     now: datetime | None = None, count_view: bool = True) -> SearchOutcome:
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 200:
            raise InvalidInput("limit", f"{limit!r} is out of range: give a whole number from 1 to 200 "
                                        "(10 when left out)")
        query = check_query(query)
        rec = recipe if isinstance(recipe, Recipe) else get_recipe(recipe or self.settings.search_recipe)
        now = now or utcnow()
        t0 = time.perf_counter()
        outcome = await search(self.store, self.embedder, f, query or "", limit=limit, recipe=rec, now=now,
                               fallback_threshold=self.fallback_threshold(),
                               pair_thresholds=self.pair_thresholds())
        SEARCH_LATENCY.labels(outcome.mode).observe(time.perf_counter() - t0)
        if not outcome.hits and (f.since or f.until):
            outcome.notes.append(empty_window_note(f, now))
        # The appearance count is a write the answer does not depend on: it is written in the background
        # (on PostgreSQL one more round trip, ~7 ms under load, that the caller no longer waits for). A count
        # that fails is logged, never the search's failure; `settle` waits for those in flight.
        if count_view and outcome.hits:
            task = asyncio.ensure_future(self._count_shown([h.memory.id for h in outcome.hits], now))
            self._usage.add(task)
            task.add_done_callback(self._usage.discard)
        await annotate(self.store, outcome.hits)
        return outcome

    async def _count_shown(self, ids: list[str], now: datetime) -> None:
        try:
            await self.store.touch(ids, now)
        except Exception as exc:   # a usage signal, not a memory: losing one count is no one's loss
            log.warning("could not count %d search results as shown: %s", len(ids), exc)

    async def settle(self) -> None:
        """Wait until the appearance counts of finished searches are written (before closing the store)."""
        while self._usage:
            await asyncio.gather(*list(self._usage), return_exceptions=True)

    def pair_thresholds(self) -> dict[tuple[str, str], float]:
        """Per script pair thresholds of the model; none when the setting fixes one threshold for all."""
        if self.settings.search_fallback_threshold is not None or self.embedder is None:
            return {}
        return model_pair_thresholds(self.embedder.name)

    def fallback_threshold(self) -> float:
        if self.settings.search_fallback_threshold is not None:
            return self.settings.search_fallback_threshold
        return model_fallback_threshold(self.embedder.name) if self.embedder is not None else 0.0

    async def get(self, memory_id: str, user_id: str, *, viewer: Principal | None = None,
                  include_deleted: bool = False) -> Memory:
        """A memory the caller may see (its own, its teams', or public); the scope is part of the query, so
        a memory of someone else that is not shared is simply not found."""
        v = viewer or Principal(user_id)
        if not isinstance(memory_id, str) or not is_uuid(memory_id.strip().lower()):
            raise NotFound(f"no memory {str(memory_id)[:80]!r} for user {v.user_id!r}: memory ids are UUIDs, as "
                           "search results give them")
        memory_id = memory_id.strip().lower()
        m = await self.store.get_memory(memory_id, viewer=v, include_deleted=include_deleted)
        if m is None:
            raise NotFound(f"no memory {memory_id!r} for user {v.user_id!r}")
        return m

    async def own(self, memory_id: str, user_id: str, *, viewer: Principal | None = None,
                  include_deleted: bool = False) -> Memory:
        """A memory the caller may change: visible, and its own (sharing never hands over ownership)."""
        m = await self.get(memory_id, user_id, viewer=viewer, include_deleted=include_deleted)
        if m.user_id != (viewer.user_id if viewer else user_id):
            raise Forbidden(f"memory {memory_id} belongs to another user and is shared with you read-only; only "
                            "its owner can change it")
        return m

    @staticmethod
    def check_scope(viewer: Principal, privacy: str | None, team: str | None) -> tuple[str, str] | None:
        """The (privacy_scope, team) a write asks for, checked: a team memory goes only to a team the writer
        belongs to. None when the write does not set a scope."""
        if privacy is None and not team:
            return None
        p = norm_label(privacy or ("team" if team else "private"))
        if p not in PRIVACY:
            raise InvalidInput("privacy_scope", f"{privacy!r} is not one of {', '.join(PRIVACY)}")
        t = check_team(p, team)
        if t and t not in viewer.teams:
            raise Forbidden(f"team: {viewer.user_id!r} is not a member of team {t!r} (an admin adds members with "
                            f"`gieok teams add {t} --user {viewer.user_id}`)")
        return p, t

    async def open(self, memory_id: str, user_id: str, *, now: datetime | None = None,
                   viewer: Principal | None = None) -> Memory:
        """Someone asked for this memory by id (`gieok show`, the `memory://` resource): that is a view. A mere
        appearance in search results is counted apart and weighs far less (`ranking.raw_usage`)."""
        m = await self.get(memory_id, user_id, viewer=viewer)
        m.view_count += 1
        m.last_accessed_at = now or utcnow()
        # updated_at stays: reading a memory does not change it.
        await self.store.update_memory(memory_id, {"view_count": m.view_count, "last_accessed_at": m.last_accessed_at,
                                                   "updated_at": m.updated_at})
        return m

    async def newest(self, f: SearchFilters, *, limit: int = 20, after_id: str | None = None) -> list[Memory]:
        """Newest first; `after_id` (the last id of the previous page) gives the next page."""
        if not 1 <= limit <= 1000:
            raise InvalidInput("limit", f"{limit} is outside 1..1000")
        return await self.store.list_memories(f, limit=limit, after_id=after_id)

    # --- changing --------------------------------------------------------------------------------------
    async def update(self, memory_id: str, user_id: str, *, content: str | None = None,
                     importance: float | None = None, kind: str | None = None, tags: list[str] | None = None,
                     title: str | None = None, privacy_scope: str | None = None, team: str | None = None,
                     viewer: Principal | None = None) -> Memory:
        """Change the caller's own memory; `privacy_scope`/`team` share it (or make it private again)."""
        m = await self.own(memory_id, user_id, viewer=viewer)
        changes: dict[str, Any] = {}
        scope = self.check_scope(viewer or Principal(user_id), privacy_scope, team)
        if scope is not None:
            changes.update(privacy_scope=scope[0], team=scope[1])
        text = None
        if content is not None:
            probe, text = prepare(MessageIn(content=content, user_id=user_id, title=title or m.title),
                                  max_bytes=self.settings.max_content_bytes,
                                  redact_secrets=self.settings.redact_secrets)
            changes.update(content=probe.content, content_hash=content_hash(probe.content),
                           edit_count=m.edit_count + 1, embed_status="pending", tag_status="pending")
        if title is not None:
            title = check_str("title", title, max_chars=MAX_TITLE_CHARS, strip_nul=True).strip()
            if self.settings.redact_secrets:
                title = redact(title)[0]
            changes["title"] = title
            if text is None:
                text = index_text(f"{title}\n{m.content}")
                # The title is part of what the row's vector is computed from ("Title: content"), and the text
                # above has lost the glosses the librarian added: both are redone, as for a content edit.
                changes.update(embed_status="pending", tag_status="pending")
        if importance is not None:
            if not 0 <= importance <= 1:
                raise InvalidInput("importance", f"{importance} is outside 0..1")
            changes["importance"] = importance
        if kind is not None:
            if norm_label(kind) not in KINDS:
                raise InvalidInput("kind", f"{kind!r} is not one of {', '.join(KINDS)}")
            changes["kind"] = norm_label(kind)
        if tags is not None:
            clean = [norm_label(t) for t in check_tags("tags", tags) if t.strip()]
            changes["d_tags"] = [redact(t)[0] for t in clean] if self.settings.redact_secrets else clean
        if not changes:
            raise InvalidInput("content", "nothing to update: pass content, importance, kind, title, tags or "
                                          "privacy_scope")
        await self.store.update_memory(memory_id, changes, search_text=text)
        updated = await self.get(memory_id, user_id, viewer=viewer)
        if (content is not None or title is not None) and self.processor is not None:
            await self.processor.process_now([updated])
            updated = await self.get(memory_id, user_id, viewer=viewer)
        return updated

    async def set_pinned(self, memory_id: str, user_id: str, pinned: bool, *,
                         viewer: Principal | None = None) -> Memory:
        await self.own(memory_id, user_id, viewer=viewer)
        changes: dict[str, Any] = {"is_pinned": pinned}
        if pinned:  # a pinned memory is never archived: bring it back if it was
            changes.update(is_active=True, archived_at=None)
        await self.store.update_memory(memory_id, changes)
        return await self.get(memory_id, user_id, viewer=viewer)

    async def forget(self, memory_id: str, user_id: str, *, hard: bool = False,
                     viewer: Principal | None = None) -> dict[str, Any]:
        """Soft: hidden from search and context, kept for audit/undo. Hard: erased everywhere, whether the row
        is live, archived or already soft-forgotten (the right to erasure)."""
        memory_id = (await self.own(memory_id, user_id, viewer=viewer, include_deleted=hard)).id
        await forget_row(self.store, memory_id, user_id, hard=hard, processor=self.processor)
        return {"id": memory_id, "forgotten": "hard" if hard else "soft"}

    async def link(self, src: str, dst: str, relation: str, user_id: str, *,
                   viewer: Principal | None = None) -> dict[str, str]:
        rel = norm_label(relation)
        if rel not in RELATIONS:
            raise InvalidInput("relation", f"{relation!r} is not one of {', '.join(RELATIONS)}")
        # Links join the caller's own memories only: a link is a statement about both ends.
        await self.own(src, user_id, viewer=viewer)
        await self.own(dst, user_id, viewer=viewer)
        await self.store.add_link(src, dst, rel)
        return {"src": src, "dst": dst, "relation": rel}

    async def feedback(self, memory_id: str, user_id: str, event: str, score: float | None = None, *,
                       viewer: Principal | None = None) -> dict[str, Any]:
        """Feedback on a memory the caller may see; only the owner's feedback moves its importance."""
        ev = norm_label(event)
        if ev not in FEEDBACK_EVENTS:
            raise InvalidInput("event", f"{event!r} is not one of {', '.join(FEEDBACK_EVENTS)}")
        m = await self.get(memory_id, user_id, viewer=viewer)
        sc = score if score is not None else {"helpful": 1.0, "not_helpful": -1.0, "neglected": -0.5}.get(ev, 0.5)
        await self.store.add_feedback(memory_id, ev, sc, utcnow())
        if ev in ("helpful", "not_helpful") and m.user_id == (viewer.user_id if viewer else user_id):
            m = await self.get(memory_id, user_id, viewer=viewer)
            delta = 0.05 if ev == "helpful" else -0.05
            await self.store.update_memory(memory_id, {"importance": min(1.0, max(0.0, m.importance + delta))})
        return {"id": memory_id, "event": ev, "score": sc}

    # --- profile ---------------------------------------------------------------------------------------
    async def profile(self, user_id: str) -> UserProfile:
        return await self.store.get_user(user_id) or UserProfile(user_id=user_id)

    async def profile_edit(self, user_id: str, section: Literal["core_profile", "sub_profile"], action: str,
                           content: str | None, key: str | None = None) -> UserProfile:
        prof = await self.profile(user_id)
        facts = getattr(prof, section)
        if action in ("add", "update"):
            if not content or not content.strip():
                raise InvalidInput("content", f"is required to {action} a {section} fact")
            content = check_str("content", content, max_chars=2000, strip_nul=True)
            if self.settings.redact_secrets:
                content = redact(content)[0]
            k = norm_label(check_label("key", key, 100)) if key else "note"
            if action == "update" and key:
                facts[:] = [f for f in facts if f.get("key") != k]
            facts.append({"key": k, "value": content.strip(), "sources": [], "origin": "user",
                          "at": utcnow().isoformat()})
        elif action == "remove":
            if not content and not key:
                raise InvalidInput("content", f"say which {section} fact to remove (its text or key)")
            before = len(facts)
            facts[:] = [f for f in facts if not ((key and f.get("key") == norm_label(key)) or
                                                 (content and content.strip().lower() in f.get("value", "").lower()))]
            if len(facts) == before:
                raise NotFound(f"no {section} fact matches {content or key!r}")
        else:
            raise InvalidInput("action", f"{action!r} is not valid for a profile: use add, update or remove")
        await self.store.save_user(prof)
        return prof

    # --- time helpers ----------------------------------------------------------------------------------
    @staticmethod
    def parse_when(value: str | None) -> datetime | None:
        return parse_time(value) if value else None

    async def recent(self, f: SearchFilters, days: float, limit: int, now: datetime) -> list[Memory]:
        f.since = now - timedelta(days=days)
        return await self.store.list_memories(f, limit=limit)

    async def due_reviews(self, user_id: str, now: datetime, limit: int = 5) -> list[Memory]:
        return await self.store.list_due_reviews(user_id, now, limit)

    def hits(self, rows: list[Memory], reason: str) -> list[Hit]:
        return [Hit(m, 1.0, {}, [reason]) for m in rows]

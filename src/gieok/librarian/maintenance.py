"""Forgetting, spaced review and tag hygiene (ARCHITECTURE §7), run by the librarian now and then.

Forgetting. `ForgetScore = 0.35·(1−recency) + 0.25·(1−usage) + 0.20·dup_ratio − 0.15·importance − 0.30·pinned`
- recency and importance are retrieval's own formulas (`gieok.retrieval.ranking`), so what ranks low is what
  fades; usage is `u/(1+u)` of retrieval's raw usage: a fixed scale, because batch min-max would make a row's
  fate depend on which other rows happened to share its batch.
- dup_ratio is 1 when the row duplicates another (a `duplicates` link from it, or a newer/pinned/semantic
  active row whose vector is ≥ 0.95 cosine and whose words are ≥ 0.8 alike — recorded as a `duplicates`
  link), 0.5 when its gist already lives in a semantic memory (`meta.consolidated_into`), else 0. It is
  computed only when it could change the decision, since the vector look-up is the one costly step.
- Soft: score ≥ 0.6 and age ≥ TTL_soft(kind) → `is_active=false, archived_at` (still found with
  include_archived). Hard: score ≥ 0.8 and age ≥ TTL_hard(kind), only with GIEOK_HARD_DELETE, through the
  same erasure as `forget(hard=true)` (every table, index and profile fact learned only from it).
  Semantic and procedural rows have no TTL; pinned rows are exempt.
- Scores are compared at 3 decimals: the hard bar (0.8) is exactly the formula's supremum (0.35 + 0.25 + 0.20
  with importance 0), which recency only approaches, so an exact float comparison could never reach it.
- What the weights imply for never-used rows: an episodic row of default importance (0.5) tops out at 0.525,
  so it is archived only as a duplicate (from ~6 weeks) or once consolidated (~4 months); a working row of
  importance 0 is archived after ~20 days, and hard-deleted (when enabled) after ~20 days only if it is also
  a duplicate; an unimportant duplicate episodic row reaches the hard bar after ~285 days.

Review. Rows that are knowledge rather than transcript enter the schedule: semantic and procedural rows and
pinned rows (explicit "remember this"). First review 1 day after creation (or now, if that has passed), then
6 days, then `ceil(prev·(1 + 0.5·importance + 0.3·usage))`. A due row moves on once it was reviewed — viewed
since it came due (search, recall, feedback) — or after it has been offered in context for a day, so one
ignored item cannot hold the five review slots of `load_context` forever.

Tags. Project tags that are clearly the same name (`same_tag`) are merged: the less-used becomes `alias_of`
the other and rows' p_tags are rewritten. `merge_tags` is the same operation for `gieok tags merge A B`.

All work is per user, through the Store protocol, in pages of `PAGE` rows, yielding to the event loop between
pages so requests are served meanwhile.
"""

from __future__ import annotations

import asyncio
import difflib
import math
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any

from gieok.core.dates import utcnow
from gieok.core.errors import InvalidInput, NotFound
from gieok.core.models import Memory, SearchFilters
from gieok.core.settings import Settings
from gieok.core.tags import normalize_tag
from gieok.librarian.tagger import same_tag
from gieok.memory.forgetting import forget_row
from gieok.memory.ports import RowProcessor
from gieok.providers.embed.base import Embedder
from gieok.retrieval.ranking import importance, raw_usage, recency
from gieok.retrieval.recipes import Recipe
from gieok.store.base import ProjectTag, Store, Vector

__all__ = [
    "HARD_THRESHOLD",
    "SOFT_THRESHOLD",
    "TTL_HARD_DAYS",
    "TTL_SOFT_DAYS",
    "MaintenanceReport",
    "forget_score",
    "merge_tags",
    "next_interval",
    "run_maintenance",
    "usage_level",
]

TTL_SOFT_DAYS: dict[str, float] = {"working": 2.0, "episodic": 30.0}  # semantic, procedural: never
TTL_HARD_DAYS: dict[str, float] = {"working": 7.0, "episodic": 180.0}
SOFT_THRESHOLD = 0.6
HARD_THRESHOLD = 0.8
SCORE_DECIMALS = 3
W_RECENCY, W_USAGE, W_DUP, W_IMPORTANCE, W_PINNED = 0.35, 0.25, 0.20, 0.15, 0.30
NEAR_DUPLICATE_COS = 0.95
# And their words at least this alike (difflib's ratio over the first NEAR_DUPLICATE_CHARS characters): a rule
# restated with a typo or a full stop is a duplicate, a reply beside what it replies to is not (`same_words`).
NEAR_DUPLICATE_TEXT = 0.8
NEAR_DUPLICATE_CHARS = 2000
# Set on an archived row once `repair_pass` has looked at it.
DUPLICATE_WORDS_CHECKED = "duplicate_words_checked"
CONSOLIDATED_DUP = 0.5
REVIEW_FIRST_DAYS = 1
REVIEW_SECOND_DAYS = 6
REVIEW_GRACE = timedelta(days=1)
REVIEW_KINDS = ("semantic", "procedural")
PAGE = 500
MAX_REVIEW_PAGES = 20
_RECIPE = Recipe("forget")  # only its half-lives are used


@dataclass(slots=True)
class MaintenanceReport:
    users: int = 0
    scanned: int = 0
    archived: int = 0
    hard_deleted: int = 0
    duplicates_linked: int = 0
    restored: int = 0           # archived as a duplicate of a row whose words it did not share (`repair_pass`)
    review_enrolled: int = 0
    review_advanced: int = 0
    tags_merged: int = 0
    rows_retagged: int = 0
    seconds: float = 0.0
    archived_ids: list[str] = field(default_factory=list)  # the first 100, for logs and tests

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def usage_level(m: Memory) -> float:
    u = raw_usage(m)
    return u / (1.0 + u)


def forget_score(m: Memory, now: datetime, dup_ratio: float = 0.0) -> float:
    return (W_RECENCY * (1.0 - recency(m, now, _RECIPE)) + W_USAGE * (1.0 - usage_level(m)) + W_DUP * dup_ratio
            - W_IMPORTANCE * importance(m) - W_PINNED * (1.0 if m.is_pinned else 0.0))


def next_interval(m: Memory) -> float:
    """The review interval after this one, in days."""
    prev = m.review_interval_days
    if prev < REVIEW_FIRST_DAYS:
        return float(REVIEW_FIRST_DAYS)
    if prev < REVIEW_SECOND_DAYS:
        return float(REVIEW_SECOND_DAYS)
    return float(math.ceil(prev * (1.0 + 0.5 * importance(m) + 0.3 * usage_level(m))))


def same_words(a: Memory, b: Memory) -> bool:
    """Whether two rows say the same thing in words (NEAR_DUPLICATE_TEXT), not only in their vectors. A chat
    message is embedded with the message before it, so session neighbours' vectors share that context: "고마워,
    배포는 내일 오전에 할게" stood at cosine ≥ 0.95 to the answer it thanked for, which was archived as its
    duplicate. On LoCoMo dev conversation 30, sixty days after its last session, the vectors alone archived 241 of
    its 369 turns and 60 of the 75 that questions need."""
    x, y = (" ".join(m.content.casefold().split())[:NEAR_DUPLICATE_CHARS] for m in (a, b))
    sm = difflib.SequenceMatcher(None, x, y, autojunk=False)
    return sm.quick_ratio() >= NEAR_DUPLICATE_TEXT and sm.ratio() >= NEAR_DUPLICATE_TEXT


def _age_days(m: Memory, now: datetime) -> float:
    return (now - (m.created_at or now)).total_seconds() / 86400.0


class _Maintainer:
    def __init__(self, store: Store, settings: Settings, embedder: Embedder | None, processor: RowProcessor | None,
                 now: datetime, report: MaintenanceReport) -> None:
        self.store = store
        self.processor = processor
        self.now = now
        self.report = report
        self.hard = settings.hard_delete
        self.model = embedder.name if embedder is not None else None

    # --- forgetting ------------------------------------------------------------------------------------
    async def repair_pass(self, user_id: str) -> None:
        """Chat messages archived as near duplicates by their vectors alone, before `same_words`, come back: each
        archived row is looked at once (`meta.duplicate_words_checked`), its `duplicates` links to chat messages
        whose words it does not share are dropped, and with none left it is active again (the forget pass then
        judges it anew). A link from or to a row outside any session (a note) may be someone's own ("this
        duplicates that", `link_memories`): kept. On LoCoMo dev conversation 30, archived by the old rule sixty
        days after its last session (241 rows, 60 of the 75 turns its questions need), this brought back all 241."""
        if not await self.store.has_archived(user_id):
            return      # one index step, rather than reading every row of the user's each run
        f = SearchFilters(user_id=user_id, include_archived=True)
        async for page in self.store.iter_pages(f, batch=PAGE):
            for m in page:
                if m.is_active or m.meta.get(DUPLICATE_WORDS_CHECKED):
                    continue
                links = [x for x in await self.store.list_links(m.id) if x.src == m.id and x.relation == "duplicates"]
                twins = {t.id: t for t in await self.store.get_memories([x.dst for x in links])}
                unlike = [x for x in links if (t := twins.get(x.dst)) is not None and m.session_id and t.session_id
                          and not same_words(m, t)]
                for x in unlike:
                    await self.store.remove_link(x.src, x.dst, x.relation)
                changes: dict[str, Any] = {"meta": {**m.meta, DUPLICATE_WORDS_CHECKED: True}}
                if unlike and len(unlike) == len(links):
                    changes.update(is_active=True, archived_at=None)
                    self.report.restored += 1
                await self.store.update_memory(m.id, changes)
            await asyncio.sleep(0)

    async def forget_pass(self, user_id: str) -> None:
        for kind, soft_days in TTL_SOFT_DAYS.items():
            # Archived rows matter only to the hard-delete step.
            f = SearchFilters(user_id=user_id, kinds=(kind,), until=self.now - timedelta(days=soft_days),
                              include_archived=self.hard)
            async for page in self.store.iter_pages(f, batch=PAGE):
                rows = [m for m in page if not m.is_pinned]
                vecs: dict[str, Vector] = {}
                if self.model is not None and rows:
                    vecs = await self.store.get_vectors([m.id for m in rows], self.model)
                for m in rows:
                    await self._judge(m, vecs.get(m.id))

    async def _judge(self, m: Memory, vec: Vector | None) -> None:
        self.report.scanned += 1
        hard_ok = self.hard and _age_days(m, self.now) >= TTL_HARD_DAYS.get(m.kind, math.inf)
        if not m.is_active and not hard_ok:
            return
        score = forget_score(m, self.now)
        # The lowest bar this row could clear; the duplicate look-up only runs when it could tip the row over.
        bar = SOFT_THRESHOLD if m.is_active else HARD_THRESHOLD
        if round(score + W_DUP, SCORE_DECIMALS) >= bar:
            score += W_DUP * await self._dup_ratio(m, vec)
        score = round(score, SCORE_DECIMALS)
        if hard_ok and score >= HARD_THRESHOLD:
            # The same erasure as `forget(hard=true)`: summaries quoting it and facts learned only from it go too.
            await forget_row(self.store, m.id, m.user_id, hard=True, processor=self.processor)
            self.report.hard_deleted += 1
        elif m.is_active and score >= SOFT_THRESHOLD:
            await self.store.update_memory(m.id, {"is_active": False, "archived_at": self.now})
            self.report.archived += 1
            if len(self.report.archived_ids) < 100:
                self.report.archived_ids.append(m.id)

    async def _dup_ratio(self, m: Memory, vec: Vector | None) -> float:
        if any(link.src == m.id and link.relation == "duplicates" for link in await self.store.list_links(m.id)):
            return 1.0
        if vec is not None and self.model is not None:
            hits = await self.store.vector_search(SearchFilters(user_id=m.user_id), self.model, vec, 4)
            created = m.created_at or self.now
            for other, cos in hits:
                keeper = (other.created_at or self.now) > created or other.is_pinned or other.kind in REVIEW_KINDS
                if other.id != m.id and cos >= NEAR_DUPLICATE_COS and keeper and same_words(m, other):
                    # The survivor is the newer (or more durable) twin; the link says why this one faded.
                    await self.store.add_link(m.id, other.id, "duplicates")
                    self.report.duplicates_linked += 1
                    return 1.0
        return CONSOLIDATED_DUP if m.meta.get("consolidated_into") else 0.0

    # --- review ----------------------------------------------------------------------------------------
    async def review_pass(self, user_id: str) -> None:
        for f in (SearchFilters(user_id=user_id, kinds=REVIEW_KINDS), SearchFilters(user_id=user_id, pinned_only=True)):
            async for page in self.store.iter_pages(f, batch=PAGE):
                for m in page:
                    if m.next_review_at is None:
                        first = max((m.created_at or self.now) + timedelta(days=REVIEW_FIRST_DAYS), self.now)
                        await self.store.update_memory(m.id, {"next_review_at": first,
                                                              "review_interval_days": float(REVIEW_FIRST_DAYS)})
                        self.report.review_enrolled += 1
        for _ in range(MAX_REVIEW_PAGES):
            due = await self.store.list_due_reviews(user_id, self.now, PAGE)
            moved = 0
            for m in due:
                came_due = m.next_review_at or self.now
                seen = m.last_accessed_at is not None and m.last_accessed_at >= came_due
                if seen or self.now - came_due >= REVIEW_GRACE:
                    days = next_interval(m)
                    await self.store.update_memory(m.id, {"next_review_at": self.now + timedelta(days=days),
                                                          "review_interval_days": days})
                    moved += 1
            self.report.review_advanced += moved
            # Rows left due are waiting to be offered; the next page would only show them again.
            if moved == 0 or len(due) < PAGE:
                break
            await asyncio.sleep(0)


# --- tags ------------------------------------------------------------------------------------------------
def _root(tags: dict[str, ProjectTag], name: str) -> str:
    seen: set[str] = set()
    while name in tags and tags[name].alias_of and name not in seen:
        seen.add(name)
        name = tags[name].alias_of or name
    return name


async def merge_tags(store: Store, alias: str, canonical: str) -> dict[str, Any]:
    """Make project tag `alias` an alias of `canonical` (resolved to its own canonical tag) and rewrite every
    row's p_tags. Tags that were aliases of `alias` follow it."""
    a, b = normalize_tag(alias), normalize_tag(canonical)
    if not a or not b:
        raise InvalidInput("tag", "both tags must be non-empty names")
    tags = {t.name: t for t in await store.list_project_tags()}
    if a not in tags:
        raise NotFound(f"no project tag {a!r}; `gieok tags list` shows the existing ones")
    root = _root(tags, b)
    if root == a:
        raise InvalidInput("tag", f"{b!r} is already an alias of {a!r}: merge them the other way round "
                                  f"(`gieok tags merge {b} {a}`)")
    target = tags.get(root) or ProjectTag(root, created_by="user")
    source = tags[a]
    target.usage_count += source.usage_count
    await store.upsert_project_tag(target)  # first: alias_of references it
    source.alias_of, source.usage_count = root, 0
    await store.upsert_project_tag(source)
    for t in tags.values():
        if t.alias_of == a and t.name != a:
            t.alias_of = root
            await store.upsert_project_tag(t)
    return {"alias": a, "canonical": root, "rows_rewritten": await _rewrite_rows(store, a, root)}


async def _rewrite_rows(store: Store, old: str, new: str) -> int:
    n = 0
    for user_id in await store.list_user_ids():
        f = SearchFilters(user_id=user_id, p_tag=old, include_archived=True)
        async for page in store.iter_pages(f, batch=PAGE):
            for m in page:
                if old in m.p_tags:
                    tags = list(dict.fromkeys(new if t == old else t for t in m.p_tags))
                    await store.update_memory(m.id, {"p_tags": tags})
                    n += 1
    return n


async def _merge_clear_synonyms(store: Store, report: MaintenanceReport) -> None:
    canonical = [t for t in await store.list_project_tags() if not t.alias_of]
    gone: set[str] = set()
    for i, x in enumerate(canonical):
        for y in canonical[i + 1:]:
            if x.name in gone or y.name in gone or not same_tag(x.name, y.name):
                continue
            # The better-known spelling wins: more uses, then the shorter, then the first alphabetically.
            keep, drop = sorted((x, y), key=lambda t: (-t.usage_count, len(t.name), t.name))
            res = await merge_tags(store, drop.name, keep.name)
            gone.add(drop.name)
            report.tags_merged += 1
            report.rows_retagged += int(res["rows_rewritten"])


async def run_maintenance(store: Store, settings: Settings, *, embedder: Embedder | None = None,
                          processor: RowProcessor | None = None, now: datetime | None = None) -> dict[str, Any]:
    """One maintenance pass over every user; returns what it did. `embedder`'s vectors find near duplicates;
    `processor` (the librarian) re-embeds a summary rebuilt after a hard delete."""
    t0 = time.perf_counter()
    now = now or utcnow()
    report = MaintenanceReport()
    worker = _Maintainer(store, settings, embedder, processor, now, report)
    for user_id in await store.list_user_ids():
        report.users += 1
        await worker.repair_pass(user_id)
        await worker.forget_pass(user_id)
        await worker.review_pass(user_id)
    await _merge_clear_synonyms(store, report)
    report.seconds = round(time.perf_counter() - t0, 3)
    return report.to_dict()

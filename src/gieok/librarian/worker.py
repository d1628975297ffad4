"""The librarian: a background worker that turns raw captured rows into organised memory.

It claims pending rows with a lease (so several workers never process a row twice and a crashed worker's
rows come back when its lease ends), tags and embeds them in batches, promotes user facts into the
profile, and now and then runs the periodic jobs: maintenance (archive/forget, review schedule, tag
merging) and consolidation. Provider failures are recorded per row (`fail_cold`: backoff, then
`cold_error` and a later cycle); they never lose a row and never touch the hot path.

Periodic jobs hold a lease in the store (`acquire_job`), so with several workers on one database each job
runs in one of them at a time, at most once per its interval, across restarts.

The librarian takes what it needs — the store, the embedder (or none) and the settings — and never the memory
service; the service sees it only as a `gieok.memory.ports.RowProcessor`, wired by `gieok.app.runtime`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import Any

import anyio

from gieok.core.dates import utcnow
from gieok.core.errors import ProviderError
from gieok.core.metrics import EMBED_LATENCY, LIBRARIAN_ROWS, record_provider_error
from gieok.core.models import Memory
from gieok.core.settings import Settings
from gieok.librarian.code_index import index_rows
from gieok.librarian.consolidate import consolidate, summarize_session
from gieok.librarian.glosses import catch_up_glosses, index_glosses
from gieok.librarian.maintenance import run_maintenance
from gieok.librarian.profile import make_extractor, promote_facts
from gieok.librarian.staleness import check_anchors
from gieok.librarian.tagger import OfflineTagger, Tagger, TagInput, same_tag
from gieok.librarian.term_index import catch_up, index_terms
from gieok.librarian.waiting import pause, wait_for_work
from gieok.memory.ports import RowStatus, Status
from gieok.providers.embed.base import Embedder
from gieok.providers.embed.priority import foreground
from gieok.retrieval.doc_text import embed_texts
from gieok.store.base import ColdResult, ProjectTag, Store

log = logging.getLogger(__name__)

# Forgetting works on a scale of days and consolidation on hours: running them more often only costs.
MAINTENANCE_EVERY_S = 600.0
CONSOLIDATE_EVERY_S = 1800.0
# Files change with every commit, but a stale flag a few minutes late costs little (gieok.librarian.staleness).
ANCHORS_EVERY_S = 300.0
# The vocabulary catch-up (gieok.librarian.term_index.catch_up) walks every row: daily is plenty for what only
# rows stored before the vocabulary, or a provider outage, left out.
VOCABULARY_EVERY_S = 86_400.0
# A job lease outlives any sane run; a crashed owner's lease just expires.
JOB_LEASE_S = 900.0

def make_tagger(settings: Settings, aliases: dict[str, str]) -> Tagger:
    from gieok.providers.llm import make_llm
    llm = make_llm(settings)
    if llm is None:
        return OfflineTagger(aliases=aliases)
    from gieok.librarian.tagger import LLMTagger
    return LLMTagger(llm, aliases=aliases)


class Librarian:
    def __init__(self, store: Store, embedder: Embedder | None, settings: Settings, *,
                 worker_id: str | None = None) -> None:
        self.store = store
        self.embedder = embedder
        self.s = settings
        self.worker_id = worker_id or f"{socket.gethostname()}:{os.getpid()}:{id(self):x}"
        self.wake = asyncio.Event()
        # Set while the loop waits for work between cycles (`gieok worker` status, and tests that must know
        # the worker is idle before they check what wakes it).
        self.asleep = asyncio.Event()
        self._stopping = False
        self.processed = 0
        self.failed = 0
        self.cycles = 0
        self.started = time.monotonic()
        # Tests move time forward (backoffs, TTLs) without sleeping.
        self.clock: Callable[[], datetime] = utcnow
        self.maintenance_every_s = MAINTENANCE_EVERY_S
        self.consolidate_every_s = CONSOLIDATE_EVERY_S
        self.anchors_every_s = ANCHORS_EVERY_S
        self.vocabulary_every_s = VOCABULARY_EVERY_S
        self._next_job_check: dict[str, float] = {}

    # --- one batch -------------------------------------------------------------------------------------
    async def _tagger(self) -> tuple[Tagger, list[str]]:
        tags = await self.store.list_project_tags()
        aliases = {t.name: t.alias_of for t in tags if t.alias_of}
        canonical = [t.name for t in tags if not t.alias_of]
        return make_tagger(self.s, aliases), canonical

    async def _process(self, rows: Sequence[Memory]) -> tuple[dict[str, ColdResult], dict[str, ProviderError]]:
        """Tag and embed `rows`; returns what succeeded and, per row, what failed. A batch call that fails in a
        way one row may have caused (a malformed answer, a refused input) is retried row by row, so one bad
        row does not fail its neighbours; an outage or a bad key fails the batch without more calls."""
        results = {m.id: ColdResult(m.id) for m in rows}
        errors: dict[str, ProviderError] = {}
        to_tag = [m for m in rows if m.tag_status != "ok"]
        if to_tag:
            tagger, existing = await self._tagger()

            async def tag(batch: list[Memory]) -> list[Any]:
                return await tagger.tag([TagInput(m.content, m.role, m.project, list(m.p_tags)) for m in batch],
                                        existing)

            for m, tr in await _per_row_on_failure(to_tag, tag, errors, "llm"):
                results[m.id].p_tags = [tr.p_tag] if tr.p_tag else list(m.p_tags)
                results[m.id].d_tags = list(dict.fromkeys([*m.d_tags, *tr.d_tags]))
            await self._record_project_tags([r.p_tags[0] for r in results.values() if r.p_tags], existing)
        emb = self.embedder
        to_embed = [m for m in rows if emb is not None and (m.embed_status != "ok" or m.embedding_model != emb.name)]
        if emb is not None and to_embed:
            async def embed(batch: list[Memory]) -> list[Any]:
                assert emb is not None
                t0 = time.perf_counter()
                vecs = list(await emb.embed_documents(await embed_texts(self.store, batch)))
                EMBED_LATENCY.labels("documents").observe(time.perf_counter() - t0)
                return vecs

            for m, v in await _per_row_on_failure(to_embed, embed, errors, "embedder"):
                results[m.id].embedding = v
                results[m.id].embedding_model = emb.name
        return results, errors

    async def _record_project_tags(self, used: list[str], existing: list[str]) -> None:
        if not used:
            return
        known = {t.name: t for t in await self.store.list_project_tags()}
        for name in dict.fromkeys(used):
            tag = known.get(name)
            if tag is None:
                # A new tag that is clearly an existing one under another name becomes its alias.
                canonical = next((e for e in existing if same_tag(e, name) and e != name), None)
                tag = ProjectTag(name=name, alias_of=canonical, created_by="librarian")
            tag.usage_count += used.count(name)
            await self.store.upsert_project_tag(tag)

    async def _promote_profile(self, rows: Sequence[Memory]) -> dict[str, Exception]:
        """Promote the user rows' facts; returns, per row, why its facts could not be read. Those rows keep
        their profile step pending in the cold queue and are read again later (merging is idempotent)."""
        user_rows = [m for m in rows if m.role == "user"]
        if not user_rows:
            return {}
        try:
            promotion = await promote_facts(self.store, user_rows, make_extractor(self.s))
        except Exception as exc:  # a bug or a database error: the facts are still owed, not lost
            log.exception("profile promotion failed")
            return {m.id: exc for m in user_rows}
        return dict(promotion.failed)

    async def _fail(self, errors: dict[str, Exception], now: datetime) -> None:
        for mid, exc in errors.items():
            permanent = isinstance(exc, ProviderError) and not exc.transient
            await self.store.fail_cold(mid, f"{type(exc).__name__}: {exc}", permanent=permanent,
                                       max_attempts=self.s.cold_max_attempts, now=now)

    async def process_batch(self, rows: list[Memory]) -> int:
        now = self.clock()
        results, errors = await self._process(rows)
        # Profile facts are read before anything is marked done, so a row whose facts could not be read is
        # written with its profile step pending and comes back (an LLM outage postpones facts, never loses them).
        promotable = [m for m in rows if m.id not in errors or results[m.id].p_tags is not None]
        owed = await self._promote_profile(promotable)
        for m in promotable:
            results[m.id].profile = "pending" if m.id in owed else "ok"
        done = [r for mid, r in results.items() if mid not in errors]
        # A Korean row's full-text document gains its words' English glosses (gieok.librarian.glosses), and
        # each chat message's its neighbours' words (gieok.store.context_sql); the previous message gains this
        # one's. Offline and provider-independent, so done for every row, and before the rows are marked done:
        # if it fails, the leases run out and the batch comes back.
        await index_glosses(self.store, rows)
        await self.store.refresh_context([m.id for m in rows if m.source == "chat" and m.session_id])
        # Anchors and error fingerprints (gieok.librarian.code_index): offline too, and only on first processing
        # or after an edit (both leave tags pending), so a re-embed keeps the anchors' last check.
        await index_rows(self.store, [m for m in rows if m.tag_status != "ok"])
        await self.store.complete_cold(done, now)
        # The English words of embedded rows join their user's vocabulary (Korean queries reach them through
        # it: gieok.retrieval.bridge); after the rows are done, since a failure here must not hold them up.
        await index_terms(self.store, self.embedder, [m for m in rows if results[m.id].embedding is not None])
        # Partial successes (tags ok, embedding failed) are kept; the failure is recorded for a retry.
        partial = [r for mid, r in results.items()
                   if mid in errors and (r.p_tags is not None or r.embedding is not None)]
        if partial:
            await self.store.complete_cold(partial, now)
        failures: dict[str, Exception] = {**owed, **errors}
        await self._fail(failures, now)
        if self.embedder is None:
            # The store clears a recovered row's error once it is tagged *and* embedded; with no embedder
            # configured, tagged is all there is to do, so the old error must not linger.
            for m in rows:
                if m.id not in failures and (m.cold_error or m.cold_attempts):
                    await self.store.update_memory(m.id, {"cold_error": "", "cold_attempts": 0})
        self.processed += len(done)
        self.failed += len(failures)
        LIBRARIAN_ROWS.labels("done").inc(len(done))
        LIBRARIAN_ROWS.labels("failed").inc(len(failures))
        return len(rows)

    async def process_now(self, rows: Sequence[Memory]) -> dict[str, RowStatus]:
        """Synchronous tag + embed (and profile facts) for explicit memories. A failing provider leaves the
        row pending for the cold path and says so."""
        with foreground():      # someone waits for these: not queued behind the background batches
            results, errors = await self._process(rows)
        owed = await self._promote_profile(rows)
        for m in rows:
            results[m.id].profile = "pending" if m.id in owed else "ok"
        await index_rows(self.store, [m for m in rows if m.tag_status != "ok"])
        await index_glosses(self.store, rows)
        await self.store.complete_cold(list(results.values()), self.clock())
        # Their English words join the vocabulary as in the cold path (a row done here is never claimed again,
        # so without this a Korean question could not reach a remembered fact through the bridge).
        with foreground():
            await index_terms(self.store, self.embedder, [m for m in rows if results[m.id].embedding is not None])
        out: dict[str, RowStatus] = {}
        for m in rows:
            r = results[m.id]
            was_tagged = m.tag_status == "ok" or r.p_tags is not None or r.d_tags is not None
            tagged: Status = "ok" if was_tagged else "pending"
            emb = self.embedder
            already = emb is not None and m.embed_status == "ok" and m.embedding_model == emb.name
            embedded: Status = "ok" if emb is not None and (r.embedding is not None or already) else "pending"
            notes = [f"provider failed ({errors[m.id]}); the librarian will retry"] if m.id in errors else []
            if m.id in owed:
                notes.append(f"profile facts postponed ({owed[m.id]}); the librarian will retry")
            out[m.id] = (tagged, embedded, notes)
        return out

    # --- the loop --------------------------------------------------------------------------------------
    def _claim_kwargs(self) -> dict[str, Any]:
        # With no embedder, rows only waiting for a vector are not work for a worker: claiming them would
        # keep the oldest embed-pending rows in front of newer untagged ones forever.
        return {} if self.embedder is not None else {"need_embedding": False}

    async def run_once(self, max_batches: int | None = None) -> int:
        """Process what is pending now; returns rows handled."""
        total = 0
        batches = 0
        seen: set[str] = set()
        while not self._stopping:
            rows = await self.store.claim_pending(self.worker_id, self.s.librarian_batch, self.s.lease_seconds,
                                                      self.s.cold_max_attempts, self.clock(), **self._claim_kwargs())
            # Rows this cycle already handled that come straight back end the cycle instead of spinning on them.
            fresh = [m for m in rows if m.id not in seen]
            if not fresh:
                if rows:
                    await self.store.complete_cold([ColdResult(m.id) for m in rows], self.clock())
                break
            seen.update(m.id for m in fresh)
            total += await self.process_batch(fresh)
            batches += 1
            if max_batches is not None and batches >= max_batches:
                break
            await asyncio.sleep(0)  # let requests in between batches
        self.cycles += 1
        return total

    async def _run_job(self, name: str, fn: Callable[[datetime], Awaitable[dict[str, Any]]],
                       min_interval_s: float) -> dict[str, Any] | None:
        """Run `fn` under the store's lease for `name`; None when another worker holds it or it ran too
        recently."""
        store = self.store
        if not await store.acquire_job(name, self.worker_id, lease_seconds=JOB_LEASE_S,
                                       min_interval_s=min_interval_s, now=self.clock()):
            return None
        result: dict[str, Any] = {}
        try:
            result = await fn(self.clock())
        except Exception as exc:
            result = {"error": f"{type(exc).__name__}: {exc}"}
            raise
        finally:
            # Shielded: on shutdown the release must still happen, or the job waits out its lease.
            with anyio.CancelScope(shield=True):
                await store.finish_job(name, self.worker_id, result, self.clock())
        return result

    async def maintenance(self, now: datetime | None = None) -> dict[str, Any]:
        """Archive/forget, review schedule and tag merging, once, now (unless another worker is at it)."""
        res = await self._run_job("maintenance", lambda t: self._maintain(now or t), 0)
        return res if res is not None else {"skipped": "another worker is running maintenance"}

    async def consolidate(self, now: datetime | None = None) -> dict[str, Any]:
        """Cluster recent episodic rows into semantic memories and link contradictions, once, now."""
        res = await self._run_job("consolidation", lambda t: self._consolidate(now or t), 0)
        return res if res is not None else {"skipped": "another worker is running consolidation"}

    async def check_anchors(self, now: datetime | None = None) -> dict[str, Any]:
        """Compare every anchor with its repository now (unless another worker is at it)."""
        res = await self._run_job("anchors", lambda t: self._anchors_job(now or t), 0)
        return res if res is not None else {"skipped": "another worker is checking anchors"}

    async def _anchors_job(self, now: datetime) -> dict[str, Any]:
        res = (await check_anchors(self.store, now=now)).to_dict()
        # The job's record keeps counts; the anchors themselves hold what was found.
        return {**res, "stale": len(res["stale"]), "errors": res["errors"][:5]}

    async def run_due_jobs(self) -> dict[str, dict[str, Any]]:
        """Run each periodic job whose interval has passed (checked locally, then against the store)."""
        jobs: list[tuple[str, float, Callable[[datetime], Awaitable[dict[str, Any]]]]] = [
            ("maintenance", self.maintenance_every_s, self._maintain),
            ("consolidation", self.consolidate_every_s, self._consolidate),
            ("anchors", self.anchors_every_s, self._anchors_job),
            ("vocabulary", self.vocabulary_every_s, self._vocabulary_job),
        ]
        out: dict[str, dict[str, Any]] = {}
        for name, every, fn in jobs:
            mono = time.monotonic()
            if mono < self._next_job_check.get(name, 0.0):
                continue
            self._next_job_check[name] = mono + every
            res = await self._run_job(name, fn, every)
            if res is not None:
                out[name] = res
        return out

    async def _count_pending(self) -> int | None:
        """Claimable rows now, or None when the store cannot say: a database hiccup while asleep is no news,
        and the interval still wakes the worker, which is where a failure is logged and retried."""
        try:
            return await self.store.count_pending(self.s.cold_max_attempts, **self._claim_kwargs())
        except Exception:  # raised here, outside run_forever's guard, it would stop the librarian
            log.warning("librarian could not count pending rows; sleeping on", exc_info=True)
            return None

    async def _sleep(self, timeout: float) -> None:
        """Until there is work, `stop()`, or `timeout` (gieok.librarian.waiting)."""
        self.asleep.set()
        try:
            await wait_for_work(self.store, self.wake, lambda: self._stopping, self._count_pending,
                                self.s.librarian_wake_pending, timeout)
        finally:
            self.asleep.clear()
        self.wake.clear()

    async def run_forever(self) -> None:
        """Wake every interval, or as soon as enough rows are pending; stop cleanly on `stop()`."""
        log.info("librarian %s started", self.worker_id)
        await self._queue_reembed()
        while not self._stopping:
            try:
                await self.run_once()
                if not self._stopping:
                    await self.run_due_jobs()
            except Exception:  # a bug or a database hiccup must not kill the worker; it tries again next cycle
                log.exception("librarian cycle failed")
            if self._stopping:
                break
            try:
                await self._sleep(self.s.librarian_interval_s)
            except Exception:  # a store's wait failing in a way it did not expect: pause briefly, not spin
                log.exception("librarian sleep failed")
                await pause(self.wake)
        log.info("librarian %s stopped", self.worker_id)

    async def _queue_reembed(self) -> None:
        """A changed GIEOK_EMBEDDER means a background re-embed: rows embedded by another model go back to the
        queue. Their old vectors keep serving searches under the old model until each is replaced, and rows
        waiting meanwhile are still found by full text."""
        if self.embedder is None:
            return
        try:
            n = await self.store.mark_for_reembed(self.embedder.name)
        except Exception:  # never keep the librarian from starting over this
            log.exception("could not queue re-embedding")
            return
        if n:
            log.info("re-embedding %d rows with %s", n, self.embedder.name)

    async def stop(self) -> None:
        self._stopping = True
        self.wake.set()

    async def summarize_thread(self, user_id: str, session_id: str) -> dict[str, Any]:
        return await summarize_session(self.store, self.s, user_id, session_id, processor=self)

    async def _vocabulary_job(self, now: datetime) -> dict[str, Any]:
        # The other derived words the cold path writes: Korean rows' English glosses (gieok.librarian.glosses).
        return {**await catch_up(self.store, self.embedder), "glossed": await catch_up_glosses(self.store)}

    def _maintain(self, now: datetime) -> Awaitable[dict[str, Any]]:
        return run_maintenance(self.store, self.s, embedder=self.embedder, processor=self, now=now)

    def _consolidate(self, now: datetime) -> Awaitable[dict[str, Any]]:
        return consolidate(self.store, self.s, embedder=self.embedder, processor=self, now=now)

    def throughput(self) -> float:
        elapsed = time.monotonic() - self.started
        return self.processed / elapsed if elapsed > 0 else 0.0


async def _per_row_on_failure(rows: list[Memory], call: Callable[[list[Memory]], Awaitable[list[Any]]],
                              errors: dict[str, ProviderError], kind: str) -> list[tuple[Memory, Any]]:
    """`call(rows)` paired with its rows; when the batch fails with a `per_row` error, each row alone, so the
    failure is recorded only against the rows that cause it. The first error of a row is the one kept."""
    try:
        return list(zip(rows, await call(rows), strict=True))
    except ProviderError as exc:
        record_provider_error(kind, exc)
        if not exc.per_row or len(rows) == 1:
            for m in rows:
                errors.setdefault(m.id, exc)
            return []
    done: list[tuple[Memory, Any]] = []
    for i, m in enumerate(rows):
        try:
            done.append((m, (await call([m]))[0]))
        except ProviderError as exc:
            record_provider_error(kind, exc)
            errors.setdefault(m.id, exc)
            if not exc.per_row:  # the provider is down now: the rest wait for the next cycle
                for rest in rows[i + 1:]:
                    errors.setdefault(rest.id, exc)
                break
    return done

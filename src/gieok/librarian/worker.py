"""The librarian: a background worker that turns raw captured rows into organised memory.

It claims pending rows with a lease (so several workers never process a row twice and a crashed worker's
rows come back when its lease ends), tags and embeds them in batches, promotes user facts into the
profile, and now and then runs maintenance (archive/forget, review schedule, consolidation).
Provider failures are recorded per row (`fail_cold`: backoff, then `cold_error` and a later cycle);
they never lose a row and never touch the hot path.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from collections.abc import Sequence
from typing import Any

from gieok.errors import ProviderError
from gieok.librarian.tagger import OfflineTagger, Tagger, TagInput, same_tag
from gieok.models import Memory
from gieok.service import MemoryService
from gieok.store.base import ColdResult, ProjectTag
from gieok.timeparse import utcnow

log = logging.getLogger(__name__)


def embed_text(m: Memory) -> str:
    """What a row's vector is computed from: its title and content."""
    return f"{m.title}\n{m.content}" if m.title else m.content


def make_tagger(svc: MemoryService, aliases: dict[str, str]) -> Tagger:
    from gieok.librarian.llm import make_llm
    llm = make_llm(svc.settings)
    if llm is None:
        return OfflineTagger(aliases=aliases)
    from gieok.librarian.tagger import LLMTagger
    return LLMTagger(llm, aliases=aliases)


class Librarian:
    def __init__(self, svc: MemoryService, *, worker_id: str | None = None) -> None:
        self.svc = svc
        self.s = svc.settings
        self.worker_id = worker_id or f"{socket.gethostname()}:{os.getpid()}:{id(self):x}"
        self.wake = asyncio.Event()
        self._stopping = False
        self.processed = 0
        self.failed = 0
        self.cycles = 0
        self.started = time.monotonic()
        self.last_maintenance = 0.0
        svc.attach_wakeup(self.wake)

    # --- one batch -------------------------------------------------------------------------------------
    async def _tagger(self) -> tuple[Tagger, list[str]]:
        tags = await self.svc.store.list_project_tags()
        aliases = {t.name: t.alias_of for t in tags if t.alias_of}
        canonical = [t.name for t in tags if not t.alias_of]
        return make_tagger(self.svc, aliases), canonical

    async def _process(self, rows: Sequence[Memory]) -> tuple[dict[str, ColdResult], dict[str, ProviderError]]:
        """Tag and embed `rows`; returns what succeeded and, per row, what failed."""
        results = {m.id: ColdResult(m.id) for m in rows}
        errors: dict[str, ProviderError] = {}
        to_tag = [m for m in rows if m.tag_status != "ok"]
        if to_tag:
            tagger, existing = await self._tagger()
            try:
                tagged = await tagger.tag([TagInput(m.content, m.role, m.project, list(m.p_tags)) for m in to_tag],
                                          existing)
            except ProviderError as exc:
                for m in to_tag:
                    errors[m.id] = exc
            else:
                for m, tr in zip(to_tag, tagged, strict=True):
                    results[m.id].p_tags = [tr.p_tag] if tr.p_tag else list(m.p_tags)
                    merged = list(dict.fromkeys([*m.d_tags, *tr.d_tags]))
                    results[m.id].d_tags = merged
                await self._record_project_tags([r.p_tags[0] for r in results.values() if r.p_tags], existing)
        emb = self.svc.embedder
        to_embed = [m for m in rows if emb is not None and (m.embed_status != "ok" or m.embedding_model != emb.name)]
        if emb is not None and to_embed:
            try:
                vecs = await emb.embed_documents([embed_text(m) for m in to_embed])
            except ProviderError as exc:
                for m in to_embed:
                    errors.setdefault(m.id, exc)
            else:
                for m, v in zip(to_embed, vecs, strict=True):
                    results[m.id].embedding = v
                    results[m.id].embedding_model = emb.name
        return results, errors

    async def _record_project_tags(self, used: list[str], existing: list[str]) -> None:
        if not used:
            return
        known = {t.name: t for t in await self.svc.store.list_project_tags()}
        for name in dict.fromkeys(used):
            tag = known.get(name)
            if tag is None:
                # A new tag that is clearly an existing one under another name becomes its alias.
                canonical = next((e for e in existing if same_tag(e, name) and e != name), None)
                tag = ProjectTag(name=name, alias_of=canonical, created_by="librarian")
            tag.usage_count += used.count(name)
            await self.svc.store.upsert_project_tag(tag)

    async def _promote_profile(self, rows: Sequence[Memory]) -> None:
        from gieok.librarian.profile import promote_facts
        user_rows = [m for m in rows if m.role == "user"]
        if user_rows:
            await promote_facts(self.svc, user_rows)

    async def process_batch(self, rows: list[Memory]) -> int:
        now = utcnow()
        results, errors = await self._process(rows)
        done = [r for mid, r in results.items() if mid not in errors]
        await self.svc.store.complete_cold(done, now)
        # Partial successes (tags ok, embedding failed) are kept; the failure is recorded for a retry.
        partial = [r for mid, r in results.items() if mid in errors and (r.p_tags is not None or r.embedding is not None)]
        if partial:
            await self.svc.store.complete_cold(partial, now)
        for mid, exc in errors.items():
            await self.svc.store.fail_cold(mid, f"{type(exc).__name__}: {exc}", permanent=not exc.transient,
                                           max_attempts=self.s.cold_max_attempts, now=now)
        try:
            await self._promote_profile([m for m in rows if m.id not in errors or results[m.id].p_tags is not None])
        except Exception:  # profile promotion is best effort; the rows themselves are done
            log.exception("profile promotion failed")
        self.processed += len(done)
        self.failed += len(errors)
        return len(rows)

    async def process_now(self, rows: list[Memory]) -> dict[str, tuple[str, str, list[str]]]:
        """Synchronous tag + embed for explicit memories. A failing provider leaves the row pending for the
        cold path and says so."""
        results, errors = await self._process(rows)
        await self.svc.store.complete_cold(list(results.values()), utcnow())
        out: dict[str, tuple[str, str, list[str]]] = {}
        for m in rows:
            r = results[m.id]
            tagged = "ok" if (m.tag_status == "ok" or r.p_tags is not None or r.d_tags is not None) else "pending"
            embedded = "ok" if r.embedding is not None or (self.svc.embedder is not None and m.embed_status == "ok"
                                                           and m.embedding_model == self.svc.embedder.name) else "pending"
            if self.svc.embedder is None:
                embedded = "pending"
            notes = [f"provider failed ({errors[m.id]}); the librarian will retry"] if m.id in errors else []
            out[m.id] = (tagged, embedded, notes)
        await self._promote_profile(rows)
        return out

    # --- the loop --------------------------------------------------------------------------------------
    async def run_once(self, max_batches: int | None = None) -> int:
        """Process what is pending now; returns rows handled."""
        total = 0
        batches = 0
        seen: set[str] = set()
        while not self._stopping:
            rows = await self.svc.store.claim_pending(self.worker_id, self.s.librarian_batch, self.s.lease_seconds,
                                                      self.s.cold_max_attempts, utcnow())
            # Rows this cycle already handled that come straight back (e.g. no embedder is configured, so
            # they stay embed-pending) end the cycle instead of spinning on them.
            fresh = [m for m in rows if m.id not in seen]
            if not fresh:
                if rows:
                    await self.svc.store.complete_cold([ColdResult(m.id) for m in rows], utcnow())
                break
            seen.update(m.id for m in fresh)
            total += await self.process_batch(fresh)
            batches += 1
            if max_batches is not None and batches >= max_batches:
                break
            await asyncio.sleep(0)  # let requests in between batches
        self.cycles += 1
        return total

    async def maintenance(self) -> dict[str, Any]:
        from gieok.librarian.maintenance import run_maintenance
        return await run_maintenance(self.svc)

    async def run_forever(self) -> None:
        """Wake every interval, or as soon as enough rows are pending; stop cleanly on `stop()`."""
        log.info("librarian %s started", self.worker_id)
        while not self._stopping:
            try:
                await self.run_once()
                if time.monotonic() - self.last_maintenance > max(self.s.librarian_interval_s, 600):
                    self.last_maintenance = time.monotonic()
                    await self.maintenance()
            except Exception:  # a bug or a database hiccup must not kill the worker; it tries again next cycle
                log.exception("librarian cycle failed")
            try:
                await asyncio.wait_for(self.wake.wait(), timeout=self.s.librarian_interval_s)
            except TimeoutError:
                pass
            self.wake.clear()

    async def stop(self) -> None:
        self._stopping = True
        self.wake.set()

    async def summarize_thread(self, user_id: str, session_id: str) -> dict[str, Any]:
        from gieok.librarian.consolidate import summarize_session
        return await summarize_session(self.svc, user_id, session_id)

    def throughput(self) -> float:
        elapsed = time.monotonic() - self.started
        return self.processed / elapsed if elapsed > 0 else 0.0

"""Copy one store into another (SQLite → PostgreSQL and back): every row, vector, profile, project tag, link
and feedback event, then a check that the counts agree (ARCHITECTURE §11: moving M1 → M3 is one command).

Only the `Store` protocol is used, so any pair of backends works. Why it goes the way it does:
- Rows go in batches in the source's insertion order; a row whose id is already in the target is skipped,
  so a copy that was interrupted is resumed by running it again, without re-embedding what arrived.
- Vectors travel with their rows (`insert_many(vectors=…)`). When the target's embedding model differs,
  live rows are re-embedded on the way; if the provider fails, the row keeps its old vector with
  embed_status='pending', exactly what `mark_for_reembed` leaves, and the target's librarian finishes it.
- Links and feedback are copied after all rows (a link's far end may come in a later batch). Links are
  idempotent; feedback events are compared per row and only the missing ones added, and since
  `add_feedback` also bumps the row's counters, the source's counters are written back afterwards.
- Anchors and error fingerprints are derived from a row's meta and content: rows the source's librarian has
  processed are indexed again in the target (those still pending are indexed by the target's librarian),
  and what the last staleness check found is carried over anchor by anchor, so a stale flag survives.
- A row's full-text document is rebuilt as the librarian leaves it (gieok.librarian.glosses.indexed_texts): a
  Korean row's English glosses are derived, not stored apart, and copying the row's own words alone lost them.
- Each user's cross-lingual vocabulary (words with vectors, per embedding model) is copied as it is.
- Profiles are found through the users that own rows (the protocol has no list of users): a profile whose
  user has no row left at all is not copied.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from gieok.core.dates import utcnow
from gieok.core.errors import ProviderError
from gieok.core.models import Memory
from gieok.librarian.code_index import index_rows
from gieok.librarian.glosses import indexed_texts
from gieok.providers.embed.base import Embedder
from gieok.retrieval.doc_text import embed_text  # the one definition of what a vector is computed from
from gieok.store.base import ProjectTag, Store, Vector
from gieok.store.code_refs import AnchorCheck

# on_progress(stage, done, total): stage is "rows", "links" or "verify".
Progress = Callable[[str, int, int], None]


@dataclass
class CopyReport:
    source_rows: int = 0
    copied: int = 0                 # inserted by this run
    already_there: int = 0          # found in the target (an earlier, interrupted run)
    vectors: int = 0                # vectors written as they were
    reembedded: int = 0
    reembed_failed: int = 0         # left pending for the target's librarian
    users: int = 0
    project_tags: int = 0
    links: int = 0
    feedback: int = 0
    code_refs: int = 0              # rows with anchors or error fingerprints, indexed in the target
    terms: int = 0                  # words of the users' cross-lingual vocabularies
    target_rows: int = 0            # source rows found in the target at the end
    target_links: int = 0
    target_feedback: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def lines(self) -> list[str]:
        out = [f"rows       {self.source_rows} in source, {self.target_rows} in target "
               f"({self.copied} copied now, {self.already_there} already there)",
               f"vectors    {self.vectors} copied, {self.reembedded} re-embedded"
               + (f", {self.reembed_failed} left pending (provider failed)" if self.reembed_failed else ""),
               f"users      {self.users}",
               f"tags       {self.project_tags}",
               f"links      {self.links} in source, {self.target_links} in target",
               f"feedback   {self.feedback} in source, {self.target_feedback} in target",
               f"code refs  {self.code_refs} rows with anchors or error fingerprints",
               f"vocabulary {self.terms} words"]
        out += [f"MISMATCH   {p}" for p in self.problems]
        return out


async def _present(target: Store, rows: list[Memory]) -> set[str]:
    """Ids of `rows` the target already holds, soft-deleted ones included."""
    found = {m.id for m in await target.get_memories([m.id for m in rows])}
    for m in rows:
        if m.id not in found and m.deleted_at is not None and await target.get_memory(m.id, include_deleted=True):
            found.add(m.id)
    return found


async def _copy_rows(source: Store, target: Store, rows: list[Memory], embedder: Embedder | None,
                     report: CopyReport) -> None:
    present = await _present(target, rows)
    report.already_there += len(present)
    new = [m for m in rows if m.id not in present]
    if not new:
        return
    vectors: dict[str, Vector] = {}
    for model in {m.embedding_model for m in new if m.embedding_model}:
        vectors.update(await source.get_vectors([m.id for m in new if m.embedding_model == model], model))
    # Rows searchable under another model than the target's are re-embedded; deleted rows are never
    # searched again, so their vectors travel as they are.
    stale = [m for m in new if embedder is not None and m.id in vectors and m.deleted_at is None
             and m.embedding_model != embedder.name]
    reembedded = 0
    if embedder is not None and stale:
        try:
            fresh = await embedder.embed_documents([embed_text(m) for m in stale])
        except ProviderError:
            for m in stale:
                m.embed_status = "pending"
            report.reembed_failed += len(stale)
        else:
            for m, v in zip(stale, fresh, strict=True):
                vectors[m.id] = v
                m.embedding_model = embedder.name
                m.embed_status = "ok"
            reembedded = len(stale)
    report.reembedded += reembedded
    report.vectors += len(vectors) - reembedded
    for m in new:
        # Nothing holds a lease in the target yet.
        m.lease_until = None
    # The document the target searches is the source's as the librarian left it (a Korean row's glosses too);
    # rows still pending get theirs from the target's librarian, which writes the same text.
    batch = list(zip(new, await indexed_texts(new), strict=True))
    report.copied += await target.insert_many(batch, vectors)
    # Neighbour context is derived from the rows themselves: rebuilt in the target, not copied.
    await target.refresh_context([m.id for m in new if m.source == "chat" and m.session_id])
    await _copy_code_refs(source, target, [m for m in new if m.tag_status == "ok"], report)


async def _copy_code_refs(source: Store, target: Store, rows: list[Memory], report: CopyReport) -> None:
    """Index the processed rows' anchors and fingerprints in the target, then write the source's last check
    of each anchor onto its twin (matched by repository root, path and lines: ids differ between stores)."""
    if not rows:
        return
    report.code_refs += await index_rows(target, rows)
    checked = await source.anchors_for([m.id for m in rows])
    if not checked:
        return
    twins = await target.anchors_for(list(checked))
    # record_checks stamps what it writes with one time: group the checks by when the source made them.
    by_time: dict[datetime, list[AnchorCheck]] = {}
    for mid, anchors in checked.items():
        by_key = {(a.anchor.root, a.anchor.path, a.anchor.line_start): a for a in twins.get(mid, [])}
        for a in anchors:
            twin = by_key.get((a.anchor.root, a.anchor.path, a.anchor.line_start))
            if twin is None or a.status == "unchecked":
                continue
            by_time.setdefault(a.checked_at or utcnow(), []).append(
                AnchorCheck(twin.id, a.status, a.detail, a.current_path, a.checked_head, a.checked_blob,
                            commit=a.anchor.commit or None, blob=a.anchor.blob or None))
    for when, checks in by_time.items():
        await target.record_checks(checks, when)


async def _copy_feedback(source: Store, target: Store, memory_id: str, report: CopyReport) -> None:
    events = await source.list_feedback(memory_id)
    if not events:
        return
    report.feedback += len(events)
    have = Counter((e.event, round(e.score, 9), e.ts) for e in await target.list_feedback(memory_id))
    missing = []
    for e in events:
        key = (e.event, round(e.score, 9), e.ts)
        if have[key]:
            have[key] -= 1
        else:
            missing.append(e)
    for e in missing:
        await target.add_feedback(memory_id, e.event, e.score, e.ts)
    if missing:
        src = await source.get_memory(memory_id, include_deleted=True)
        if src is not None:
            # add_feedback counted the events again; the copied row already had them counted.
            await target.update_memory(memory_id, {"view_count": src.view_count, "cite_count": src.cite_count,
                                                   "edit_count": src.edit_count, "updated_at": src.updated_at})


async def copy_store(source: Store, target: Store, *, embedder: Embedder | None = None, batch: int = 500,
                     on_progress: Progress | None = None, max_batches: int | None = None) -> CopyReport:
    """Copy everything from `source` into `target` (both open). `embedder` is the target's: rows embedded
    with another model are re-embedded with it; None copies vectors as they are. `max_batches` stops
    early (used to test resuming). Returns what was copied and whether the counts agree."""
    report = CopyReport()
    progress = on_progress or (lambda stage, done, total: None)
    total = int((await source.stats(None))["total"])
    report.source_rows = total
    ids: list[str] = []
    deleted: set[str] = set()
    users: set[str] = set()
    buf: list[Memory] = []
    models: set[str] = set()
    batches = 0
    progress("rows", 0, total)
    async for m in source.iter_memories(None, include_deleted=True, batch=batch):
        ids.append(m.id)
        users.add(m.user_id)
        if m.embedding_model:
            models.add(m.embedding_model)
        if m.deleted_at is not None:
            deleted.add(m.id)
        buf.append(m)
        if len(buf) >= batch:
            await _copy_rows(source, target, buf, embedder, report)
            progress("rows", len(ids), total)
            buf = []
            batches += 1
            if max_batches is not None and batches >= max_batches:
                return report
    await _copy_rows(source, target, buf, embedder, report)
    progress("rows", len(ids), total)
    report.source_rows = len(ids)

    for uid in sorted(users):
        profile = await source.get_user(uid)
        if profile is not None:
            await target.save_user(profile)
            report.users += 1
        # The cross-lingual vocabulary is derived, but only from rows as the librarian processes them: the
        # copied rows are processed already, so their words travel (per model; existing words are kept).
        for model in sorted(models):
            vocab = await source.term_matrix(uid, model)
            if vocab is not None:
                missing = set(await target.missing_terms(uid, model, vocab[0]))
                keep = [i for i, t in enumerate(vocab[0]) if t in missing]
                if keep:
                    await target.add_term_vectors(uid, model, [vocab[0][i] for i in keep], vocab[1][keep])
                report.terms += len(vocab[0])
    tags = await source.list_project_tags()
    # Aliases point at other tags (a foreign key): every tag first, then the aliases.
    for t in tags:
        await target.upsert_project_tag(ProjectTag(t.name, None, t.description, t.created_by, t.usage_count))
    for t in tags:
        if t.alias_of:
            await target.upsert_project_tag(t)
    report.project_tags = len(tags)

    linked: list[str] = []
    for i, mid in enumerate(ids, 1):
        links = [link for link in await source.list_links(mid) if link.src == mid]
        for link in links:
            await target.add_link(link.src, link.dst, link.relation)
        report.links += len(links)
        before = report.feedback
        await _copy_feedback(source, target, mid, report)
        if links or report.feedback > before:
            linked.append(mid)
        if i % batch == 0 or i == len(ids):
            progress("links", i, len(ids))

    await _verify(target, ids, deleted, linked, report, progress, batch)
    return report


async def _verify(target: Store, ids: list[str], deleted: set[str], linked: list[str], report: CopyReport,
                  progress: Progress, batch: int) -> None:
    for start in range(0, len(ids), batch):
        chunk = ids[start:start + batch]
        found = {m.id for m in await target.get_memories(chunk)}
        for mid in chunk:
            if mid not in found and mid in deleted and await target.get_memory(mid, include_deleted=True):
                found.add(mid)
        report.target_rows += len(found)
        progress("verify", min(start + batch, len(ids)), len(ids))
    for mid in linked:
        report.target_links += sum(1 for link in await target.list_links(mid) if link.src == mid)
        report.target_feedback += len(await target.list_feedback(mid))
    if report.target_rows != report.source_rows:
        report.problems.append(f"{report.source_rows - report.target_rows} of {report.source_rows} rows "
                               "are missing from the target")
    if report.target_links < report.links:
        report.problems.append(f"{report.links - report.target_links} links are missing from the target")
    if report.target_feedback < report.feedback:
        report.problems.append(f"{report.feedback - report.target_feedback} feedback events are missing")

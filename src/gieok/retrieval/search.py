"""Candidate generation and the keyword fallback (ARCHITECTURE §6)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from datetime import datetime

from gieok.embed.base import Embedder
from gieok.errors import ProviderError
from gieok.models import Hit, SearchFilters
from gieok.retrieval.query_dates import in_windows, query_windows
from gieok.retrieval.ranking import Candidate, Recipe, model_cos_floor, rank
from gieok.store.base import Store
from gieok.text import query_terms

log = logging.getLogger(__name__)


@dataclass(slots=True)
class SearchOutcome:
    hits: list[Hit]
    mode: str                       # hybrid | vector | keyword | fallback | recent
    notes: list[str] = field(default_factory=list)


async def search(store: Store, embedder: Embedder | None, f: SearchFilters, query: str, *, limit: int,
                 recipe: Recipe, now: datetime, fallback_threshold: float) -> SearchOutcome:
    query = (query or "").strip()
    if not query:
        # No query: the newest matching rows (an agent browsing by date, tag or project).
        rows = await store.list_memories(f, limit=limit)
        return SearchOutcome([Hit(m, 1.0, {}, ["matches filters (newest first)"]) for m in rows], "recent")

    terms = query_terms(query)
    tokens = {t for term in terms for t in term} | {w for w in query.lower().split()}
    notes: list[str] = []
    cands: dict[str, Candidate] = {}
    qvec = None
    if recipe.use_vectors and embedder is not None:
        try:
            qvec = await embedder.embed_query(query)
        except ProviderError as exc:
            # A provider outage degrades search to keywords; it never fails it.
            notes.append(f"semantic search unavailable ({exc}); keyword results only")
            log.warning("query embedding failed: %s", exc)
        if qvec is not None:
            for m, cos in await store.vector_search(f, embedder.name, qvec, recipe.candidates):
                cands[m.id] = Candidate(m, cos=cos)
    windows = query_windows(query, now) if recipe.r_date else []
    if qvec is not None and embedder is not None:
        for since, until in windows[:3]:
            # The named window's best matches join the pool (capped: a query naming many dates stays cheap).
            lo = max(since, f.since) if f.since else since
            hi = min(until, f.until) if f.until else until
            if lo < hi:
                for m, cos in await store.vector_search(replace(f, since=lo, until=hi), embedder.name, qvec,
                                                        recipe.date_candidates):
                    cands.setdefault(m.id, Candidate(m, cos=cos))
    if recipe.use_keywords or qvec is None:
        for m, bm in await store.keyword_search(f, terms, recipe.candidates):
            c = cands.get(m.id)
            if c is None:
                cands[m.id] = Candidate(m, bm25=bm)
            else:
                c.bm25 = bm
    if qvec is not None and embedder is not None and cands:
        vecs = await store.get_vectors(list(cands), embedder.name)
        for mid, c in cands.items():
            v = vecs.get(mid)
            if v is not None:
                c.vector = v
                if c.cos is None:
                    c.cos = float(v @ qvec)

    for c in cands.values():
        c.date_match = in_windows(c.memory.created_at, windows)
    best_cos = max((c.cos for c in cands.values() if c.cos is not None), default=None)
    mode = "hybrid" if recipe.use_vectors and recipe.use_keywords and qvec is not None else (
        "vector" if qvec is not None else "keyword")
    use_recipe = recipe
    if recipe.cos_floor is None:
        use_recipe = replace(recipe, cos_floor=model_cos_floor(embedder.name) if embedder is not None else 0.0)
    if qvec is None or best_cos is None or best_cos < fallback_threshold:
        # The seed's rule: a weak best cosine means the semantic search failed; keyword and substring
        # matches answer instead (with no keep threshold: a literal match is worth showing).
        if qvec is not None:
            notes.append(f"best cosine {best_cos if best_cos is not None else 0:.2f} < threshold "
                         f"{fallback_threshold:.2f}: keyword fallback")
            mode = "fallback"
        cands = {k: c for k, c in cands.items() if c.bm25}
        for m in await store.substring_search(f, query, recipe.candidates):
            c = cands.get(m.id)
            if c is None:
                cands[m.id] = Candidate(m, substring=True, bm25=1.0)
            else:
                c.substring = True
        use_recipe = replace(use_recipe, keep_threshold=0.0, r_cos=0.0, r_bm25=max(recipe.r_bm25, 0.3))
    hits = rank(list(cands.values()), query_tokens=tokens, query_text=query, now=now, recipe=use_recipe,
                limit=limit)
    return SearchOutcome(hits, mode, notes)

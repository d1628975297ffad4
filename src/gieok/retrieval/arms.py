"""A search's arms, run side by side: the query's vector search, its full-text search, a Korean query's bridge
to English words and its Korean synonyms, an English query's Korean words (ARCHITECTURE §6). What they bring
back is the candidate pool that gieok.retrieval.search judges and ranks."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable
from dataclasses import dataclass, field, replace
from typing import NoReturn, TypeVar

import anyio

from gieok.core.errors import ProviderError
from gieok.core.metrics import EMBED_LATENCY, record_provider_error
from gieok.core.models import Memory, SearchFilters
from gieok.core.text import query_terms
from gieok.providers.embed.base import Embedder
from gieok.retrieval import en_ko, ko_glosses, ko_lexicon
from gieok.retrieval.abbreviations import expanded_terms
from gieok.retrieval.bridge import Bridged, bridge_query, embed_words, merge_bridged, query_word_forms
from gieok.retrieval.ko_compounds import MIN_SYLLABLES, compound_parts
from gieok.retrieval.ko_synonyms import merge_synonyms, synonym_terms
from gieok.retrieval.language_direction import LanguageDirections
from gieok.retrieval.query_dates import Window
from gieok.retrieval.recipes import Recipe
from gieok.retrieval.scripts import HANGUL, LATIN, text_script, written_in_english
from gieok.store.base import Store, Vector, VectorSink

log = logging.getLogger(__name__)
T = TypeVar("T")

Rows = list[tuple[Memory, float]]


@dataclass(slots=True)
class Arms:
    """One search's arms: what they search with (the first fields) and what they found (the rest, filled by
    `run`)."""

    store: Store
    embedder: Embedder | None
    f: SearchFilters
    query: str
    terms: list[list[str]]
    prefixes: list[list[str]]            # one-syllable verb stems, matched as prefixes (core.text.prefix_terms)
    windows: list[Window]                # the dates the query names
    recipe: Recipe
    sink: VectorSink | None              # where the searches put their rows' vectors
    # An English query's vector search looks with the language set aside (see gieok.retrieval.search).
    pool_lang: LanguageDirections | None

    qvec: Vector | None = None
    vec_hits: Rows = field(default_factory=list)
    kw_hits: Rows | None = None          # None: the full-text search did not run (or failed over to vectors)
    literal_bm: dict[str, float] | None = None   # the query's own words' BM25, set when other terms added evidence
    # A Korean query over English memory also gets an English rendering of itself from the bridge (its Latin
    # words and numbers, its words' translations), embedded beside the vector search: an English row's cosine
    # is then the mean of its cosines to both query vectors.
    rendered: list[Vector] = field(default_factory=list)
    bridged: list[list[str]] = field(default_factory=list)       # the bridge's English terms
    translated: list[list[str]] = field(default_factory=list)    # those that translate (Bridged.dictionary)
    # The query's word each translation is of (Bridged.sources; en_ko's for an English query over Korean rows).
    translated_from: dict[tuple[str, ...], str] = field(default_factory=dict)
    bridged_hits: Rows = field(default_factory=list)
    synonyms: list[list[str]] = field(default_factory=list)
    synonym_hits: Rows = field(default_factory=list)
    chosen_by_pool: set[str] = field(default_factory=set)        # rows whose Korean words the pool chose
    notes: list[str] = field(default_factory=list)

    async def run(self) -> None:
        recipe, embedder = self.recipe, self.embedder
        # The candidate lists are independent: fetched side by side (the query embedding and the vector scan
        # overlap the full-text query; all of them run off the event loop).
        try:
            async with anyio.create_task_group() as tg:
                if recipe.use_vectors and embedder is not None:
                    tg.start_soon(self._semantic, embedder)
                if recipe.use_keywords:
                    tg.start_soon(self._keywords)
                    if recipe.use_vectors:
                        tg.start_soon(self._bridge)   # a Korean query's words, embedded while the searches run
        except BaseExceptionGroup as group:
            _raise_first(group)
        if self.kw_hits is None and self.qvec is None:
            await self._keywords()        # no vectors to go by: keywords answer
        if self.vec_hits and self.kw_hits is not None and text_script(self.query) == LATIN:
            await self._english_over_korean()
        if (self.bridged or self.synonyms) and self.kw_hits is not None:
            self.literal_bm = {m.id: bm for m, bm in self.kw_hits}
            self.chosen_by_pool -= set(self.literal_bm)
            self.kw_hits = merge_synonyms(merge_bridged(self.kw_hits, self.bridged_hits), self.synonym_hits)

    async def _semantic(self, emb: Embedder) -> None:
        if (qvec := self.qvec) is None:     # given when the same query was embedded already (search's archive pass)
            t0 = time.perf_counter()
            try:
                self.qvec = qvec = await emb.embed_query(self.query)
            except ProviderError as exc:
                record_provider_error("embedder", exc)
                # A provider outage degrades search to keywords; it never fails it.
                self.notes.append(f"semantic search unavailable ({exc}); keyword results only")
                log.warning("query embedding failed: %s", exc)
                return
            EMBED_LATENCY.labels("query").observe(time.perf_counter() - t0)
        f, recipe = self.f, self.recipe
        look = self.pool_lang.neutral_search_vector(qvec) if self.pool_lang is not None else qvec
        self.vec_hits.extend(await self.store.vector_search(f, emb.name, look, recipe.candidates, sink=self.sink))
        for since, until in self.windows[:3]:
            # The named window's best matches join the pool (capped: a query naming many dates stays cheap).
            lo = max(since, f.since) if f.since else since
            hi = min(until, f.until) if f.until else until
            if lo < hi:
                self.vec_hits.extend(await self.store.vector_search(
                    replace(f, since=lo, until=hi), emb.name, look, recipe.date_candidates, sink=self.sink))

    async def _keywords(self) -> None:
        # "PR" also searches for "pull request", and back: the same word to the person asking (abbreviations).
        # "배포일정" also searches for 배포 and 일정 (the dictionary's first read, if it is one, off the other arms).
        terms = self.terms
        more = expanded_terms(terms) + await _compound_terms(self.query, terms)
        self.kw_hits = await self.store.keyword_search(self.f, terms + more + self.prefixes,
                                                       self.recipe.candidates, sink=self.sink)

    async def _bridge(self) -> None:
        # The Korean words' English neighbours, their own full-text search and the rendering's vector, beside
        # the other arms rather than after them.
        br = await _bridged(self.store, self.embedder, self.f, self.query, self.terms)
        self.bridged.extend(br.terms)
        self.translated.extend(br.dictionary)
        self.translated_from.update(br.sources)
        async with anyio.create_task_group() as tg:
            if self.bridged:
                tg.start_soon(self._bridged_keywords)
            tg.start_soon(self._synonym_keywords)
            if br.english and self.embedder is not None:
                self.rendered.extend(await _rendered(self.embedder, br.english, self.f.user_id))

    async def _bridged_keywords(self) -> None:
        self.bridged_hits.extend(await self.store.keyword_search(self.f, self.bridged, self.recipe.candidates,
                                                                 sink=self.sink))

    async def _synonym_keywords(self) -> None:
        # A Korean query word's Korean synonyms (native word / loanword: 축제 / 페스티벌), for Korean memory;
        # after the bridge, whose query words' vectors they reuse.
        self.synonyms.extend(await _synonyms(self.embedder, self.f, self.query, self.terms))
        if self.synonyms:
            self.synonym_hits.extend(await self.store.keyword_search(self.f, self.synonyms, self.recipe.candidates,
                                                                     sink=self.sink))

    async def _english_over_korean(self) -> None:
        # An English query over Korean memory: the Korean nouns that translate its words, among those its best
        # Korean rows use, are the query's own words for Korean rows as a Korean query's synonyms are (merged,
        # and shown by a fallback, the same way). After the vector search, whose rows choose them.
        found, ko_hits = await _korean_terms(self.store, self.f, self.query, self.terms, self.vec_hits,
                                             self.recipe, self.sink)
        self.synonyms.extend(t for t, _word in found)
        self.translated_from.update((tuple(t), word) for t, word in found)
        self.synonym_hits.extend(ko_hits)
        # The vector search's own rows chose those words, so matching them is no evidence that the search found
        # something (ko 30 memory, questions about other conversations: 19% passed the verdict with it, 7%
        # without; its own questions' recall@10 0.641 → 0.622, the rest answered by the keyword fallback).
        self.chosen_by_pool = {m.id for m, _bm in ko_hits}


def _raise_first(group: BaseExceptionGroup) -> NoReturn:
    """Callers handle a store error as such, not wrapped in a group. One failure is raised as it is, with its
    own cause; when both searches failed, the first stands for them with the group as its cause, so the other
    failure is not lost."""
    first = group.exceptions[0]
    if len(group.exceptions) == 1:
        raise first
    raise first from group


async def _or_nothing(what: str, call: Awaitable[T], nothing: T) -> T:
    """`call`'s answer, or `nothing` when the embedder fails: the bridge, the synonyms and the rendering widen a
    search, and a provider outage narrows it back to the query's own words instead of failing it."""
    try:
        return await call
    except ProviderError as exc:
        record_provider_error("embedder", exc)
        log.warning("%s embedding failed: %s", what, exc)
        return nothing


async def _compound_terms(query: str, terms: list[list[str]]) -> list[list[str]]:
    """The words of the query's compounds typed without their space ("배포일정" → 배포, 일정), as terms of its
    own (gieok.retrieval.ko_compounds): a row that wrote "배포 일정" has no bigram 포일 for the whole to match."""
    forms = [(w, s) for w, s in query_word_forms(query) if len(w) >= MIN_SYLLABLES]
    if not forms:
        return []
    table = await ko_lexicon.ready()      # the bridge reads it too; once per process, off the event loop
    out: list[list[str]] = []
    for written, stem in forms:
        if len(parts := compound_parts(stem, table, written)) > 1:
            out.extend(t for t in query_terms(" ".join(parts)) if t not in terms and t not in out)
    return out


async def _bridged(store: Store, embedder: Embedder | None, f: SearchFilters, query: str,
                   terms: list[list[str]]) -> Bridged:
    """English terms for a Korean query (gieok.retrieval.bridge); none when the embedder cannot say."""
    if embedder is None:
        return Bridged()
    return await _or_nothing("query word", bridge_query(store, embedder, f.user_id, query, terms), Bridged())


async def _synonyms(embedder: Embedder | None, f: SearchFilters, query: str,
                    terms: list[list[str]]) -> list[list[str]]:
    """Korean synonyms' full-text terms for a Korean query (gieok.retrieval.ko_synonyms); none when the
    embedder cannot say."""
    if embedder is None or text_script(query) != HANGUL:
        return []
    return await _or_nothing("synonym", synonym_terms(embedder, f.user_id, query_word_forms(query), terms), [])


async def _korean_terms(store: Store, f: SearchFilters, query: str, terms: list[list[str]], vec_hits: Rows,
                        recipe: Recipe, sink: VectorSink | None) -> tuple[list[tuple[list[str], str]], Rows]:
    """Korean terms for an English query (gieok.retrieval.en_ko), each with the query's word it translates, and
    their full-text hits; none when the semantic search's best rows hold no Korean."""
    best = sorted(vec_hits, key=lambda t: -t[1])[: en_ko.POOL]
    pool = [m.content for m, _cos in best if not written_in_english(m)]
    if not pool:
        return [], []
    await en_ko.ready()
    # The rows' glosses too, off the event loop: the results may have met the query by them, and say so
    # (gieok.retrieval.shared_words).
    await ko_glosses.ready()
    found = en_ko.translations(query, pool, have=terms)
    if not found:
        return [], []
    ko = [t for t, _word in found]
    # Only words whose matches the store can rank all of, as for a Korean query's feedback words: the pool's rows
    # chose them, so their own rows are candidates already, and a translation that more rows hold than a store
    # ranks (회의, "meeting", in a big Korean memory) would add only its newest matches, which say nothing about
    # which rows are about it (ranking them took 18 of an English query's 45 ms at 100,000 memories, PostgreSQL).
    return found, await store.keyword_search(f, ko, recipe.candidates, rankable_only=True, sink=sink)


async def _rendered(embedder: Embedder, english: str, user_id: str) -> list[Vector]:
    """The query vector of the bridge's English rendering (remembered with the user's query words: a repeated
    question costs no model call); none when the embedder fails (the Korean query's own vector still searches)."""
    vecs = await _or_nothing("rendered query", embed_words(embedder, [english], user_id=user_id), None)
    return [] if vecs is None else [vecs[0]]

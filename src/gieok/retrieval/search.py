"""Candidate generation and the keyword fallback (ARCHITECTURE §6)."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import NoReturn, TypeVar

import anyio
import numpy as np

from gieok.core.errors import ProviderError
from gieok.core.metrics import EMBED_LATENCY, record_provider_error
from gieok.core.models import Hit, Memory, SearchFilters
from gieok.core.text import has_content_words, prefix_terms, query_terms, verb_form_terms
from gieok.providers.embed.base import Embedder
from gieok.providers.embed.priority import GATE
from gieok.retrieval import en_ko, ko_lexicon
from gieok.retrieval.abbreviations import expanded_terms
from gieok.retrieval.bridge import (
    Bridged,
    bridge_query,
    embed_words,
    merge_bridged,
    query_word_forms,
)
from gieok.retrieval.doc_text import embedded_scripts
from gieok.retrieval.feedback import feedback_terms
from gieok.retrieval.ko_compounds import MIN_SYLLABLES, compound_parts
from gieok.retrieval.ko_synonyms import merge_synonyms, synonym_terms
from gieok.retrieval.language_direction import LanguageDirections, model_language_directions
from gieok.retrieval.model_cosines import model_cos_floor, model_verdict_margin
from gieok.retrieval.neighbours import neighbour_cosines
from gieok.retrieval.query_dates import date_match, query_windows, stated_date_match
from gieok.retrieval.ranking import Candidate, own_relevance, rank
from gieok.retrieval.recipes import Recipe
from gieok.retrieval.same_error import with_same_error
from gieok.retrieval.scripts import HANGUL, LATIN, text_script, written_in_english
from gieok.retrieval.shown import set_cosine_only_floors, stray_word_match
from gieok.retrieval.time_words import asks_when, states_time
from gieok.retrieval.verdict import pair_band, semantic_verdict
from gieok.store.base import Store, Vector, VectorSink

log = logging.getLogger(__name__)
T = TypeVar("T")


# What a search says when the semantic search found nothing close: for the person or agent reading it (the
# numbers are in each result's score parts and in `mode`).
FALLBACK_NOTE = "no close match; showing keyword matches"
NOTHING_NOTE = "nothing stored matches this, in meaning or in words"
FALLBACK_DATES_NOTE = "no close match; showing keyword matches and what was stored on the dates it names"
NO_WORDS_NOTE = "the question names nothing to look for; showing the newest memories"


@dataclass(slots=True)
class SearchOutcome:
    hits: list[Hit]
    mode: str                       # hybrid | vector | keyword | fallback | recent
    notes: list[str] = field(default_factory=list)


async def search(store: Store, embedder: Embedder | None, f: SearchFilters, query: str, *, limit: int,
                 recipe: Recipe, now: datetime, fallback_threshold: float,
                 pair_thresholds: Mapping[tuple[str, str], float] | None = None) -> SearchOutcome:
    """`fallback_threshold`: the best cosine under which the semantic search counts as failed;
    `pair_thresholds`: the same per (query script, memory script) where the model's cosine band differs
    (gieok.retrieval.ranking), other pairs using `fallback_threshold`."""
    # While a search runs, the librarian's document embedding waits at its next chunk (priority.GATE): the
    # whole search, since its database reads and ranking slow down beside a batch as much as its embedding.
    with GATE.query():
        return await _search(store, embedder, f, query, limit=limit, recipe=recipe, now=now,
                             fallback_threshold=fallback_threshold, pair_thresholds=pair_thresholds)


async def _search(store: Store, embedder: Embedder | None, f: SearchFilters, query: str, *, limit: int,
                  recipe: Recipe, now: datetime, fallback_threshold: float,
                  pair_thresholds: Mapping[tuple[str, str], float] | None) -> SearchOutcome:
    query = (query or "").strip()
    no_match = fallback_threshold     # the verdict may raise `fallback_threshold`; a row's floor is this one
    if not query:
        # No query: the newest matching rows (an agent browsing by date, tag or project).
        return await _newest(store, f, limit, [])

    windows = query_windows(query, now) if recipe.r_date else []
    if not windows and not has_content_words(query):
        # "뭐 했어?", "what did I do?": question words only, nothing to look for but the filters; a cosine to such
        # a question is chance (0.81 to an unrelated Korean note). The newest rows the filters let through, as
        # for no query at all.
        return await _newest(store, f, limit, [NO_WORDS_NOTE])
    terms = query_terms(query)
    # "PR" also searches for "pull request", and back: the same word to the person asking (abbreviations).
    short_long = expanded_terms(terms)
    tokens = {t for term in terms for t in term} | {w for w in query.lower().split()}
    # One-syllable verb stems ("썼어" → 쓰) match as prefixes: ranking evidence, not a literal match to show.
    prefixes = prefix_terms(query)
    notes: list[str] = []
    qvec: Vector | None = None
    vec_hits: list[tuple[Memory, float]] = []
    kw_hits: list[tuple[Memory, float]] | None = None
    literal_bm: dict[str, float] | None = None    # set when bridged terms added evidence

    # A Korean query over English memory also gets an English rendering of itself from the bridge (its Latin
    # words and numbers, its words' translations), embedded beside the vector search: an English row's cosine
    # is then the mean of its cosines to both query vectors.
    rendered: list[Vector] = []

    # The candidates' vectors: each search reads its rows' with the rows (one query, not a second round trip for
    # them after it); only the few candidates no search returned (none, usually) are fetched after.
    sink = VectorSink(embedder.name) if embedder is not None and recipe.use_vectors else None
    # How far the model sets Korean apart from English of the same meaning (gieok.retrieval.language_direction):
    # set aside when rows are ranked by cosine, where measured for the model.
    lang = model_language_directions(embedder.name) if embedder is not None else None
    # An English query's vector search looks with the language set aside: its Korean rows' words become the
    # query's Korean words (`_korean_terms`), so which Korean rows its pool holds matters. Dev recall@5 / @10,
    # English questions over Korean memory (ko 30): 0.624 / 0.722 → 0.634 / 0.731, with 26 beside it 0.643 /
    # 0.722 → 0.672 / 0.750; a Korean query's pool is better as it was (Korean questions about 26, ko 30 beside:
    # 0.661 / 0.781 → 0.659 / 0.763), its English rows found by the bridge's words.
    pool_lang = lang if text_script(query) == LATIN else None

    async def semantic(emb: Embedder) -> None:
        nonlocal qvec
        t0 = time.perf_counter()
        try:
            qvec = await emb.embed_query(query)
        except ProviderError as exc:
            record_provider_error("embedder", exc)
            # A provider outage degrades search to keywords; it never fails it.
            notes.append(f"semantic search unavailable ({exc}); keyword results only")
            log.warning("query embedding failed: %s", exc)
            return
        EMBED_LATENCY.labels("query").observe(time.perf_counter() - t0)
        look = pool_lang.neutral_search_vector(qvec) if pool_lang is not None else qvec
        vec_hits.extend(await store.vector_search(f, emb.name, look, recipe.candidates, sink=sink))
        for since, until in windows[:3]:
            # The named window's best matches join the pool (capped: a query naming many dates stays cheap).
            lo = max(since, f.since) if f.since else since
            hi = min(until, f.until) if f.until else until
            if lo < hi:
                vec_hits.extend(await store.vector_search(replace(f, since=lo, until=hi), emb.name, look,
                                                          recipe.date_candidates, sink=sink))

    async def keywords() -> None:
        nonlocal kw_hits
        # "배포일정" also searches for 배포 and 일정 (the dictionary's first read, if it is one, off the other arms).
        compounds = await _compound_terms(query, terms)
        kw_hits = await store.keyword_search(f, terms + short_long + compounds + prefixes, recipe.candidates,
                                             sink=sink)

    extra: list[list[str]] = []
    translated: list[list[str]] = []      # the part of `extra` that translates (bridge.Bridged.dictionary)
    bridged_hits: list[tuple[Memory, float]] = []
    synonyms: list[list[str]] = []
    synonym_hits: list[tuple[Memory, float]] = []
    chosen_by_pool: set[str] = set()

    async def bridge() -> None:
        # The Korean words' English neighbours, their own full-text search and the rendering's vector, beside
        # the other arms rather than after them.
        br = await _bridged(store, embedder, f, query, terms)
        extra.extend(br.terms)
        translated.extend(br.dictionary)
        async with anyio.create_task_group() as tg2:
            if extra:
                tg2.start_soon(bridged_keywords)
            tg2.start_soon(synonym_keywords)
            if br.english and embedder is not None:
                rendered.extend(await _rendered(embedder, br.english, f.user_id))

    async def bridged_keywords() -> None:
        bridged_hits.extend(await store.keyword_search(f, extra, recipe.candidates, sink=sink))

    async def synonym_keywords() -> None:
        # A Korean query word's Korean synonyms (native word / loanword: 축제 / 페스티벌), for Korean memory;
        # after the bridge, whose query words' vectors they reuse.
        synonyms.extend(await _synonyms(embedder, f, query, terms))
        if synonyms:
            synonym_hits.extend(await store.keyword_search(f, synonyms, recipe.candidates, sink=sink))

    # The two candidate lists are independent: fetched side by side (the query embedding and the vector scan
    # overlap the full-text query; all of them run off the event loop).
    try:
        async with anyio.create_task_group() as tg:
            if recipe.use_vectors and embedder is not None:
                tg.start_soon(semantic, embedder)
            if recipe.use_keywords:
                tg.start_soon(keywords)
                if recipe.use_vectors:
                    tg.start_soon(bridge)   # a Korean query's words, embedded while the searches run
    except BaseExceptionGroup as group:
        _raise_first(group)
    if kw_hits is None and qvec is None:
        await keywords()        # no vectors to go by: keywords answer
    if vec_hits and kw_hits is not None and text_script(query) == LATIN:
        # An English query over Korean memory: the Korean nouns that translate its words, among those its best
        # Korean rows use, are the query's own words for Korean rows as a Korean query's synonyms are (merged,
        # and shown by a fallback, the same way). After the vector search, whose rows choose them.
        ko_terms, ko_hits = await _korean_terms(store, f, query, terms, vec_hits, recipe, sink)
        synonyms.extend(ko_terms)
        synonym_hits.extend(ko_hits)
        # The vector search's own rows chose those words, so matching them is no evidence that the search found
        # something (ko 30 memory, questions about other conversations: 19% passed the verdict with it, 7%
        # without; its own questions' recall@10 0.641 → 0.622, the rest answered by the keyword fallback).
        chosen_by_pool = {m.id for m, _bm in ko_hits}
    if (extra or synonyms) and kw_hits is not None:
        literal_bm = {m.id: bm for m, bm in kw_hits}
        chosen_by_pool -= set(literal_bm)
        kw_hits = merge_synonyms(merge_bridged(kw_hits, bridged_hits), synonym_hits)
    cands: dict[str, Candidate] = {}
    for m, cos in vec_hits:
        cands.setdefault(m.id, Candidate(m, cos=cos))
    for m, bm in kw_hits or []:
        c = cands.get(m.id)
        if c is None:
            cands[m.id] = Candidate(m, bm25=bm)
        else:
            c.bm25 = bm
    use_recipe = recipe
    if recipe.cos_floor is None:
        use_recipe = replace(recipe, cos_floor=model_cos_floor(embedder.name) if embedder is not None else 0.0)
    if use_recipe.r_feedback > 0 and vec_hits and kw_hits is not None and text_script(query) == HANGUL:
        # A Korean query's words meet few rows (none, over English memory): the words its best candidates share
        # find the rows about the same subject that the vector search ranked lower (gieok.retrieval.feedback).
        # Kept apart from the query's own BM25, which alone decides the verdict and what a fallback shows.
        top = sorted(cands.values(), key=lambda c: -own_relevance(c, use_recipe))[: use_recipe.feedback_rows]
        more = feedback_terms([c.memory.content for c in top], terms)
        if more:
            # Only words whose matches the store can rank all of: the words a big store's rows nearly all hold
            # (shared by any 3 rows) tell no row apart, and ranking them cost a Korean search at 100,000
            # memories a third of its time.
            found = await store.keyword_search(f, more, use_recipe.feedback_candidates, rankable_only=True,
                                               sink=sink)
            for m, bm in found:
                cands.setdefault(m.id, Candidate(m)).feedback = bm
    if qvec is not None and sink is not None and cands:
        if missing := set(cands) - sink.looked:
            sink.found.update(await store.get_vectors(sorted(missing), sink.model))
        for mid, c in cands.items():
            v = sink.found.get(mid)
            if v is not None:
                c.vector = v
                if c.cos is None or pool_lang is not None:
                    # (A pool found with the language set aside holds that search's cosines: the verdict's
                    # thresholds were measured on the query's own.)
                    c.cos = float(v @ qvec)

    asks = recipe.r_when > 0 and not windows and asks_when(query)
    for c in cands.values():
        c.date_match = date_match(c.memory.created_at, windows)
        c.states_time = asks and states_time(c.memory.content)
    if windows:
        # The times a row's own words name, for the best rows by their own relevance only (as for neighbours):
        # reading a text costs ~100 µs, and a bonus of 0.1–0.3 lifts no row from further down into the top.
        best = sorted(cands.values(), key=lambda c: -own_relevance(c, use_recipe))
        for c in best[: use_recipe.neighbour_candidates]:
            if c.date_match < 1.0:
                said = stated_date_match(c.memory.content, c.memory.created_at, windows)
                if said > c.date_match:
                    c.date_match, c.date_said = said, True
    best_cos = max((c.cos for c in cands.values() if c.cos is not None), default=None)
    if pair_thresholds and best_cos is not None:
        ths, lo, hi = pair_band(query, pair_thresholds, fallback_threshold)
        # Only where words were looked at (the vector recipe never has BM25 evidence to show).
        margin = model_verdict_margin(embedder.name) if embedder is not None and recipe.use_keywords else 0.0
        # Only a candidate whose cosine lies between its own script's threshold and the highest one (plus the
        # margin) can be judged more strictly for the message its vector was computed with (usually none: that
        # takes a candidate in the other script).
        mixed = await embedded_scripts(store, [
            c.memory for c in cands.values()
            if c.cos is not None and ths.get(text_script(c.memory.content), fallback_threshold) <= c.cos < hi + margin])
        best_cos, fallback_threshold = semantic_verdict(cands.values(), ths, lo, hi, fallback_threshold, mixed,
                                                        margin, chosen_by_pool)
    if rendered:
        # After the verdict, which the query's own vector decides (the thresholds were measured on it: with the
        # mean, unrelated questions' best cosines rose more than answerable ones', p95 0.802 → 0.835 on dev).
        # Only English rows: over Korean memory the rendering is a few stray English words (measured on ko 30:
        # recall@10 0.774 → 0.736 when every row took the mean).
        for c in cands.values():
            if c.vector is not None and c.cos is not None and written_in_english(c.memory):
                c.cos = (c.cos + float(c.vector @ rendered[0])) / 2
    mode = "hybrid" if recipe.use_vectors and recipe.use_keywords and qvec is not None else (
        "vector" if qvec is not None else "keyword")
    if qvec is None or best_cos is None or best_cos < fallback_threshold:
        # The seed's rule: a weak best cosine means the semantic search failed; keyword and substring
        # matches answer instead (with no keep threshold: a literal match is worth showing).
        if qvec is not None:
            notes.append(FALLBACK_NOTE)
            mode = "fallback"
        if prefixes and kw_hits is not None and qvec is not None:
            # "가"* meets 가족 as well as 가서: when nothing stored is close to the question, a fallback shows
            # what the query's own words match, a one-syllable verb in its verb forms only ("뭘 썼지?" shows
            # 편지를 쓰고, "갔어" not 가족). (Without vectors at all the keywords are the answer.)
            found = await store.keyword_search(f, terms + verb_form_terms(prefixes), recipe.candidates)
            for m, _bm in found:
                cands.setdefault(m.id, Candidate(m))
            literal_bm = {m.id: bm for m, bm in found}
        if literal_bm is not None:
            # The model's guesses at the query words' translations helped rank; a fallback shows literal and
            # dictionary matches only, as an English query's fallback shows its own words' matches.
            shown = literal_bm
            if translated:
                found = await store.keyword_search(f, translated, recipe.candidates)
                # Every literal hit is a candidate already (kw_hits joined the pool).
                lit = [(cands[k].memory, bm) for k, bm in literal_bm.items()]
                shown = {m.id: bm for m, bm in merge_bridged(lit, found)}
                for m, _bm in found:
                    cands.setdefault(m.id, Candidate(m))
            if synonym_hits:
                # The dictionary's synonyms are the query's own words as much as its translations are: 페스티벌
                # shows the row about a 축제 as it shows an English row about a festival. (Every synonym hit of
                # a Korean row joined the pool with kw_hits.)
                lit = [(cands[k].memory, bm) for k, bm in shown.items()]
                shown = {m.id: bm for m, bm in merge_synonyms(lit, synonym_hits)}
            for k, c in cands.items():
                c.bm25 = shown.get(k)
        # A row created inside a window the query names matches what the query says in so many words, as a
        # keyword match does: "2023년 3월에 뭐 했어?" shows March 2023 (its other words meet nothing). A word
        # shared by chance does not: a row further from the query in meaning than an unrelated text is ("how do I
        # get to the airport?" showed "The puppy gets chicken and rice on Sundays" for "get": cosine 0.72 where
        # chance is 0.78). Judged the verdict's margin below the level of chance, in the query's own script: on
        # dev, of the 669 evidence rows that share a word with their question in its script, 2 lie there and none
        # 0.04 below; of 57,937 other such rows, 3,871 do. A row with no vector yet is kept (its words are all
        # it has).
        stray = stray_word_match(embedder, query) if qvec is not None else None
        cands = {k: c for k, c in cands.items() if c.date_match or (c.bm25 and not (stray and stray(c)))}
        for m in await store.substring_search(f, query, recipe.candidates):
            c = cands.get(m.id)
            if c is None:
                cands[m.id] = Candidate(m, substring=True, bm25=1.0)
            else:
                c.substring = True
        # No keep threshold at all: the duplication penalty can take a score below zero, and a literal match
        # must not be dropped for resembling another ("coffee" over an English row and its Korean twin, whose
        # English glosses also match: the English row fell out).
        use_recipe = replace(use_recipe, keep_threshold=float("-inf"), r_cos=0.0, r_bm25=max(recipe.r_bm25, 0.3))
        for c in cands.values():
            c.feedback = 0.0    # the vector search's guesses, and it found nothing close
    if lang is not None and qvec is not None and use_recipe.r_cos > 0:
        _set_language_aside(lang, qvec, cands.values(), bool(rendered))
    if qvec is not None and embedder is not None and cands and use_recipe.r_cos > 0 and use_recipe.r_neighbour > 0:
        await neighbour_cosines(store, embedder.name, f, cands, qvec, rendered, use_recipe, lang)
    if qvec is not None and embedder is not None and use_recipe.r_cos > 0 and pair_thresholds:
        set_cosine_only_floors(cands.values(), query, pair_thresholds, no_match)
    hits = rank(list(cands.values()), query_tokens=tokens, query_text=query, now=now, recipe=use_recipe,
                limit=limit)
    # An error in the query: past turns with the same error fingerprint go first, with what fixed it.
    hits = await with_same_error(store, f, query, hits, limit=limit)
    if FALLBACK_NOTE in notes and (not hits or any(h.parts.get("date") and not h.parts.get("bm25") for h in hits)):
        notes[notes.index(FALLBACK_NOTE)] = FALLBACK_DATES_NOTE if hits else NOTHING_NOTE
    return SearchOutcome(hits, mode, notes)


def _set_language_aside(lang: LanguageDirections, qvec: Vector, cands: Iterable[Candidate], rendered: bool) -> None:
    """Each candidate's cosine compared with the language set aside (after the verdict, which the thresholds
    measured on the query's own cosines decide): a Korean question then finds the English row that answers it
    above Korean chat about something else. Dev recall@5 / @10, Korean questions about 26 with ko 30 beside it:
    0.626 / 0.740 → 0.661 / 0.781; English questions about ko 30, 26 beside: 0.605 / 0.693 → 0.643 / 0.722;
    one-language memories within 0.005 (English 0.810 / 0.865 → 0.810 / 0.862, ko 30 0.744 / 0.836 → 0.739 /
    0.831). An English row whose cosine is the mean with the query's English rendering moves half as far:
    that half has no language between them."""
    with_vectors = [(c, c.vector) for c in cands if c.vector is not None and c.cos is not None]
    if not with_vectors:
        return
    rows = np.stack([v for _c, v in with_vectors])
    for (c, _v), shift in zip(with_vectors, lang.shifts(qvec, rows), strict=True):
        c.language_shift = float(shift) / (2 if rendered and written_in_english(c.memory) else 1)


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


async def _korean_terms(store: Store, f: SearchFilters, query: str, terms: list[list[str]],
                        vec_hits: list[tuple[Memory, float]], recipe: Recipe,
                        sink: VectorSink | None) -> tuple[list[list[str]], list[tuple[Memory, float]]]:
    """Korean terms for an English query (gieok.retrieval.en_ko) and their full-text hits; none when the
    semantic search's best rows hold no Korean."""
    best = sorted(vec_hits, key=lambda t: -t[1])[: en_ko.POOL]
    pool = [m.content for m, _cos in best if not written_in_english(m)]
    if not pool:
        return [], []
    await en_ko.ready()
    ko = en_ko.korean_terms(query, pool, have=terms)
    if not ko:
        return [], []
    # Only words whose matches the store can rank all of, as for a Korean query's feedback words: the pool's rows
    # chose them, so their own rows are candidates already, and a translation that more rows hold than a store
    # ranks (회의, "meeting", in a big Korean memory) would add only its newest matches, which say nothing about
    # which rows are about it (ranking them took 18 of an English query's 45 ms at 100,000 memories, PostgreSQL).
    return ko, await store.keyword_search(f, ko, recipe.candidates, rankable_only=True, sink=sink)


async def _rendered(embedder: Embedder, english: str, user_id: str) -> list[Vector]:
    """The query vector of the bridge's English rendering (remembered with the user's query words: a repeated
    question costs no model call); none when the embedder fails (the Korean query's own vector still searches)."""
    vecs = await _or_nothing("rendered query", embed_words(embedder, [english], user_id=user_id), None)
    return [] if vecs is None else [vecs[0]]


async def _newest(store: Store, f: SearchFilters, limit: int, notes: list[str]) -> SearchOutcome:
    """The newest rows the filters let through: what a search with nothing to look for answers."""
    rows = await store.list_memories(f, limit=limit)
    return SearchOutcome([Hit(m, 1.0, {}, ["matches filters (newest first)"]) for m in rows], "recent", notes)

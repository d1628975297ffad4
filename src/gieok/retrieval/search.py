"""A search from query to ranked hits (ARCHITECTURE §6): its arms' candidates (gieok.retrieval.arms) joined,
their vectors and dates read, the verdict on whether anything is close in meaning, the keyword fallback when
nothing is, and the ranking."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime

import numpy as np

from gieok.core.models import Hit, SearchFilters
from gieok.core.text import has_content_words, prefix_terms, query_terms, verb_form_terms
from gieok.providers.embed.base import Embedder
from gieok.providers.embed.priority import GATE
from gieok.retrieval import ko_glosses
from gieok.retrieval.arms import Arms
from gieok.retrieval.bridge import merge_bridged
from gieok.retrieval.doc_text import embedded_scripts
from gieok.retrieval.feedback import feedback_terms
from gieok.retrieval.hubs import model_probes
from gieok.retrieval.ko_synonyms import merge_synonyms
from gieok.retrieval.language_direction import LanguageDirections, model_language_directions
from gieok.retrieval.model_cosines import model_cos_floor, model_verdict_margin
from gieok.retrieval.neighbours import neighbour_cosines
from gieok.retrieval.order_words import asks_order
from gieok.retrieval.query_dates import Window, date_match, query_windows, stated_date_match
from gieok.retrieval.ranking import Candidate, own_relevance, rank
from gieok.retrieval.recipes import Recipe
from gieok.retrieval.same_error import with_same_error
from gieok.retrieval.scripts import HANGUL, LATIN, text_script, written_in_english
from gieok.retrieval.shared_words import joined, name_shared_words, needs_glosses
from gieok.retrieval.shown import set_cosine_only_floors, stray_word_match
from gieok.retrieval.time_words import asks_when, states_time
from gieok.retrieval.verdict import pair_band, semantic_verdict
from gieok.store.base import Store, Vector, VectorSink

# What a search says when the semantic search found nothing close: for the person or agent reading it (the
# numbers are in each result's score parts and in `mode`).
FALLBACK_NOTE = "no close match; showing keyword matches"
NOTHING_NOTE = "nothing stored matches this, in meaning or in words"
FALLBACK_DATES_NOTE = "no close match; showing keyword matches and what was stored on the dates it names"
NO_WORDS_NOTE = "the question names nothing to look for; showing the newest memories"
ARCHIVED_NOTE = "nothing current matches this; showing archived memory"
ARCHIVED_REASON = "archived (forgotten as unused; still kept)"
NOTE_WORDS = 5      # the shared words a fallback's note names at most (each result's reason names its own)


@dataclass(slots=True)
class SearchOutcome:
    hits: list[Hit]
    mode: str                       # hybrid | vector | keyword | fallback | recent
    notes: list[str] = field(default_factory=list)
    # The query's vector, for a second look with the same query (the archive pass) without embedding it again.
    query_vector: Vector | None = field(default=None, repr=False)


async def search(store: Store, embedder: Embedder | None, f: SearchFilters, query: str, *, limit: int,
                 recipe: Recipe, now: datetime, fallback_threshold: float,
                 pair_thresholds: Mapping[tuple[str, str], float] | None = None) -> SearchOutcome:
    """`fallback_threshold`: the best cosine under which the semantic search counts as failed;
    `pair_thresholds`: the same per (query script, memory script) where the model's cosine band differs
    (gieok.retrieval.ranking), other pairs using `fallback_threshold`."""
    # While a search runs, the librarian's document embedding waits at its next chunk (priority.GATE): the
    # whole search, since its database reads and ranking slow down beside a batch as much as its embedding.
    with GATE.query():
        out = await _search(store, embedder, f, query, limit=limit, recipe=recipe, now=now,
                            fallback_threshold=fallback_threshold, pair_thresholds=pair_thresholds)
        # Whether the caller may see any archived row: a teammate's search counts its team's and public ones too.
        if out.mode != "fallback" or f.include_archived or not await store.has_archived(f.user_id, f.viewer):
            return out
        # Nothing active is close in meaning: forgetting archives what was not used (a conversation's turns some
        # months after the librarian consolidated them), and archived is not gone. The archive is asked too, by
        # meaning only (the vector arm: a whole second search with its keywords cost a fallback at 100,000
        # memories p95 68 ms), and what it holds close to the question is shown, marked; only when the active
        # memory had nothing close, so a search that finds what it asks for costs no more.
        old = await _search(store, embedder, replace(f, include_archived=True), query, limit=limit,
                            recipe=replace(recipe, use_keywords=False), now=now,
                            fallback_threshold=fallback_threshold, pair_thresholds=pair_thresholds,
                            qvec=out.query_vector)
        if old.mode == "fallback" or not any(not h.memory.is_active for h in old.hits):
            return out
        for h in old.hits:
            if not h.memory.is_active:
                h.recall_reason.append(ARCHIVED_REASON)
        old.notes.append(ARCHIVED_NOTE)
        return old


async def _search(store: Store, embedder: Embedder | None, f: SearchFilters, query: str, *, limit: int,
                  recipe: Recipe, now: datetime, fallback_threshold: float,
                  pair_thresholds: Mapping[tuple[str, str], float] | None,
                  qvec: Vector | None = None) -> SearchOutcome:
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
    tokens = {t for term in terms for t in term} | {w for w in query.lower().split()}
    # The candidates' vectors: each search reads its rows' with the rows (one query, not a second round trip for
    # them after it); only the few candidates no search returned (none, usually) are fetched after.
    sink = VectorSink(embedder.name) if embedder is not None and recipe.use_vectors else None
    # How far the model sets Korean apart from English of the same meaning (gieok.retrieval.language_direction):
    # set aside when rows are ranked by cosine, where measured for the model.
    lang = model_language_directions(embedder.name) if embedder is not None else None
    # An English query's vector search looks with the language set aside: its Korean rows' words become the
    # query's Korean words (arms._korean_terms), so which Korean rows its pool holds matters. Dev recall@5 / @10,
    # English questions over Korean memory (ko 30): 0.624 / 0.722 → 0.634 / 0.731, with 26 beside it 0.643 /
    # 0.722 → 0.672 / 0.750; a Korean query's pool is better as it was (Korean questions about 26, ko 30 beside:
    # 0.661 / 0.781 → 0.659 / 0.763), its English rows found by the bridge's words.
    pool_lang = lang if text_script(query) == LATIN else None
    # One-syllable verb stems ("썼어" → 쓰) match as prefixes: ranking evidence, not a literal match to show.
    arms = Arms(store, embedder, f, query, terms, prefix_terms(query), windows, recipe, sink, pool_lang, qvec=qvec)
    await arms.run()
    qvec, notes = arms.qvec, arms.notes

    cands: dict[str, Candidate] = {}
    for m, cos in arms.vec_hits:
        cands.setdefault(m.id, Candidate(m, cos=cos))
    for m, bm in arms.kw_hits or []:
        c = cands.get(m.id)
        if c is None:
            cands[m.id] = Candidate(m, bm25=bm)
        else:
            c.bm25 = bm
    use_recipe = recipe
    if recipe.cos_floor is None:
        use_recipe = replace(recipe, cos_floor=model_cos_floor(embedder.name) if embedder is not None else 0.0)
    if use_recipe.r_feedback > 0 and arms.vec_hits and arms.kw_hits is not None and text_script(query) == HANGUL:
        await _add_feedback(arms, cands, use_recipe)
    if qvec is not None and sink is not None and cands:
        await _read_vectors(store, sink, cands, qvec, language_aside=pool_lang is not None)
    _mark_dates(cands, query, windows, use_recipe)

    best_cos = max((c.cos for c in cands.values() if c.cos is not None), default=None)
    if pair_thresholds and best_cos is not None:
        best_cos, fallback_threshold = await _verdict(arms, cands, pair_thresholds, fallback_threshold)
    if arms.rendered:
        _mean_with_rendering(cands, arms.rendered[0])
    mode = "hybrid" if recipe.use_vectors and recipe.use_keywords and qvec is not None else (
        "vector" if qvec is not None else "keyword")
    if qvec is None or best_cos is None or best_cos < fallback_threshold:
        # The seed's rule: a weak best cosine means the semantic search failed; keyword and substring
        # matches answer instead (with no keep threshold: a literal match is worth showing).
        if qvec is not None:
            notes.append(FALLBACK_NOTE)
            mode = "fallback"
        cands = await _fallback(arms, cands)
        # No keep threshold at all: the duplication penalty can take a score below zero, and a literal match
        # must not be dropped for resembling another ("coffee" over an English row and its Korean twin, whose
        # English glosses also match: the English row fell out).
        use_recipe = replace(use_recipe, keep_threshold=float("-inf"), r_cos=0.0, r_bm25=max(recipe.r_bm25, 0.3))
    if lang is not None and qvec is not None and use_recipe.r_cos > 0:
        _set_language_aside(lang, qvec, cands.values(), bool(arms.rendered))
    if qvec is not None and embedder is not None and cands and use_recipe.r_cos > 0 and use_recipe.r_neighbour > 0:
        await neighbour_cosines(store, embedder.name, f, cands, qvec, arms.rendered, use_recipe, lang)
    if qvec is not None and embedder is not None and use_recipe.r_cos > 0 and pair_thresholds:
        set_cosine_only_floors(cands.values(), query, pair_thresholds, no_match, model_probes(embedder.name))
    hits = rank(list(cands.values()), query_tokens=tokens, query_text=query, now=now, recipe=use_recipe,
                limit=limit, order=asks_order(query))
    # An error in the query: past turns with the same error fingerprint go first, with what fixed it.
    hits = await with_same_error(store, f, query, hits, limit=limit)
    if needs_glosses(hits, query):
        await ko_glosses.ready()
    named = name_shared_words(hits, query, [*arms.translated, *arms.synonyms], arms.translated_from)
    if FALLBACK_NOTE in notes and (not hits or any(h.parts.get("date") and not h.parts.get("bm25") for h in hits)):
        notes[notes.index(FALLBACK_NOTE)] = FALLBACK_DATES_NOTE if hits else NOTHING_NOTE
    elif FALLBACK_NOTE in notes and named:
        # The words say why these rows were shown when nothing is close in meaning: the reader can judge them.
        notes[notes.index(FALLBACK_NOTE)] = f"{FALLBACK_NOTE} ({joined(named[:NOTE_WORDS])})"
    return SearchOutcome(hits, mode, notes, qvec)


async def _add_feedback(arms: Arms, cands: dict[str, Candidate], recipe: Recipe) -> None:
    """A Korean query's words meet few rows (none, over English memory): the words its best candidates share
    find the rows about the same subject that the vector search ranked lower (gieok.retrieval.feedback). Kept
    apart from the query's own BM25, which alone decides the verdict and what a fallback shows."""
    top = sorted(cands.values(), key=lambda c: -own_relevance(c, recipe))[: recipe.feedback_rows]
    more = feedback_terms([c.memory.content for c in top], arms.terms)
    if more:
        # Only words whose matches the store can rank all of: the words a big store's rows nearly all hold
        # (shared by any 3 rows) tell no row apart, and ranking them cost a Korean search at 100,000
        # memories a third of its time.
        found = await arms.store.keyword_search(arms.f, more, recipe.feedback_candidates, rankable_only=True,
                                                sink=arms.sink)
        for m, bm in found:
            cands.setdefault(m.id, Candidate(m)).feedback = bm


async def _read_vectors(store: Store, sink: VectorSink, cands: Mapping[str, Candidate], qvec: Vector, *,
                        language_aside: bool) -> None:
    """Each candidate's vector, and its cosine to the query where no vector search gave it one."""
    if missing := set(cands) - sink.looked:
        sink.found.update(await store.get_vectors(sorted(missing), sink.model))
    for mid, c in cands.items():
        v = sink.found.get(mid)
        if v is not None:
            c.vector = v
            if c.cos is None or language_aside:
                # (A pool found with the language set aside holds that search's cosines: the verdict's
                # thresholds were measured on the query's own.)
                c.cos = float(v @ qvec)


def _mark_dates(cands: Mapping[str, Candidate], query: str, windows: list[Window], recipe: Recipe) -> None:
    """Each candidate's match to the dates the query names, and whether it states a time for a "when" question."""
    asks = recipe.r_when > 0 and not windows and asks_when(query)
    for c in cands.values():
        c.date_match = date_match(c.memory.created_at, windows)
        c.states_time = asks and states_time(c.memory.content)
    if windows:
        # The times a row's own words name, for the best rows by their own relevance only (as for neighbours):
        # reading a text costs ~100 µs, and a bonus of 0.1–0.3 lifts no row from further down into the top.
        best = sorted(cands.values(), key=lambda c: -own_relevance(c, recipe))
        for c in best[: recipe.neighbour_candidates]:
            if c.date_match < 1.0:
                said = stated_date_match(c.memory.content, c.memory.created_at, windows)
                if said > c.date_match:
                    c.date_match, c.date_said = said, True


async def _verdict(arms: Arms, cands: Mapping[str, Candidate], pair_thresholds: Mapping[tuple[str, str], float],
                   fallback_threshold: float) -> tuple[float | None, float]:
    """Whether the semantic search found something close (gieok.retrieval.verdict): the best cosine it counts
    and the threshold that cosine must reach."""
    ths, lo, hi = pair_band(arms.query, pair_thresholds, fallback_threshold)
    # Only where words were looked at (the vector recipe never has BM25 evidence to show).
    embedder = arms.embedder
    margin = model_verdict_margin(embedder.name) if embedder is not None and arms.recipe.use_keywords else 0.0
    # Only a candidate whose cosine lies between its own script's threshold and the highest one (plus the
    # margin) can be judged more strictly for the message its vector was computed with (usually none: that
    # takes a candidate in the other script).
    mixed = await embedded_scripts(arms.store, [
        c.memory for c in cands.values()
        if c.cos is not None and ths.get(text_script(c.memory.content), fallback_threshold) <= c.cos < hi + margin])
    return semantic_verdict(cands.values(), ths, lo, hi, fallback_threshold, mixed, margin, arms.chosen_by_pool)


def _mean_with_rendering(cands: Mapping[str, Candidate], rendered: Vector) -> None:
    """An English row's cosine becomes the mean of its cosines to the query and to the query's English rendering.
    After the verdict, which the query's own vector decides (the thresholds were measured on it: with the mean,
    unrelated questions' best cosines rose more than answerable ones', p95 0.802 → 0.835 on dev). Only English
    rows: over Korean memory the rendering is a few stray English words (measured on ko 30: recall@10 0.774 →
    0.736 when every row took the mean)."""
    for c in cands.values():
        if c.vector is not None and c.cos is not None and written_in_english(c.memory):
            c.cos = (c.cos + float(c.vector @ rendered)) / 2


async def _fallback(arms: Arms, cands: dict[str, Candidate]) -> dict[str, Candidate]:
    """What a search shows when nothing stored is close in meaning: the query's own words' matches (its
    translations' and synonyms' too), the rows of the dates it names, and its substring's matches."""
    store, f, query, recipe = arms.store, arms.f, arms.query, arms.recipe
    literal_bm = arms.literal_bm
    if arms.prefixes and arms.kw_hits is not None and arms.qvec is not None:
        # "가"* meets 가족 as well as 가서: when nothing stored is close to the question, a fallback shows
        # what the query's own words match, a one-syllable verb in its verb forms only ("뭘 썼지?" shows
        # 편지를 쓰고, "갔어" not 가족). (Without vectors at all the keywords are the answer.)
        found = await store.keyword_search(f, arms.terms + verb_form_terms(arms.prefixes), recipe.candidates)
        for m, _bm in found:
            cands.setdefault(m.id, Candidate(m))
        literal_bm = {m.id: bm for m, bm in found}
    if literal_bm is not None:
        # The model's guesses at the query words' translations helped rank; a fallback shows literal and
        # dictionary matches only, as an English query's fallback shows its own words' matches.
        shown = literal_bm
        if arms.translated:
            found = await store.keyword_search(f, arms.translated, recipe.candidates)
            # Every literal hit is a candidate already (kw_hits joined the pool).
            lit = [(cands[k].memory, bm) for k, bm in literal_bm.items()]
            shown = {m.id: bm for m, bm in merge_bridged(lit, found)}
            for m, _bm in found:
                cands.setdefault(m.id, Candidate(m))
        if arms.synonym_hits:
            # The dictionary's synonyms are the query's own words as much as its translations are: 페스티벌
            # shows the row about a 축제 as it shows an English row about a festival. (Every synonym hit of
            # a Korean row joined the pool with kw_hits.)
            lit = [(cands[k].memory, bm) for k, bm in shown.items()]
            shown = {m.id: bm for m, bm in merge_synonyms(lit, arms.synonym_hits)}
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
    stray = stray_word_match(arms.embedder, query) if arms.qvec is not None else None
    cands = {k: c for k, c in cands.items() if c.date_match or (c.bm25 and not (stray and stray(c)))}
    # The query as a substring: a piece the words do not split at (an identifier, a path, part of a word:
    # "RefundService.java:88", "checkout_to"). Only for a query of one piece: a question of several words is
    # no substring of anything the full-text search has not found by its words, and on SQLite the scan read
    # every row (159 ms per fallback at 100,000 memories, most of a fallback's time).
    needle = query if len(query.split()) == 1 else ""
    for m in await store.substring_search(f, needle, recipe.candidates):
        if (had := cands.get(m.id)) is None:
            cands[m.id] = Candidate(m, substring=True, bm25=1.0)
        else:
            had.substring = True
    for c in cands.values():
        c.feedback = 0.0    # the vector search's guesses, and it found nothing close
    return cands


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


async def _newest(store: Store, f: SearchFilters, limit: int, notes: list[str]) -> SearchOutcome:
    """The newest rows the filters let through: what a search with nothing to look for answers."""
    rows = await store.list_memories(f, limit=limit)
    return SearchOutcome([Hit(m, 1.0, {}, ["matches filters (newest first)"]) for m in rows], "recent", notes)

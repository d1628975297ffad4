"""The English gloss of each Korean word of a text: what the librarian adds to a Korean row's full-text document
(gieok.librarian.glosses, where the measurements are), and what a result names when an English query met the row
by it (gieok.retrieval.shared_words: "keyword match: deposit → 보증금", `glossing_words`).

Each word is looked up as written and under its stem (gieok.retrieval.ko_lexicon), and gives the words of its
usual gloss (gieok.retrieval.ko_sense_order: 잃다, "be bereft of; be deprived of; lose; miss", gives "lose"), or
of the dictionary's first where the model ranked none (a word with one gloss). Function words have none.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from functools import lru_cache

from gieok.core.korean import query_stem
from gieok.core.korean_adnominal import adnominal_words
from gieok.core.text import function_word, stem_word
from gieok.retrieval import ko_lexicon, ko_sense_order
from gieok.retrieval.ko_lexicon import sense_words
from gieok.retrieval.ko_sense_order import senses_loaded, spells, usual_sense

__all__ = ["gloss_words", "glossing_words", "loaded", "ready", "word_gloss"]

HANGUL_RUN = re.compile("[\uac00-\ud7af]+")


def gloss_words(text: str) -> list[str]:
    """The English words of the glosses of `text`'s Korean words, in order. Call after `await ready()` (or
    `ko_lexicon.ready()`: the sense order is read on first use)."""
    out: list[str] = []
    adn = adnominal_words(text)
    for w in HANGUL_RUN.findall(text):
        out.extend(word_gloss(w, adnominal=w in adn))
    return out


def glossing_words(text: str, tokens: Collection[str], limit: int) -> tuple[dict[str, str], int]:
    """Each of `tokens` (English words' full-text tokens) that the gloss of one of `text`'s first `limit` distinct
    Korean words holds → the first such word, as the text writes it without its particle or ending: the
    headword it was found under where the text begins with it (보증금은 → 보증금, 고양이 → 고양이 and not the stem
    고양), else its stem (시작했어 → 시작, filed under 시작하). Also returns how many words were read: a word not
    glossed before costs ~35 µs, so a caller reading many rows bounds them."""
    out: dict[str, str] = {}
    seen: set[str] = set()
    adn = adnominal_words(text)
    for w in HANGUL_RUN.findall(text):
        if w in seen:
            continue
        if len(seen) >= limit or len(out) == len(tokens):
            break
        seen.add(w)
        for g in word_gloss(w, adnominal=w in adn):
            t = stem_word(g)
            if t in tokens and t not in out:
                found = ko_lexicon.lookup(w)
                out[t] = found[0] if found and len(found[0]) >= 2 and w.startswith(found[0]) else query_stem(w)
    return out, len(seen)


@lru_cache(maxsize=16384)
def word_gloss(word: str, *, adnominal: bool = False) -> tuple[str, ...]:
    """The English words of one Korean word's gloss; none for a function word or a word the dictionary lacks.
    `adnominal`: a one-syllable word before a noun, read as a verb first (gieok.core.korean_adnominal)."""
    # Per word, remembered: a long message repeats its words, and the librarian runs on the event loop (a
    # 64 KB message of one repeated word took 0.75 s uncached).
    if function_word(word):
        return ()
    stem = query_stem(word)
    found = ko_lexicon.lookup_written(word, stem, adnominal=adnominal)
    if found is None:
        return ()
    key, all_senses = found
    # A gloss that only spells the word in Latin letters ("geuraeseo" for 그래서) translates nothing. The usual
    # sense is checked alone first: spelling out every sense cost ~0.1 ms a word.
    usual = usual_sense(key, all_senses)
    if usual is not None and not spells(usual, word, stem, key):
        return tuple(sense_words(usual))
    senses = tuple(s for s in all_senses if s != usual and not spells(s, word, stem, key))
    return tuple(sense_words(senses[0])) if senses else ()


def loaded() -> bool:
    """Whether glossing reads nothing from disk: a search names glosses only then, and never waits for them."""
    return ko_lexicon.loaded() and senses_loaded()


async def ready() -> None:
    """The dictionary and the sense order, read off the event loop the first time."""
    await ko_lexicon.ready()
    await ko_sense_order.ready()

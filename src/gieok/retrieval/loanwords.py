"""Whether a Korean word sounds like an English one: a loanword next to its original (레디스 / Redis, 깃허브 / GitHub).

Korean developers write the tools they use in Hangul (레디스, 도커, 쿠버네티스, 슬랙, 노션), and few of these words are
in a dictionary. The embedding model places most of them next to their English original (레디스 → redis 0.90), but
just as close, in a large vocabulary, are words that only share its neighbourhood (주는 → yay, 오프닝 → promotion).
A loanword also *sounds* like its original, which a chance neighbour does not: both are reduced to a consonant
skeleton in the classes Korean spelling keeps apart (r/l as one, k/c/q/g, p/f/b/v, t/d, s/z/j/ch/sh, m, n, ng;
vowels, h, w and y dropped, a doubled class once) and compared. Korean spelling adds its own sounds (ㅅ at a
syllable's end is said t: 깃 → git; an English r after a vowel is not written: 서버 → server, 멘토 → mentor), so
those are folded in first.

The skeleton leaves vowels out, so a Korean name sounds like a place written in Latin letters (민호 and mangwon
are both "MN"). An English word that is itself Korean in Latin letters (it reads as Revised Romanization
syllables: mangwon, minsu, yuna) is therefore compared vowels and all (`spelled_alike`), where an English word's
vowels, which Korean spelling changes (notion / 노션, data / 데이터), are not. Korean's own spelling of a loanword
adds ㅡ between consonants (후드티, hoodie), which is left out.
"""

from __future__ import annotations

import difflib
import re
from functools import lru_cache

from anyascii import anyascii

_BASE, _FINALS = 0xAC00, 28
_FINAL_S = (19, 20)         # ㅅ, ㅆ as a syllable's final: said t
_CLASSES = {"r": "L", "l": "L", "k": "K", "c": "K", "q": "K", "g": "K", "x": "K", "p": "P", "f": "P", "b": "P",
            "v": "P", "t": "T", "d": "T", "s": "S", "z": "S", "j": "S", "m": "M", "n": "N"}
_EN_SOFT = re.compile(r"tion|sion|ch|sh|ng|r(?![aeiouy])")
# How alike the two skeletons must be (difflib's ratio). Measured on 36 developer loanwords against their
# originals (a third of them 1.0; the lowest kept 0.75: 시크릿 / secret) and on 17 Korean words' chance
# neighbours in a vocabulary (the highest 0.67: 도자기 / docker; 그린 / green is both).
MIN_LIKENESS = 0.75


def _skeleton(letters: str) -> str:
    out: list[str] = []
    for ch in letters:
        k = ch if ch in "SN" else _CLASSES.get(ch, "")     # S, N: already a class (ch, sh, -tion; ng)
        if k and (not out or out[-1] != k):
            out.append(k)
    return "".join(out)


@lru_cache(maxsize=4096)
def korean_skeleton(word: str) -> str:
    """The consonant skeleton of a Hangul word, as its romanisation sounds."""
    parts = []
    for ch in word:
        code = ord(ch) - _BASE
        latin = anyascii(ch).lower()
        if 0 <= code < 11172 and code % _FINALS in _FINAL_S:
            latin = latin.rstrip("s") + "t"
        parts.append(latin.replace("ng", "N"))
    return _skeleton("".join(parts))


def english_skeleton(word: str) -> str:
    """The consonant skeleton of an English word, as Korean spelling would keep it."""
    w = word.lower()
    w = _EN_SOFT.sub(lambda m: {"tion": "Sn", "sion": "Sn", "ch": "S", "sh": "S", "ng": "N"}.get(m.group(), ""), w)
    return _skeleton(w)


# Revised Romanization syllables: an initial, a vowel, a final.
_ROMANIZED = re.compile(r"(?:(?:kk|tt|pp|ss|jj|ch|[gndrlmbsjkthp])?"
                        r"(?:yae|wae|yeo|ae|ya|eo|ye|wa|oe|yo|wo|we|wi|yu|eu|ui|[aeoui])(?:ng|[kntlmp])?)+")
# Vowels as the romanizations of names spell them (jihoon, jihun; jeong, jung), and each consonant by its class.
_VOWELS = (("oo", "u"), ("ee", "i"), ("ie", "i"), ("eo", "o"), ("eu", ""), ("ae", "e"))
# A Korean word and a romanized one alike at least this much (difflib's ratio): 지훈 / jihoon, 정식 / jungsik
# 0.83, 망고 / mango 0.89, 하둡 / hadoop 1.0; 민호 / mangwon 0.67.
MIN_SPELLED = 0.75


def romanized(english: str) -> bool:
    """Whether a Latin word reads as Korean written in Revised Romanization (mangwon, minsu, jira)."""
    return bool(_ROMANIZED.fullmatch(english.lower()))


def _spelling(latin: str) -> str:
    w = latin.lower().replace("ng", "N")
    for a, b in _VOWELS:
        w = w.replace(a, b)
    return "".join(ch if ch in "aeiouN" else _CLASSES.get(ch, "") for ch in w)


def _spelled_likeness(korean: str, latin: str) -> float:
    k, e = _spelling(anyascii(korean)), _spelling(latin)
    return difflib.SequenceMatcher(None, k, e).ratio() if k and e else 0.0


def spelled_alike(korean: str, english: str) -> bool:
    """Whether `korean` (Hangul) is `english` (Korean in Latin letters) spelled out, vowels and all."""
    return _spelled_likeness(korean, english) >= MIN_SPELLED


# A name in Hangul and in Latin letters (존 / Jon, 지나 / Gina, 멜라니 / Melanie) spelled alike at least this much:
# closer than `spelled_alike`, which lets 존재 ("existence") pass for jon.
MIN_NAME_SPELLED = 0.85
_SOFT_G = re.compile(r"g(?=[eiy])")


def soft_g(latin: str) -> str:
    """`latin` (lower-case) with a g before e, i or y said j, as Korean writes a name (Gina / 지나, George / 조지)."""
    return _SOFT_G.sub("j", latin)


def names_alike(korean: str, latin: str) -> bool:
    """Whether `korean` (Hangul) and `latin` spell the same name: Korean in Latin letters, or an English name as
    Korean writes it (a g before e, i or y is said j: Gina / 지나)."""
    return _spelled_likeness(korean, soft_g(latin.lower())) >= MIN_NAME_SPELLED


def sounds_alike(korean: str, english: str) -> bool:
    """Whether `korean` (Hangul) is plausibly `english` written in Hangul."""
    k = korean_skeleton(korean)
    return bool(k) and any(difflib.SequenceMatcher(None, k, e).ratio() >= MIN_LIKENESS
                           for e in _english_readings(english))


# "th" is written ㅅ or ㅆ where English says it voiceless (python / 파이썬, thread / 스레드, thumbnail / 썸네일)
# and ㄷ or ㅌ elsewhere (theme / 테마, Athena / 아테나), and a t and an h of two syllables stay apart (github /
# 깃허브): both readings are tried.
_TH = re.compile("th", re.IGNORECASE)


@lru_cache(maxsize=4096)
def _english_readings(english: str) -> tuple[str, ...]:
    # Remembered, as korean_skeleton is: an English query over Korean rows hears each of its words against many
    # of the pool's stems (gieok.retrieval.en_ko).
    plain = english_skeleton(english)
    if not _TH.search(english):
        return (plain,) if plain else ()
    return tuple(e for e in dict.fromkeys((plain, english_skeleton(_TH.sub("s", english)))) if e)


# A loanword's skeleton must hold at least this many consonant classes to be taken on its sound alone
# (`exact_sound`): two (도커 / docker "TK") also fit dog, take and tick.
MIN_EXACT_CLASSES = 3


def exact_sound(korean: str, english: str) -> bool:
    """Whether `korean` (Hangul) and `english` reduce to the same skeleton of at least MIN_EXACT_CLASSES classes
    (사파리 / safari "SPL", 젠킨스 / jenkins, 피그마 / figma): a loanword next to its original, surer than
    `sounds_alike`'s likeness."""
    k = korean_skeleton(korean)
    if len(k) < MIN_EXACT_CLASSES:
        return False
    # A vocabulary keeps words as written: containers / 컨테이너 is heard without its plural.
    single = _singular(english)
    return k in _english_readings(english) or (single != english and k in _english_readings(single))


def _singular(english: str) -> str:
    """`english` without a plural s (containers → container; not class, not bus)."""
    return english[:-1] if len(english) > 3 and english.endswith("s") and not english.endswith("ss") else english


_EU = 18            # ㅡ among the vowels of a Hangul syllable
_VOWEL_END = frozenset("aiouy")


def ends_unlike(korean: str, english: str) -> bool:
    """Whether `korean` ends as Korean spells a final consonant (a bare ㅡ syllable: 플래그, 코드, 슬랙스) while
    `english` (without a plural s) ends in a vowel: of two words with one skeleton, 플래그 is flag(s), not flaky."""
    last = ord(korean[-1]) - _BASE if korean else -1
    if not 0 <= last < 11172 or last % _FINALS or (last // _FINALS) % 21 != _EU:
        return False
    return _singular(english)[-1:].lower() in _VOWEL_END

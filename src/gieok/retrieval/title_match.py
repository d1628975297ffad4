"""Whether a query names a row's title (ranking's `r_title`): as a word, not as a piece of one.

A substring test made a speaker called 지나 the title of every question about a passing time ("지나간 주말에 …",
"지나서") and a note titled "AI" a match for "how do we maintain it?". The title must start a word of the query
(or the query a word of the title) and end one: followed by nothing, by a character that is no letter, or, after
the Korean way, by a particle alone ("존은", "Caroline이랑", "지나한테"), or by an honorific ("혜진님", "민수씨한테").

A name also counts when the query writes it in the other script and it spells the title
(gieok.retrieval.loanwords.names_alike): an English agent asking "how is Jon's store doing?" over a Korean chat whose
rows are titled 존 names him as a Korean question does. Measured on dev, English questions over the Korean
conversation 30 (recall@5 / @10 / @20): 0.658 / 0.750 / 0.784 → 0.653 / 0.760 / 0.799; without the adversarial
category (questions that name the wrong person, which a title's weight always costs) 0.630 / 0.726 / 0.745 → 0.655 /
0.726 / 0.777. With English conversation 26 beside it: 0.682 / 0.750 / 0.806 → 0.653 / 0.739 / 0.808, and without the
adversarial category 0.661 / 0.726 / 0.785 → 0.686 / 0.742 / 0.801.
"""

from __future__ import annotations

import re
from functools import lru_cache

from gieok.core.korean import HONORIFICS, is_suffix
from gieok.retrieval.loanwords import names_alike

_HANGUL_RUN = re.compile(r"[\uac00-\ud7a3]+")
_LATIN_WORD = re.compile(r"[a-z]+")
# A name in Hangul has at most this many syllables; one in Latin letters at least this many (a note titled "AI"
# is not named by 아이, "child").
_NAME_SYLLABLES = 4
_LATIN_NAME_MIN = 3


def _word_at(text: str, start: int, end: int) -> bool:
    """`text[start:end]` stands as a word of `text`, or as a word with a Korean particle after it."""
    if start > 0 and text[start - 1].isalnum():
        return False
    if end == len(text) or not text[end].isalnum():
        return True
    run = _HANGUL_RUN.match(text, end)
    if run is None:
        return False
    after = run.end()
    return (after == len(text) or not text[after].isalnum()) and _particle(run.group())


def _particle(run: str) -> bool:
    """A Hangul run after a name is a particle, or an honorific with or without one (혜진님, 민수씨한테)."""
    if run[:1] in HONORIFICS:
        run = run[1:]
    return not run or is_suffix(run)


def _contains_word(text: str, part: str) -> bool:
    start = text.find(part)
    while start >= 0:
        if _word_at(text, start, start + len(part)):
            return True
        start = text.find(part, start + 1)
    return False


@lru_cache(maxsize=4096)
def names_title(query: str, title: str) -> bool:
    """The (lower-cased, stripped) query names the title as a word, or is a word or words of the title."""
    if not query or not title:
        return False
    return _contains_word(query, title) or _contains_word(title, query) or _spelled_in_other_script(query, title)


def _spelled_in_other_script(query: str, title: str) -> bool:
    """A name in one script named in the other: an English question about a Korean chat's speaker ("what did
    Jon say?" over rows titled 존), or a Korean one about an English chat's ("혜진님이 뭐래?" over Hyejin's rows)."""
    if _HANGUL_RUN.fullmatch(title) and len(title) <= _NAME_SYLLABLES:
        return any(names_alike(title, w) for w in _LATIN_WORD.findall(query))
    if _LATIN_WORD.fullmatch(title) and len(title) >= _LATIN_NAME_MIN:
        for run in _HANGUL_RUN.findall(query):
            for k in range(1, min(len(run), _NAME_SYLLABLES) + 1):
                if (k == len(run) or _particle(run[k:])) and names_alike(run[:k], title):
                    return True
    return False

"""Whether a query names a row's title (ranking's `r_title`): as a word, not as a piece of one.

A substring test made a speaker called 지나 the title of every question about a passing time ("지나간 주말에 …",
"지나서") and a note titled "AI" a match for "how do we maintain it?". The title must start a word of the query
(or the query a word of the title) and end one: followed by nothing, by a character that is no letter, or, after
the Korean way, by a particle alone ("존은", "Caroline이랑", "지나한테").
"""

from __future__ import annotations

import re
from functools import lru_cache

from gieok.core.korean import is_suffix

_HANGUL_RUN = re.compile(r"[\uac00-\ud7a3]+")


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
    return (after == len(text) or not text[after].isalnum()) and is_suffix(run.group())


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
    return _contains_word(query, title) or _contains_word(title, query)

"""The English forms of a dictionary sense that the full-text stemmer does not bring back to it.

A Korean question's verb reaches the English memory through its dictionary senses (gieok.retrieval.ko_lexicon),
which are base forms: 샀어 and 산 are 사다, "buy". People tell what they did in the past tense, "I bought new
running shoes", and the stemmer unites "opened" with "open" but not "bought" with "buy", "went" with "go", or
"biggest" with "big". So the bridge found no sense of 사다 in a memory that only says "bought", and the question
lost its verb. The irregular forms come from lemminflect (MIT; its own tables of English inflections, read once
per process off the event loop, ~0.2 s and ~25 MB). Without the package, a sense is looked for as written only.

Measured on dev, Korean questions over English memory: three questions found evidence they did not ("Melanie는
어떤 물건들을 샀어?", "…언제 그 작은 조각상들을 샀어?", "…새로 산 신발은 뭐 할 때 신는 거야?", each through
"bought"), one moved from 4th to 6th.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import lru_cache

from gieok.core.once import Once
from gieok.core.text import stem_word

__all__ = ["other_forms", "ready"]

log = logging.getLogger(__name__)

Inflections = Callable[[str], dict[str, tuple[str, ...]]]


def _none(_word: str) -> dict[str, tuple[str, ...]]:
    return {}


def _load() -> Inflections:
    try:
        from lemminflect import getAllInflections
    except ImportError as exc:
        log.info("English inflections not available (%s); senses are looked for as written", exc)
        return _none
    getAllInflections("be")     # reads its tables now, off the event loop, rather than in the first search
    return getAllInflections


_INFLECTIONS = Once(_load)


async def ready() -> None:
    """The tables, read off the event loop the first time."""
    await _INFLECTIONS.ready()


@lru_cache(maxsize=8192)
def other_forms(word: str) -> tuple[str, ...]:
    """The full-text tokens of `word`'s inflections other than its own stem: buy → bought; go → went, gone;
    big → bigger, biggest. None for a word whose forms all stem to it (open: opened, opening, opens)."""
    own = stem_word(word)
    forms = _INFLECTIONS.get()(word)
    return tuple(dict.fromkeys(t for fs in forms.values() for f in fs if (t := stem_word(f)) != own))

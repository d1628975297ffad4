"""Which writing system a text is in, as far as retrieval cares: Hangul or not.

Embedding cosines sit in different bands depending on the scripts of the two texts compared (e5: two unrelated
Korean texts score ≈ 0.84, two unrelated English ones ≈ 0.78, a Korean question over English text ≈ 0.78), and
lexical evidence only exists when query and memory share a script. So the no-match threshold and the fusion
weights are chosen per (query script, memory script) pair.
"""

from __future__ import annotations

import re

from gieok.core.models import Memory

HANGUL, LATIN = "hangul", "latin"

_HANGUL = re.compile("[\uac00-\ud7af\u1100-\u11ff\u3130-\u318f]+")
_LATIN = re.compile("[A-Za-z\u00c0-\u024f]+")
_SYLLABLES = re.compile("[\uac00-\ud7af]")
# Enough of a text to tell its script; a long memory's first part says it as well as all of it.
_SAMPLE = 200


def text_script(text: str) -> str:
    """HANGUL when Hangul carries at least as much as the Latin letters, else LATIN (also for text with no
    letters at all, and for other scripts, which are not measured yet). A Hangul syllable counts as three
    Latin letters (it is a whole syllable), so "Door Dash 일자리를 잃었어" is Korean and "I love 김치" English."""
    s = text[:_SAMPLE]
    if _HANGUL.search(s) is None:
        return LATIN
    h = sum(map(len, _HANGUL.findall(s)))
    return HANGUL if 3 * h >= sum(map(len, _LATIN.findall(s))) else LATIN


def written_in_english(m: Memory) -> bool:
    """Whether a row is English (more exactly, not Korean) memory: no Hangul syllable in its first characters is
    the quick answer, else `text_script`."""
    return _SYLLABLES.search(m.content[:_SAMPLE]) is None or text_script(m.content) != HANGUL

"""How much of a message asks rather than tells.

A message that mostly asks ("What kind of yoga is it?", "축제에 나가는 사람들이 네 팀이야?") shares a question's
form and words, so it sits close to the question in both the vector and the full-text arm, but it rarely holds
the answer: the reply does. Measured on the LoCoMo dev conversations (English and Korean alike): of the turns
that are at least 60% question by length, 2 of 80 are evidence for some question (2.5%), against 23–38% of the
turns that ask nothing.
"""

from __future__ import annotations

import re

# Where a sentence ends: . ! ? (and any closing quotes or brackets) followed by a space or the end, a full-width
# 。！？, or a line break. A "?" inside a URL's query string ("…/search?q=1") or a word ends nothing.
_ENDS = re.compile(r"[.!?]+[\"')\]]*(?=\s|$)|[。！？]+|\n")
# A long note's opening says whether it asks as well as all of it does, and ranking reads ~200 candidates a search.
_SAMPLE = 1000


def question_share(text: str) -> float:
    """The share of `text`'s letters that are in sentences ending with a question mark (0..1)."""
    text = text[:_SAMPLE]
    if "?" not in text and "？" not in text:
        return 0.0      # most rows: no sentence to measure
    total = asked = 0
    start = 0
    for m in _ENDS.finditer(text):
        n = len(text[start:m.end()].strip())
        total += n
        if "?" in m.group() or "？" in m.group():
            asked += n
        start = m.end()
    total += len(text[start:].strip())
    return asked / total if total else 0.0

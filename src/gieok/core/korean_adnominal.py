"""Which one-syllable Korean words of a text stand before a noun as a verb's adnominal.

"새로 산 신발" is "the shoes (I) newly bought": 산 is 사다's past adnominal, but alone it is 산, "mountain", and the
dictionary's key as written is looked up first. Before a noun, such a word's verb reading
(`gieok.core.korean_stems.adnominal_lemmas`) comes first (gieok.retrieval.ko_lexicon `lookup(…, adnominal=True)`,
for the bridge and the librarian's glosses). The rules below say where it is not one; docs/measurements.md has
what each came from.
"""

from __future__ import annotations

from gieok.core.korean_stems import NIEUN, RIEUL, syllable_parts

__all__ = ["adnominal_words"]

# One-syllable words that stand before another word as something other than a verb's adnominal: the adverbs 안
# ("not"), 잘 ("well"), 늘 ("always"), and a pronoun, 것 or 때 with its particle run into it (난, 넌, 날, 널, 전, 절,
# 건, 걸, 뭔, 땐).
_NOT_ADNOMINAL = frozenset("안 잘 늘 난 넌 날 널 전 절 건 걸 뭔 뭘 땐".split())
# Words a unit follows (몇 번, 여러 번, 다음 달): the one-syllable word after them counts, it is no verb; and the
# last syllables of numbers (열다섯 살, 스물한 살, 서른 명), which also end adnominals (따뜻한 말), after which a
# word is a noun too.
_COUNTING = frozenset("몇몇 여러 첫 매 각 다음 지난 이번 저번".split())
_NUMBER_ENDS = frozenset("몇한두세네섯곱덟홉열무물른흔쉰순")
# The vowels a verb's 아/어 form ends in (가, 써, 보여, 도와, 배워, 해), before an auxiliary (본, 준, 둔, 볼). 가 and
# 와 after a noun are its particles (미나가 연 가게, 친구와 간 곳).
_LINKING_VOWELS = frozenset({0, 1, 4, 6, 9, 10, 14})


def adnominal_words(text: str) -> frozenset[str]:
    """The one-syllable words of `text` that stand before another Korean word as a verb's adnominal: 새로 산 신발
    ("the shoes … bought"), Jon이 연 스튜디오 ("opened"), 캠핑 갈 계획 ("go"), 가장 큰 어려움 ("big"). Alone, such a
    word is read as a noun (산 "mountain", 연 "kite") or not at all, since names are one syllable too (존, 벤); before
    a noun its verb reading (`adnominal_lemmas`) comes first. Not first in a sentence, not after a word that counts
    (몇 번, 다음 달), and not the adverbs and contracted pronouns that take that place (안 좋은, 난 거기)."""
    words = text.split()
    out: set[str] = set()
    for i, w in enumerate(words[:-1]):
        last = syllable_parts(w) if len(w) == 1 else None
        if (last is None or last[2] not in (NIEUN, RIEUL) or w in _NOT_ADNOMINAL
                or syllable_parts(words[i + 1][0]) is None):
            continue
        # A clause comes before its adnominal (새로 산, Jon이 연); first in a sentence, the word is a noun before
        # a noun (산 정상, "the mountain's top").
        before = words[i - 1] if i > 0 else "."
        if (before[-1] in ".!?" or before in _COUNTING or before[-1] in _NUMBER_ENDS
                or any(ch.isdigit() for ch in before)):
            continue
        end = syllable_parts(before[-1])
        # After a word ending in ㄴ (an adnominal, 따뜻한 말; or the topic particle, which no relative clause holds:
        # John은 군 기념관, "the military memorial") the word is a noun; after a verb's 아/어 form it is an auxiliary
        # (가 본 "have been", 보여 준 "showed"), which says nothing of its own.
        if end is not None and (end[2] == NIEUN or (end[2] == 0 and end[1] in _LINKING_VOWELS
                                                     and not (len(before) > 1 and before[-1] in "가와"))):
            continue
        out.add(w)
    return frozenset(out)

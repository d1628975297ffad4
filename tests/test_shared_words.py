"""A keyword match names the words it shares with the query, in its reason and in a fallback's note
(gieok.retrieval.shared_words): what a person needs to judge a result shown for its words alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from gieok.core.models import Hit, Memory
from gieok.retrieval import ko_glosses
from gieok.retrieval.shared_words import joined, name_shared_words, words_in
from tests.conftest import e5_service
from tests.test_retrieval_korean import _search_notes, _shown


def test_the_query_words_are_named_as_the_person_wrote_them() -> None:
    # English by its stem ("deploying" meets "deploy"), Korean without its particle or ending, in query order.
    assert words_in("", "We deploy on Tuesdays", "deploying on tuesday?") == ["deploying", "tuesday"]
    assert words_in("", "회의록: 다음 분기 예산은 3천만원으로 확정", "예산은 얼마로 정했지?") == ["예산"]
    # A three-syllable word is a phrase of bigrams: its syllables apart in the text are not the word.
    assert words_in("", "회의록 정리", "회의록") == ["회의록"]
    assert words_in("", "회의 기록", "회의록") == []
    # The title is part of the row as the index reads it (a chat's speaker).
    assert words_in("Caroline", "I went to a support group", "Caroline support") == ["caroline", "support"]


def test_translations_and_synonyms_are_named_as_the_row_writes_them() -> None:
    # The dictionary's English term for 예약 is a stem (reserv); the row's own word is what a person reads.
    assert words_in("", "Dinner reservation at Jungsik on Friday", "치과 예약", [["dental"], ["reserv"]]) == \
        ["reservation"]
    assert words_in("", "The cat gets salmon kibble", "고양이 사료", [["cat"], ["feed"]]) == ["cat"]
    # A Korean synonym's bigrams read back as its word.
    assert words_in("", "여름 축제 일정", "페스티벌", [["축제"]]) == ["축제"]
    # A translation whose query word is known comes after it.
    assert words_in("", "The cat gets salmon kibble", "고양이 사료", [["cat"]], {("cat",): "고양이"}) == \
        ["고양이 → cat"]


def test_a_row_that_does_not_hold_the_words_itself_keeps_the_plain_reason() -> None:
    # Matched through its neighbours' messages: nothing in its own text to name.
    hit = Hit(Memory(id="a", user_id="u", content="Yes, it was great!"), 0.5, {}, ["keyword match", "recent"])
    named = name_shared_words([hit], "pottery class")
    assert named == [] and hit.recall_reason == ["keyword match", "recent"]
    # Text past what is read is not named (a long file still names what its start holds).
    long = Hit(Memory(id="b", user_id="u", content="x " * 3000 + "pottery"), 0.4, {}, ["keyword match"])
    assert name_shared_words([long], "pottery") == [] and long.recall_reason == ["keyword match"]


def test_a_long_list_of_long_rows_is_read_up_to_a_budget() -> None:
    # 30 rows of 2,000 characters: the first 20 (40,000 characters) name their word, the rest keep the plain
    # reason rather than cost the search their reading.
    hits = [Hit(Memory(id=str(i), user_id="u", content="pottery " + "x" * 1992), 0.5, {}, ["keyword match"])
            for i in range(30)]
    assert name_shared_words(hits, "pottery") == ["pottery"]
    assert [h.recall_reason for h in hits] == [["keyword match: pottery"]] * 20 + [["keyword match"]] * 10


def test_a_words_translations_are_listed_together() -> None:
    assert joined(["배포 → deploy", "일정", "배포 → release", "deploy"]) == "배포 → deploy/release, 일정, deploy"
    assert joined([]) == ""
    # A word named alone and translated too is named once, with its translation.
    assert joined(["coffee", "coffee → 커피", "tea"]) == "coffee → 커피, tea"


def test_the_words_named_put_the_querys_own_first() -> None:
    hits = [Hit(Memory(id="a", user_id="u", content="나는 매일 아침 커피를 마신다"), 0.9, {}, ["keyword match"]),
            Hit(Memory(id="b", user_id="u", content="Coffee with the team"), 0.8, {}, ["semantic match (cosine 0.86)",
                                                                                  "keyword match"])]
    assert name_shared_words(hits, "coffee", [["커피"]]) == ["coffee", "커피"]
    assert hits[0].recall_reason == ["keyword match: 커피"]
    assert hits[1].recall_reason == ["semantic match (cosine 0.86)", "keyword match: coffee"]


NOTES = ["We deploy on Tuesdays", "회의록: 다음 분기 예산은 3천만원으로 확정",
         "Dinner reservation at Jungsik on Friday at 7pm", "The cat gets salmon kibble twice a day"]


@pytest.mark.parametrize("query, note, reason", [
    # A new user's check: the budget note came back for "예산 얼마로 정했지?" under a note that named no word.
    ("예산 얼마로 정했지?", "no close match; showing keyword matches (예산)", "keyword match: 예산"),
    # Nothing is about a dentist: the dinner booking is shown for 예약 alone, and the note says so.
    # A translation is named after the Korean word it translates, as the dictionary knows that word.
    ("치과 예약을 했나?", "no close match; showing keyword matches (예약 → reservation)",
     "keyword match: 예약 → reservation"),
    ("고양이 사료", "no close match; showing keyword matches (고양이 → cat)", "keyword match: 고양이 → cat")])
async def test_a_fallback_names_the_words_its_results_hold(tmp_path: Path, query: str, note: str,
                                                           reason: str) -> None:
    out = await _search_notes(tmp_path, NOTES, query)
    assert out.mode == "fallback" and out.notes == [note], (out.notes, _shown(out))
    assert len(out.hits) == 1 and reason in out.hits[0].recall_reason, _shown(out)


async def test_a_close_match_names_its_shared_words_too(tmp_path: Path) -> None:
    out = await _search_notes(tmp_path, NOTES, "다음 분기 예산")
    assert out.mode == "hybrid" and out.notes == [], out.notes
    assert "keyword match: 다음, 분기, 예산" in out.hits[0].recall_reason, _shown(out)


async def test_an_english_word_met_by_a_korean_words_gloss_names_that_word() -> None:
    # The librarian writes each Korean word's English gloss into the row's full-text document, and an English
    # query meets the row by it: "savings deposit day" showed four notes as a bare "keyword match".
    await ko_glosses.ready()
    text = "전세 보증금은 2억, 관리비는 매달 25일"
    assert words_in("", text, "lease deposit day", glosses=True) == ["deposit → 보증금", "day → 일"]
    # 전세 is glossed "situation of war" (the dictionary's other 전세), so "lease" is not named: the name shows
    # what the index holds, right or wrong.
    assert words_in("", text, "lease deposit day") == []          # glosses only where asked for
    # A word a translation named already is not named again from the gloss.
    assert words_in("", "엄마 생신은 3월 5일", "mom's birthday", [["생신"]], {("생신",): "birthday"},
                    glosses=True) == ["birthday → 생신", "mom → 엄마"]


async def test_an_english_query_over_korean_notes_names_the_notes_words(tmp_path: Path) -> None:
    # Before, "mom's birthday" showed the note under "keyword match: 엄마, 생신": Korean words an English reader
    # had not written, with nothing to say which of theirs each stood for.
    notes = ["엄마 생신은 3월 5일, 케이크 예약하기", "전세 보증금은 2억, 계약은 내년 3월까지", "We deploy on Tuesdays"]
    async with e5_service(tmp_path, notes) as svc:      # the librarian runs once: the glosses are written
        for query, reason in (("mom's birthday", "keyword match: mom → 엄마, birthday → 생신"),
                              ("how much is the lease deposit?", "keyword match: deposit → 보증금")):
            out = await svc.search(svc.filters("alice"), query, limit=3, count_view=False)
            assert out.hits and reason in out.hits[0].recall_reason, _shown(out)

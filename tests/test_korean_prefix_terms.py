"""One-syllable Korean verb stems matched as token prefixes ("썼어" → "쓰"*: 쓰고, 쓰는), on both backends, in
search, and kept out of what a keyword fallback shows."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gieok.core.korean_stems import lemmas, prefix_stems
from gieok.core.models import SearchFilters
from gieok.core.text import index_tokens, prefix_terms, query_terms, term_prefix, verb_form_terms
from gieok.memory.ingest import MessageIn, prepare
from gieok.store import Store
from gieok.store.postgres.text import FtsStats, tsquery_params
from gieok.store.sqlite.search import fts5_query
from tests.conftest import e5_service, plain_service

NOW = datetime(2025, 6, 1, tzinfo=UTC)


@pytest.mark.parametrize("word, stems", [
    ("썼어", {"쓰", "써"}), ("갔어", {"가"}), ("봤어", {"보"}), ("먹었어", {"먹"}), ("샀어", {"사"}),
    ("써", {"쓰"}), ("줘", {"주"}), ("봐", {"보"}), ("왔어", {"오"}), ("본", {"보"}), ("간", {"가"}),
    ("쓴", {"쓰"})])
def test_a_one_syllable_stem_is_found_under_its_ending(word: str, stems: set[str]) -> None:
    got = set(prefix_stems(word))
    assert stems <= got, got
    assert word not in got      # the written word is a term already


@pytest.mark.parametrize("word", ["캠핑", "스튜디오를", "그렸어", "배웠어", "가", "친구랑", "했어", "있었어", "한",
                                  "날"])
def test_longer_stems_and_the_commonest_verbs_are_no_prefixes(word: str) -> None:
    # 그리(다), 배우(다): two syllables, a bigram phrase already; 하(다), 있(다): in every text.
    assert not {"하", "있", "그리", "배우"} & set(prefix_stems(word)), prefix_stems(word)
    assert lemmas(word)[0] == word


@pytest.mark.parametrize("word, stem", [("키워", "키우"), ("배워", "배우"), ("챙겨", "챙기"), ("마셔", "마시"),
                                        ("다녀", "다니"), ("바꿔", "바꾸"), ("돼", "되"), ("공부해", "공부하"),
                                        ("일해요", "일하")])
def test_a_casual_present_is_read_as_its_verb(word: str, stem: str) -> None:
    # The casual present contracts the stem's last vowel with 어/아 as the past does, without the ㅆ ("뭐 키워?",
    # "어디서 일해?"): the dictionary knew none of these forms, so the bridge asked the model (키워 → "kinda").
    assert stem in lemmas(word) and lemmas(word)[0] == word
    assert len(stem) == 1 or not prefix_stems(word)      # a longer stem is a bigram phrase, no prefix


def test_prefix_terms_of_a_query() -> None:
    assert prefix_terms("지난주에 뭐 썼어?") == [["썼*"], ["쓰*"], ["써*"]]
    assert prefix_terms("What did I write last week?") == []
    assert prefix_terms("캠핑 언제 갔어") == [["갔*"], ["가*"]]
    # The stem is not a token of the bigram index, so only a prefix query can meet "쓰고".
    assert "쓰" not in index_tokens("편지를 쓰고 잤다") and "쓰고" in index_tokens("편지를 쓰고 잤다")
    assert term_prefix(["쓰*"]) == "쓰" and term_prefix(["쓰"]) is None and term_prefix(["*"]) is None
    assert term_prefix(["a'b*"]) is None        # only a word's characters reach a backend's query syntax


def test_each_backend_writes_the_prefix_in_its_own_syntax() -> None:
    assert fts5_query([["쓰*"], ["편지"]]) == '"쓰"* OR "편지"'
    assert tsquery_params([["쓰*"], ["스튜", "튜디"]]) == ["'쓰':*", "스튜 튜디"]


def test_a_prefix_terms_document_frequency_on_postgres_adds_up_its_lexemes() -> None:
    # most_common_elem_freqs ends with min, max and null fraction.
    stats = FtsStats.build(0.0, 1000.0, 40.0, ["쓰고", "쓰는", "가족"], [0.10, 0.05, 0.20, 0.01, 0.2, 0.0])
    assert stats.df(["쓰*"]) == pytest.approx(150.0)
    assert stats.df(["먹*"]) == pytest.approx(stats.df(["먹고"]))        # unseen: the floor, as a lexeme
    assert stats.idf(["가*"]) < stats.idf(["쓰*"]) < stats.idf(["먹*"])


async def _put(store: Store, content: str) -> str:
    m, text = prepare(MessageIn(content=content, user_id="alice",
                                created_at=datetime(2026, 11, 1, tzinfo=UTC)), max_bytes=65536)
    mid, inserted = await store.insert_memory(m, text)
    assert inserted
    return mid


async def test_a_prefix_term_matches_the_tokens_that_begin_with_it(store: Store) -> None:
    wrote = await _put(store, "어제 할머니께 편지를 쓰고 잤어")
    family = await _put(store, "주말에 가족이랑 바다에 놀러 갔다")
    await _put(store, "The deploy went fine on Tuesday")
    f = SearchFilters(user_id="alice")

    async def ids(terms: list[list[str]]) -> list[str]:
        hits = await store.keyword_search(f, terms, 10)
        assert all(score > 0 for _, score in hits)
        return [m.id for m, _ in hits]

    assert await ids([["쓰*"]]) == [wrote]
    assert await ids([["쓰"]]) == []            # as a phrase, one syllable meets no bigram
    assert await ids([["가*"]]) == [family]      # 가족 (갔다 begins with 갔)
    assert await ids([["갔*"]]) == [family]
    both = await ids([["쓰*"], ["가*"], ["할머"]])
    assert both[0] == wrote and set(both) == {wrote, family}
    assert await ids(query_terms("뭘 썼어") + prefix_terms("뭘 썼어")) == [wrote]
    assert await ids(query_terms("뭘 썼어")) == []


async def test_a_korean_question_finds_a_one_syllable_verb_in_another_form(tmp_path: Path) -> None:
    async with plain_service(tmp_path) as plain:
        await plain.ingest(MessageIn(content="어제 할머니께 편지를 쓰고 잤어", user_id="alice"))
        await plain.ingest(MessageIn(content="오늘은 비가 와서 집에 있었어.", user_id="alice"))
        hits = (await plain.search(plain.filters("alice"), "내가 뭘 썼지?", now=NOW)).hits
        assert [h.memory.content for h in hits] == ["어제 할머니께 편지를 쓰고 잤어"]


async def test_a_keyword_fallback_does_not_show_what_only_a_stem_prefix_matched(tmp_path: Path) -> None:
    # "갔어" → "가"*, which also begins 가족: fine as one piece of ranking evidence, no keyword match to show
    # when nothing stored is about the question.
    texts = ["주말에 가족 사진을 앨범에 정리했다.", "The deployment failed because the migration was missing."]
    async with e5_service(tmp_path, texts) as svc:
        out = await svc.search(svc.filters("alice"), "바나나 스무디 먹으러 갔어", now=NOW)
        assert out.mode == "fallback", [(h.memory.content, h.parts) for h in out.hits]
        assert out.hits == []
        # A one-syllable verb is shown in its verb forms: 갔어 is 가서 or 가고, not 가족.
        assert query_terms("갔어") == [["갔어"]] and verb_form_terms(prefix_terms("갔어"))[0] == ["갔고"]
        assert ["가족"] not in verb_form_terms(prefix_terms("갔어"))
        # The same stem with a word the row holds is a literal match, and shown.
        out = await svc.search(svc.filters("alice"), "바나나 스무디 가족", now=NOW)
        assert [h.memory.content for h in out.hits] == [texts[0]]


async def test_a_fallback_shows_the_verb_the_question_asks_about(tmp_path: Path) -> None:
    # What a new user saw: one memory, a short question the model scores below the no-match threshold, and the
    # fallback's literal words ("뭘", "썼지") meet nothing; the verb's own forms do.
    texts = ["어제 할머니께 편지를 쓰고 잤다", "주말에 가족 사진을 앨범에 정리했다."]
    async with e5_service(tmp_path, texts) as svc:
        out = await svc.search(svc.filters("alice"), "뭘 썼지?", now=NOW)
        assert [h.memory.content for h in out.hits] == [texts[0]], (out.mode, out.notes)
        out = await svc.search(svc.filters("alice"), "어디 갔지?", now=NOW)
        assert texts[1] not in [h.memory.content for h in out.hits]


def test_a_word_in_half_the_rows_or_more_weighs_nothing_on_postgres_as_on_sqlite() -> None:
    # FTS5's idf, log((N − n + 0.5)/(n + 0.5)) floored at 1e-6: a name in every row adds (almost) nothing.
    # Lucene's log(1 + …) gave it ~0.7 on PostgreSQL alone, and the backends ranked the same rows apart.
    stats = FtsStats.build(0.0, 1000.0, 40.0, ["jon", "dance"], [0.9, 0.5, 0.001, 0.9, 0.0])
    assert stats.idf(["jon"]) == stats.idf(["dance"]) == 1e-6
    assert stats.idf(["studio"]) == pytest.approx(math.log((1000 - 1 + 0.5) / (1 + 0.5)), rel=0.05)

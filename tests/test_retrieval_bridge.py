"""The cross-lingual bridge (gieok.retrieval.bridge): Korean query words reach English memory through each
user's vocabulary of English words embedded by the librarian."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from gieok.core.models import Memory
from gieok.core.text import doc_words
from gieok.memory.ingest import MessageIn
from gieok.memory.service import MemoryService
from gieok.retrieval import ko_lexicon
from gieok.retrieval.bridge import bridge_query, bridge_terms, merge_bridged, query_words
from gieok.retrieval.ko_senses import dictionary_terms
from gieok.retrieval.scripts import written_in_english
from gieok.retrieval.vocab_nearest import nearest_terms, nearest_words
from gieok.store import open_store
from gieok.store.base import Store
from tests.conftest import e5_service

NOW = datetime(2025, 6, 1, tzinfo=UTC)
# Words in the English rows that the Korean questions below never spell.
TEXTS = [
    "Melanie: We're planning to go camping by the lake next month with the kids.",
    "Melanie: I signed up for a pottery class, working with clay calms me down.",
    "Caroline: The adoption agency called back about the interview.",
    "Caroline: I'm reading a novel about a lighthouse keeper.",
    "Melanie: The kids loved the dinosaur exhibit at the museum.",
    "Caroline: My new job at the bank starts on Monday.",
    "지나: 내일 은행에 가서 통장을 새로 만들어야 해.",
]


def test_words_on_each_side() -> None:
    assert doc_words("We're planning to go CAMPING, camping by the lake in 2024!") == ["planning", "camping", "lake"]
    # Particles and endings go, question words and bare particles after a Latin name are not looked up.
    assert query_words("Melanie는 언제 캠핑 갈 계획이야?") == ["캠핑", "갈", "계획"]
    assert query_words("Caroline은 어떤 소설을 읽었어?") == ["소설", "읽었"]
    assert query_words("When did Melanie go camping?") == []


def test_nearest_terms_keeps_only_close_words_and_stems_them() -> None:
    vocab = ["camping", "camped", "lake", "gonna"]
    m = np.eye(4, dtype=np.float32)
    q = np.array([[0.95, 0.90, 0.1, 0.0], [0.0, 0.0, 0.0, 0.86]], dtype=np.float32)
    # camping and camped share the stem "camp": one term; a filler word under the bar brings nothing.
    assert nearest_terms(q, vocab, m, top=2, min_cos=0.87) == [["camp"]]
    assert nearest_terms(q[:0], vocab, m) == []


def test_a_nearest_word_must_stand_out_from_the_words_mean_cosine() -> None:
    vocab = ["service", "uses", "billing"]
    m = np.eye(3, dtype=np.float32)
    # Every word close to the query word (a small vocabulary under e5): none stands out, none is a translation.
    flat = np.array([[0.81, 0.80, 0.79]], dtype=np.float32)
    assert nearest_words(flat, vocab, m, min_cos=0.80) == [[]]
    assert nearest_words(flat, vocab, m, min_cos=0.80, stand_out=0.0) == [["service", "uses"]]
    peaked = np.array([[0.90, 0.78, 0.76]], dtype=np.float32)
    assert nearest_words(peaked, vocab, m, min_cos=0.80) == [["service"]]


async def test_a_korean_word_the_memory_does_not_translate_brings_no_english_row(tmp_path: Path) -> None:
    # A new user's two notes; 노션 is the Korean one's word, and the English note's few words sat at 0.80–0.81 from
    # it by chance: the note came back for "노션" as a keyword match.
    texts = ["팀 회의는 목요일 10시, 회의록은 노션에 남긴다", "The billing service uses PostgreSQL 16 with pgvector"]
    now = datetime(2025, 6, 1, tzinfo=UTC)
    async with e5_service(tmp_path, []) as svc:
        for t in texts:     # as `gieok add` remembers them
            await svc.remember(MessageIn(content=t, user_id="alice", kind="semantic", importance=0.8,
                                         created_at=now.isoformat()))
        out = await svc.search(svc.filters("alice"), "노션", now=now)
        assert [h.memory.content for h in out.hits] == texts[:1], [
            (h.memory.content, h.recall_reason) for h in out.hits]


def test_bridged_evidence_goes_to_english_rows_only() -> None:
    en = Memory(id="en", user_id="u", content="We went camping by the lake.")
    mixed = Memory(id="mixed", user_id="u", content="I love 김치 and camping.")
    ko = Memory(id="ko", user_id="u", content="어제 camping 장비를 잔뜩 샀어, 다음 주에 캠핑 가려고.")
    merged = dict((m.id, bm) for m, bm in merge_bridged([(ko, 2.0)], [(en, 1.5), (mixed, 1.0), (ko, 3.0)]))
    # A Korean row keeps its literal evidence only: over Korean memory the bridge's English words are noise.
    assert merged == {"ko": 2.0, "en": 1.5, "mixed": 1.0}


@pytest.mark.parametrize("word, lemma", [("갔어", "가"), ("갔", "가"), ("그렸", "그리"), ("봤어", "보"), ("했", "하"),
                                         ("배웠", "배우"), ("됐어", "되"), ("썼", "쓰"), ("읽었", "읽"), ("책들", "책"),
                                         ("만났", "만나"), ("공부했", "공부하")])
def test_lemmas_undo_the_ending_and_the_past_tense(word: str, lemma: str) -> None:
    got = ko_lexicon.lemmas(word)
    assert got[0] == word and lemma in got, got


@pytest.mark.parametrize("word, lemma", [("골랐지", "고르"), ("불렀어", "부르"), ("몰라", "모르"), ("흘렀", "흐르")])
def test_lemmas_undo_the_doubled_rieul_of_a_reu_irregular_verb(word: str, lemma: str) -> None:
    assert lemma in ko_lexicon.lemmas(word), ko_lexicon.lemmas(word)


@pytest.mark.parametrize("word, sense", [("골랐지", "choose"), ("책을", "book"), ("춤과", "dance"), ("팀은", "team"),
                                         ("찾는", "find"), ("기릴", "honor"), ("만든", "make"), ("쓰여", "be used"),
                                         ("나간", "attend")])
def test_the_dictionary_is_asked_under_the_forms_a_query_word_hides(word: str, sense: str) -> None:
    # A short noun with its particle (the full-text stem keeps it whole), a verb with a joining or adnominal
    # ending, a stem that drops its ㄹ (만든 → 만들다): these went to the model's nearest words (책을 → book, but 주는
    # → "yay", 된 → "gonna").
    assert sense in ko_lexicon.senses(word), ko_lexicon.senses(word)[:12]


def test_a_word_that_is_a_headword_keeps_its_own_senses() -> None:
    assert "photo" in ko_lexicon.senses("사진") and "cola" in ko_lexicon.senses("콜라")


@pytest.mark.parametrize("word, sense", [("도자기", "pottery"), ("입양", "adoption"), ("퍼레이드", "parade"),
                                         ("그렸", "paint"), ("갔어", "go"), ("참여", "participation"),
                                         ("읽었", "read"), ("책들", "book")])
def test_the_dictionary_knows_what_the_model_does_not(word: str, sense: str) -> None:
    assert sense in ko_lexicon.senses(word), ko_lexicon.senses(word)[:10]


@pytest.mark.parametrize("word, sense, not_sense", [("돌아가셨", "pass away", "detour"),
                                                    ("돌아가셨어", "decease", "be circulated")])
def test_a_lemma_that_is_a_headword_wins_over_another_words_first_syllables(word: str, sense: str,
                                                                             not_sense: str) -> None:
    # 돌아가셨(어) is the honorific 돌아가시다, "pass away" ("할머니는 언제 돌아가셨어?"); its first syllables are
    # 돌아가다, "go around", which was looked up before the honorific lemma was.
    got = ko_lexicon.senses(word)
    assert sense in got and not_sense not in got, got


def test_the_dictionary_has_no_senses_for_what_it_does_not_know() -> None:
    assert ko_lexicon.senses("퀵슬롯바") == ()
    assert ko_lexicon.senses("Caroline") == ()
    # A loanword that is no headword is known only by its first syllables, which are another word.
    assert "peak" in ko_lexicon.senses("피크닉") and ko_lexicon.senses("피크닉", by_first_syllables=False) == ()
    assert "hiking" in ko_lexicon.senses("하이킹하", by_first_syllables=True)


async def test_a_loanword_known_only_by_its_first_syllables_takes_the_models_words(tmp_path: Path) -> None:
    # 피크닉 is no headword; by its first syllables (피크, "peak") the dictionary offered senses this memory does
    # not use, and the word was then given no English at all. As a word the dictionary does not know, it takes
    # the model's nearest words of the user's vocabulary.
    async with e5_service(tmp_path, ["We had a picnic in the park with sandwiches",
                                     "I went camping with my family"]) as service:
        assert service.embedder is not None
        br = await bridge_query(service.store, service.embedder, "alice", "Caroline은 언제 피크닉을 했어?")
        assert ["picnic"] in br.terms and br.english == "Caroline picnic", br


def test_dictionary_senses_are_kept_when_the_users_memory_uses_them() -> None:
    # Vocabulary rows: pottery, clay, go. A sense whose words are not all in it brings nothing; two-word senses
    # are phrases; filler ("be ...") does not count as a word of the sense.
    index = {"potteri": 0, "clay": 1, "go": 2}
    mat = np.eye(3, dtype=np.float32)
    word = np.array([0.9, 0.5, 0.1], dtype=np.float32)
    assert dictionary_terms(word, ["ceramics", "pottery", "clay pot", "be gone", "go"], index, mat) == [
        ["potteri"], ["go"]]
    assert dictionary_terms(word, ["ceramics"], index, mat) == []


@pytest.fixture
async def svc(tmp_path: Path) -> AsyncIterator[MemoryService]:
    async with e5_service(tmp_path, TEXTS) as service:
        yield service


async def test_the_librarian_builds_each_users_vocabulary(svc: MemoryService) -> None:
    assert svc.embedder is not None
    store = svc.store
    got = await store.term_matrix("alice", svc.embedder.name)
    assert got is not None
    terms, mat = got
    assert {"camping", "pottery", "adoption", "museum"} <= set(terms)
    assert mat.shape == (len(terms), svc.embedder.dim)
    assert np.allclose(np.linalg.norm(mat, axis=1), 1.0, atol=1e-3)
    assert await store.term_matrix("bob", svc.embedder.name) is None      # per user
    assert await store.missing_terms("alice", svc.embedder.name, ["camping", "zebra"]) == ["zebra"]


async def test_korean_words_bridge_to_the_english_words_of_memory(svc: MemoryService) -> None:
    assert svc.embedder is not None
    terms = await bridge_terms(svc.store, svc.embedder, "alice", "Melanie는 언제 캠핑 갈 계획이야?")
    assert ["camp"] in terms, terms
    assert await bridge_terms(svc.store, svc.embedder, "alice", "When is Melanie going camping?") == []
    assert await bridge_terms(svc.store, svc.embedder, "bob", "Melanie는 언제 캠핑 갈 계획이야?") == []


async def test_words_the_model_cannot_translate_come_from_the_dictionary(svc: MemoryService) -> None:
    assert svc.embedder is not None
    br = await bridge_query(svc.store, svc.embedder, "alice", "Melanie는 언제 도자기 수업에 등록했어?")
    # 도자기 → pottery and 수업 → class come from the dictionary, filtered by the words alice's memory holds.
    assert ["potteri"] in br.terms and ["class"] in br.terms, br.terms
    assert br.english.startswith("Melanie pottery class"), br.english
    br = await bridge_query(svc.store, svc.embedder, "alice", "Caroline의 입양 면접 소식은?")
    assert ["adopt"] in br.terms, br.terms


async def test_english_rows_rank_on_the_mean_with_the_rendering_and_korean_rows_on_their_own(
        svc: MemoryService) -> None:
    assert svc.embedder is not None
    query = "Caroline은 은행에서 새 일을 언제 시작해?"     # the bank: one English row, one Korean row
    out = await svc.search(svc.filters("alice"), query, now=NOW)
    br = await bridge_query(svc.store, svc.embedder, "alice", query)
    qv, rv = await svc.embedder.embed_query(query), await svc.embedder.embed_query(br.english)
    vecs = await svc.store.get_vectors([h.memory.id for h in out.hits], svc.embedder.name)
    kinds = set()
    for h in out.hits:
        v = vecs[h.memory.id]
        english = written_in_english(h.memory)
        kinds.add(english)
        want = (float(v @ qv) + float(v @ rv)) / 2 if english else float(v @ qv)
        assert abs(h.parts["cosine"] - want) < 1e-4, (h.memory.content, h.parts["cosine"], want)
    assert kinds == {True, False}
    # An English query has no rendering: its cosines are its own.
    out = await svc.search(svc.filters("alice"), "pottery class", now=NOW)
    ev = await svc.embedder.embed_query("pottery class")
    vecs = await svc.store.get_vectors([h.memory.id for h in out.hits], svc.embedder.name)
    assert all(abs(h.parts["cosine"] - float(vecs[h.memory.id] @ ev)) < 1e-4 for h in out.hits)


async def test_a_remembered_fact_joins_the_vocabulary_at_once(svc: MemoryService) -> None:
    # `remember` tags and embeds in the call (the cold path never claims the row again): its words must join
    # the vocabulary there too, or a Korean question could never bridge to it.
    from gieok.memory.ingest import MessageIn
    assert svc.embedder is not None
    res = await svc.remember(MessageIn(content="The orchestra rehearsal moved to the harbour warehouse.",
                                       user_id="alice"))
    got = await svc.store.term_matrix("alice", svc.embedder.name)
    assert got is not None and {"orchestra", "rehearsal", "warehouse"} <= set(got[0])
    out = await svc.search(svc.filters("alice"), "오케스트라 리허설은 어디로 옮겼어?", now=NOW)
    assert out.hits and out.hits[0].memory.id == res.id, [h.memory.content for h in out.hits]


async def test_rows_stored_before_the_vocabulary_join_it_at_the_catch_up(svc: MemoryService) -> None:
    # A store upgraded from before the vocabulary (migration 012) has embedded rows whose words were never
    # indexed: the librarian's daily catch-up adds them, and a Korean question then bridges to them.
    from gieok.librarian.term_index import catch_up
    assert svc.embedder is not None
    model = svc.embedder.name
    terms, _ = await svc.store.term_matrix("alice", model) or ([], None)
    assert "pottery" in terms
    await svc.store.forget_terms("alice", terms)
    assert await svc.store.term_matrix("alice", model) is None
    before = await bridge_query(svc.store, svc.embedder, "alice", "Melanie는 언제 도자기 수업에 등록했어?")
    assert ["potteri"] not in before.terms
    report = await catch_up(svc.store, svc.embedder, page=3)
    assert report["rows"] == len(TEXTS) and report["users"] == 1 and report["words_added"] == len(terms)
    again = await catch_up(svc.store, svc.embedder)
    assert again["words_added"] == 0                        # idempotent: nothing embedded twice
    br = await bridge_query(svc.store, svc.embedder, "alice", "Melanie는 언제 도자기 수업에 등록했어?")
    assert ["potteri"] in br.terms, br.terms


async def test_the_catch_up_stops_at_the_first_provider_failure(svc: MemoryService) -> None:
    from gieok.core.errors import ProviderError
    from gieok.librarian.term_index import catch_up
    assert svc.embedder is not None
    real = svc.embedder
    terms, _ = await svc.store.term_matrix("alice", real.name) or ([], None)
    await svc.store.forget_terms("alice", terms)

    class Down:
        name, dim, calls = real.name, real.dim, 0

        async def embed_documents(self, texts: list[str]) -> np.ndarray:
            Down.calls += 1
            raise ProviderError("embedding provider unreachable")

    report = await catch_up(svc.store, Down(), page=2)  # type: ignore[arg-type]
    assert Down.calls == 1 and report["words_added"] == 0 and "unreachable" in report["stopped"]
    assert (await catch_up(svc.store, real))["words_added"] == len(terms)      # the next run goes on


async def test_without_the_dictionary_the_model_still_bridges(svc: MemoryService,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    assert svc.embedder is not None
    monkeypatch.setattr(ko_lexicon, "_senses", {})
    ko_lexicon.lookup.cache_clear()
    try:
        terms = await bridge_terms(svc.store, svc.embedder, "alice", "Melanie는 언제 캠핑 갈 계획이야?")
        assert ["camp"] in terms, terms
    finally:
        ko_lexicon.lookup.cache_clear()


@pytest.mark.parametrize("query, want", [("Melanie는 언제 캠핑 갈 계획이야?", 0),
                                         ("박물관에서 아이들이 뭘 좋아했어?", 4),
                                         ("Melanie는 언제 도자기 수업에 등록했어?", 1),
                                         ("입양 기관에서 연락 왔어?", 2)])
async def test_a_korean_question_finds_the_english_memory_as_a_keyword_match(svc: MemoryService, query: str,
                                                                            want: int) -> None:
    out = await svc.search(svc.filters("alice"), query, now=NOW)
    assert out.hits and out.hits[0].memory.content == TEXTS[want], [h.memory.content for h in out.hits]
    assert any(r.startswith("keyword match") for r in out.hits[0].recall_reason)


async def test_a_fallback_shows_literal_matches_only(svc: MemoryService) -> None:
    # Nothing stored is about bananas: whatever the bridge guessed, no keyword match is shown.
    out = await svc.search(svc.filters("alice"), "바나나 스무디 레시피", now=NOW)
    assert out.mode == "fallback" and out.hits == []


async def test_vocabulary_on_both_backends_is_per_user_incremental_and_erased_with_the_user(store: Store) -> None:
    v = np.eye(3, 4, dtype=np.float32)
    await store.add_term_vectors("carol", "m", ["camping", "lake"], v[:2])
    await store.add_term_vectors("carol", "m", ["camping"], v[2:])       # already there: kept as it was
    await store.add_term_vectors("dave", "m", ["pottery"], v[:1])
    got = await store.term_matrix("carol", "m")
    assert got is not None and got[0] == ["camping", "lake"] and np.array_equal(got[1], v[:2])
    await store.add_term_vectors("carol", "m", ["museum"], v[2:])
    got = await store.term_matrix("carol", "m")                          # only the new row is read
    assert got is not None and got[0] == ["camping", "lake", "museum"] and got[1].shape == (3, 4)
    assert await store.term_matrix("carol", "other-model") is None
    assert await store.missing_terms("carol", "m", ["lake", "zebra", "zebra"]) == ["zebra"]
    await store.erase_user("carol", "pseudo")
    assert await store.term_matrix("carol", "m") is None
    assert await store.missing_terms("carol", "m", ["camping"]) == ["camping"]
    dave = await store.term_matrix("dave", "m")
    assert dave is not None and dave[0] == ["pottery"]


async def test_erased_words_leave_every_process_copy_of_the_vocabulary(store: Store, db_url: str) -> None:
    v = np.eye(4, 4, dtype=np.float32)
    await store.add_term_vectors("carol", "m", ["camping", "lake", "hiv"], v[:3])
    await store.add_term_vectors("dave", "m", ["hiv"], v[3:])
    other = open_store(db_url)          # a second server on the same database, its copy already loaded
    await other.open()
    try:
        got = await other.term_matrix("carol", "m")
        assert got is not None and got[0] == ["camping", "lake", "hiv"]
        assert await store.forget_terms("carol", ["hiv", "zebra"]) == 1
        for s in (store, other):
            got = await s.term_matrix("carol", "m")
            assert got is not None and got[0] == ["camping", "lake"] and np.array_equal(got[1], v[:2])
            dave = await s.term_matrix("dave", "m")
            assert dave is not None and dave[0] == ["hiv"]                  # another user's words stay
        await store.add_term_vectors("carol", "m", ["museum"], v[3:])      # appending goes on after a reload
        got = await other.term_matrix("carol", "m")
        assert got is not None and got[0] == ["camping", "lake", "museum"]
        assert await store.forget_terms("carol", ["zebra"]) == 0
    finally:
        await other.close()


async def test_erasing_a_memory_erases_the_words_only_it_held(svc: MemoryService) -> None:
    assert svc.embedder is not None
    model = svc.embedder.name
    before = await svc.store.term_matrix("alice", model)
    assert before is not None and {"pottery", "clay", "melanie"} <= set(before[0])
    pottery = next(h.memory for h in (await svc.search(svc.filters("alice"), "pottery class", now=NOW)).hits)
    assert pottery.content == TEXTS[1]
    await svc.forget(pottery.id, "alice", hard=True)
    after = await svc.store.term_matrix("alice", model)
    assert after is not None
    # Its own words go; "melanie" is in two other memories too and stays.
    assert {"pottery", "clay", "calms"}.isdisjoint(after[0]) and {"melanie", "camping", "museum"} <= set(after[0])
    # A soft forget keeps the words (the row can come back).
    museum = next(h.memory for h in (await svc.search(svc.filters("alice"), "dinosaur museum", now=NOW)).hits)
    await svc.forget(museum.id, "alice")
    kept = await svc.store.term_matrix("alice", model)
    assert kept is not None and "dinosaur" in kept[0]


async def test_query_words_are_embedded_once_per_user() -> None:
    """The words' vectors are remembered per user: a user's second question with the same words asks the model
    nothing, another user's does (no one learns from the answer time what someone else searched for)."""
    from gieok.retrieval.bridge import WordVectors, embed_words

    class Counting:
        name = "test/counting"
        dim = 4

        def __init__(self) -> None:
            self.asked: list[list[str]] = []

        async def embed_documents(self, texts: list[str]) -> np.ndarray:
            raise AssertionError("not for query words")

        async def embed_query(self, text: str) -> np.ndarray:
            return (await self.embed_queries([text]))[0]

        async def embed_queries(self, texts: list[str]) -> np.ndarray:
            self.asked.append(list(texts))
            return np.array([[len(t), 1.0, 0.0, 0.0] for t in texts], np.float32)

    emb, cache = Counting(), WordVectors(size=3)
    first = await embed_words(emb, ["캠핑", "계획"], user_id="alice", cache=cache)
    again = await embed_words(emb, ["계획", "캠핑", "가족"], user_id="alice", cache=cache)
    other = await embed_words(emb, ["캠핑"], user_id="bob", cache=cache)
    assert emb.asked == [["캠핑", "계획"], ["가족"], ["캠핑"]]
    assert np.array_equal(again[1], first[0]) and np.array_equal(again[0], first[1]) and other.shape == (1, 4)
    # Bounded (3 here): bob's word pushed out the least recently used one, alice's 계획; 캠핑 is still known.
    await embed_words(emb, ["캠핑", "계획"], user_id="alice", cache=cache)
    assert emb.asked[-1] == ["계획"]

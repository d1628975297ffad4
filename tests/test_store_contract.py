"""The store contract: every backend must pass all of it (SQLite and PostgreSQL, real servers)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from gieok.core.anchors import Anchor
from gieok.core.models import Memory, SearchFilters
from gieok.core.principal import Principal
from gieok.core.text import query_terms
from gieok.memory.ingest import MessageIn, prepare
from gieok.store import Store, open_store
from gieok.store.base import ColdResult, ProjectTag, UserProfile, VectorSink

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)


def row(content: str, *, at: datetime = T0, user: str = "alice", **kw: object) -> tuple[Memory, str]:
    return prepare(MessageIn(content=content, user_id=user, created_at=at, **kw), max_bytes=65536)  # type: ignore[arg-type]


async def put(store: Store, content: str, **kw: object) -> str:
    m, text = row(content, **kw)
    mid, inserted = await store.insert_memory(m, text)
    assert inserted
    return mid


def unit(seed: int, dim: int = 8) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=dim).astype(np.float32)
    return v / np.linalg.norm(v)


async def test_migrated_from_empty(store: Store) -> None:
    assert await store.schema_version() >= 1
    assert await store.stats("nobody") == await store.stats("nobody")  # works on an empty store


async def test_roundtrip_keeps_every_field(store: Store) -> None:
    m, text = row("hello world", role="assistant", kind="semantic", agent_platform="Claude-Code",
                  agent_model=" Opus-4-7 ", subagent_role=" Researcher ", session_id="s1", project="gieok",
                  p_tags=["gieok"], d_tags=["greeting"], importance=0.7, meta={"cwd": "/x"}, title="Hi")
    mid, inserted = await store.insert_memory(m, text)
    assert inserted and mid == m.id
    got = await store.get_memory(mid)
    assert got is not None
    assert (got.role, got.kind, got.agent_platform, got.agent_model, got.subagent_role) == (
        "assistant", "semantic", "claude-code", "opus-4-7", "researcher")
    assert got.is_subagent and got.session_id == "s1" and got.project == "gieok"
    assert got.p_tags == ["gieok"] and got.d_tags == ["greeting"] and got.meta == {"cwd": "/x"}
    assert got.created_at == T0 and got.importance == pytest.approx(0.7) and got.title == "Hi"
    assert got.tag_status == "pending" and got.embed_status == "pending"


async def test_duplicate_is_not_stored_twice(store: Store) -> None:
    m1, t1 = row("same text", session_id="s")
    m2, t2 = row("same text", session_id="s")
    a, ins_a = await store.insert_memory(m1, t1)
    b, ins_b = await store.insert_memory(m2, t2)
    assert ins_a and not ins_b and a == b
    assert (await store.stats("alice"))["total"] == 1


async def test_keyword_search_korean_and_english(store: Store) -> None:
    k = await put(store, "내일 오전에 팀 회의를 하고 커피를 마셨다")
    e = await put(store, "We were meeting about database migrations all afternoon")
    await put(store, "unrelated note about gardening")
    f = SearchFilters(user_id="alice")
    for q, want in (("회의", k), ("커피", k), ("meetings", e), ("migrate", e)):
        hits = await store.keyword_search(f, query_terms(q), 10)
        assert [m.id for m, _ in hits][:1] == [want], q
        assert all(score > 0 for _, score in hits)


async def test_keyword_ties_go_to_the_row_stored_first(store: Store) -> None:
    # Equal scores (one occurrence each, in texts of the same length) come back in the order the rows were stored,
    # on both backends, whatever plan or index order the backend uses.
    ids = [await put(store, f"alpha {w}", at=T0 + timedelta(minutes=i), session_id=f"s{i}")
           for i, w in enumerate(("bravo", "delta", "gamma", "kappa"))]
    f = SearchFilters(user_id="alice")
    hits = await store.keyword_search(f, query_terms("alpha"), 10)
    assert len({round(s, 9) for _, s in hits}) == 1
    assert [m.id for m, _ in hits] == ids
    # A limit inside the tie keeps the first stored of the tied rows.
    assert [m.id for m, _ in await store.keyword_search(f, query_terms("alpha"), 2)] == ids[:2]
    # Past the cap only the newest matches are scored; among them, the same order.
    store.MAX_SCORED_MATCHES = 3     # type: ignore[attr-defined]
    assert [m.id for m, _ in await store.keyword_search(f, query_terms("alpha"), 10)] == ids[1:]
    assert [m.id for m, _ in await store.keyword_search(f, query_terms("alpha"), 2)] == ids[1:3]


async def test_filters(store: Store) -> None:
    a = await put(store, "alpha note", agent_platform="codex", role="user", at=T0)
    b = await put(store, "alpha note two", agent_platform="claude-code", role="assistant", kind="semantic",
                  at=T0 + timedelta(days=3), project="proj-x", d_tags=["db"])
    terms = query_terms("alpha")

    async def ids(**kw: object) -> set[str]:
        kw.setdefault("user_id", "alice")
        hits = await store.keyword_search(SearchFilters(**kw), terms, 10)  # type: ignore[arg-type]
        return {m.id for m, _ in hits}

    assert await ids() == {a, b}
    assert await ids(agent_platform="codex") == {a}
    assert await ids(roles=("assistant",)) == {b}
    assert await ids(kinds=("semantic",)) == {b}
    assert await ids(p_tag="proj-x") == {b}          # project hint stands in before tagging
    assert await ids(tags=("db",)) == {b}
    assert await ids(since=T0 + timedelta(days=1)) == {b}
    assert await ids(until=T0 + timedelta(days=1)) == {a}
    assert await ids(user_id="bob") == set()
    await store.update_memory(b, {"is_active": False, "archived_at": T0})
    assert await ids() == {a}
    assert await ids(include_archived=True) == {a, b}


async def test_update_reindexes_and_soft_delete_hides(store: Store) -> None:
    mid = await put(store, "original wording")
    _, new_text = row("completely different phrasing")
    assert await store.update_memory(mid, {"content": "completely different phrasing"}, search_text=new_text)
    f = SearchFilters(user_id="alice")
    assert await store.keyword_search(f, query_terms("original"), 5) == []
    assert [m.id for m, _ in await store.keyword_search(f, query_terms("phrasing"), 5)] == [mid]
    await store.update_memory(mid, {"deleted_at": T0})
    assert await store.get_memory(mid) is None
    assert await store.get_memory(mid, include_deleted=True) is not None
    assert await store.keyword_search(f, query_terms("phrasing"), 5) == []


async def test_hard_delete_erases_everywhere(store: Store) -> None:
    a = await put(store, "secret plan about the merger")
    b = await put(store, "another row")
    await store.add_link(a, b, "cause_of")
    await store.add_feedback(a, "cited", 1.0, T0)
    await store.complete_cold([ColdResult(a, embedding=unit(1), embedding_model="m")], T0)
    assert await store.hard_delete(a)
    assert await store.get_memory(a, include_deleted=True) is None
    assert await store.list_links(b) == []
    assert await store.list_feedback(a) == []
    f = SearchFilters(user_id="alice")
    assert await store.keyword_search(f, query_terms("merger"), 5) == []
    assert await store.substring_search(f, "merger", 5) == []
    assert await store.vector_search(f, "m", unit(1), 5) == []
    assert [m.id async for m in store.iter_memories("alice", include_deleted=True)] == [b]


async def test_substring_search_finds_korean_fragment(store: Store) -> None:
    mid = await put(store, "센트라젠프로젝트회의록 정리 완료")
    hits = await store.substring_search(SearchFilters(user_id="alice"), "회의", 5)
    assert [m.id for m in hits] == [mid]
    assert await store.substring_search(SearchFilters(user_id="alice"), "100%", 5) == []


async def test_substring_search_finds_a_piece_of_a_word_and_follows_edits(store: Store) -> None:
    """A needle inside a word, in any case, with quotes or LIKE's own characters in it; an edited row is found by
    its new words only (SQLite narrows by an index of trigrams that must follow every change)."""
    fix = await put(store, "Fixed RefundService.java:88 (a null check) for partial refunds")
    quoted = await put(store, 'He said "ship_it" twice, 50% sure')
    await put(store, "refund policy lives in Notion")
    f = SearchFilters(user_id="alice")
    cases = [("Service.java:8", [fix]), ("refundserv", [fix]), ("REFUNDSERVICE", [fix]), ('"ship_it"', [quoted]),
             ("p_i", [quoted]), ("50% s", [quoted]), ("shipXit", []), ("xyz", [])]
    for needle, want in cases:
        assert [m.id for m in await store.substring_search(f, needle, 5)] == want, needle
    await store.update_memory(fix, {"content": "Fixed PaymentGateway.kt timeouts"}, search_text="fixed payment")
    assert await store.substring_search(f, "Service.java", 5) == []
    assert [m.id for m in await store.substring_search(f, "Gateway.k", 5)] == [fix]
    assert len(cases) == 8


async def test_vector_search_filters_and_models(store: Store) -> None:
    ids = [await put(store, f"row {i}", agent_platform="codex" if i % 2 else "cursor",
                     at=T0 + timedelta(minutes=i)) for i in range(40)]
    await store.complete_cold([ColdResult(mid, embedding=unit(i), embedding_model="model-a")
                               for i, mid in enumerate(ids)], T0)
    q = unit(7)
    hits = await store.vector_search(SearchFilters(user_id="alice"), "model-a", q, 5)
    assert hits[0][0].id == ids[7] and hits[0][1] == pytest.approx(1.0, abs=1e-5)
    assert [s for _, s in hits] == sorted([s for _, s in hits], reverse=True)
    # A selective filter still returns full results.
    only = await store.vector_search(SearchFilters(user_id="alice", agent_platform="cursor"), "model-a", q, 10)
    assert len(only) == 10 and all(m.agent_platform == "cursor" for m, _ in only)
    # Vectors of another model are never compared.
    assert await store.vector_search(SearchFilters(user_id="alice"), "model-b", q, 5) == []
    # Re-embedding replaces the old vector.
    await store.complete_cold([ColdResult(ids[7], embedding=unit(99), embedding_model="model-a")], T0)
    again = await store.vector_search(SearchFilters(user_id="alice"), "model-a", unit(99), 1)
    assert again[0][0].id == ids[7] and again[0][1] == pytest.approx(1.0, abs=1e-5)
    vecs = await store.get_vectors([ids[0], ids[1]], "model-a")
    assert set(vecs) == {ids[0], ids[1]}


async def test_searches_read_their_rows_vectors_with_them(store: Store) -> None:
    embedded = [await put(store, f"크롬 오류 note {i}", at=T0 + timedelta(minutes=i)) for i in range(6)]
    pending = await put(store, "크롬 오류 note, not embedded yet", at=T0 + timedelta(hours=1))
    other = await put(store, "크롬 오류 note, another model's", at=T0 + timedelta(hours=2))
    await store.complete_cold([ColdResult(mid, embedding=unit(i), embedding_model="model-a")
                               for i, mid in enumerate(embedded)], T0)
    await store.complete_cold([ColdResult(other, embedding=unit(50), embedding_model="model-b")], T0)
    f = SearchFilters(user_id="alice")
    expected = await store.get_vectors([*embedded, pending, other], "model-a")
    # The keyword search's rows: every one looked at, only the model's vectors found, equal to get_vectors'.
    sink = VectorSink("model-a")
    hits = await store.keyword_search(f, query_terms("크롬 오류"), 20, sink=sink)
    assert {m.id for m, _ in hits} == {*embedded, pending, other} == sink.looked
    assert set(sink.found) == set(expected) == set(embedded)
    assert all(np.array_equal(sink.found[k], expected[k]) for k in expected)
    assert all(v.dtype == np.float32 for v in sink.found.values())
    # The same rows and scores as without a sink.
    assert [(m.id, s) for m, s in hits] == [(m.id, s) for m, s in
                                            await store.keyword_search(f, query_terms("크롬 오류"), 20)]
    # The vector search's rows, likewise.
    sink = VectorSink("model-a")
    near = await store.vector_search(f, "model-a", unit(3), 4, sink=sink)
    assert sink.looked == {m.id for m, _ in near} == set(sink.found) and len(near) == 4
    assert all(np.array_equal(sink.found[m.id], expected[m.id]) for m, _ in near)
    # Nothing found, nothing put.
    sink = VectorSink("model-a")
    assert await store.keyword_search(f, query_terms("zeppelin"), 5, sink=sink) == [] and not sink.looked


async def test_claim_lease_complete_and_fail(store: Store) -> None:
    ids = [await put(store, f"pending {i}", at=T0 + timedelta(seconds=i)) for i in range(6)]
    now = datetime.now(UTC)
    first = await store.claim_pending("w1", 4, 60, 3, now)
    second = await store.claim_pending("w2", 4, 60, 3, now)
    assert [m.id for m in first] == ids[:4]            # oldest first
    assert [m.id for m in second] == ids[4:]            # never the leased ones
    assert await store.claim_pending("w3", 4, 60, 3, now) == []
    # A crashed worker's lease expires and its rows come back.
    later = now + timedelta(seconds=61)
    assert {m.id for m in await store.claim_pending("w3", 10, 60, 3, later)} == set(ids)
    await store.complete_cold([ColdResult(ids[0], p_tags=["p"], d_tags=["x"], embedding=unit(0),
                                           embedding_model="m")], later)
    done = await store.get_memory(ids[0])
    assert done is not None and (done.tag_status, done.embed_status) == ("ok", "ok") and done.d_tags == ["x"]
    # Transient failure: backoff, still pending; after max attempts: failed with the error recorded.
    for _ in range(3):
        await store.fail_cold(ids[1], "TransientProviderError: down", permanent=False, max_attempts=3, now=later)
    failed = await store.get_memory(ids[1])
    assert failed is not None and failed.embed_status == "failed" and "down" in failed.cold_error
    assert (await store.stats("alice"))["failed"] == 1
    assert await store.reset_failed() == 1
    back = await store.get_memory(ids[1])
    assert back is not None and back.embed_status == "pending"


async def test_reembed_marks_other_models(store: Store) -> None:
    a = await put(store, "one")
    await store.complete_cold([ColdResult(a, p_tags=[], d_tags=[], embedding=unit(1), embedding_model="old")], T0)
    assert await store.mark_for_reembed("new") == 1
    m = await store.get_memory(a)
    assert m is not None and m.embed_status == "pending" and m.embedding_model == "old"
    # old vectors keep serving the old model until replaced
    assert len(await store.vector_search(SearchFilters(user_id="alice"), "old", unit(1), 5)) == 1


async def test_users_tags_links_feedback(store: Store) -> None:
    assert await store.get_user("alice") is None
    prof = UserProfile("alice", "Alice", [{"key": "name", "value": "Alice", "sources": ["x"]}], [])
    await store.save_user(prof)
    got = await store.get_user("alice")
    assert got is not None and got.core_profile[0]["value"] == "Alice"
    await store.upsert_project_tag(ProjectTag("centrazen", usage_count=2))
    await store.upsert_project_tag(ProjectTag("centrazen-project", alias_of="centrazen"))
    tags = {t.name: t for t in await store.list_project_tags()}
    assert tags["centrazen-project"].alias_of == "centrazen" and tags["centrazen"].usage_count == 2
    a = await put(store, "a")
    b = await put(store, "b")
    await store.add_link(a, b, "supersedes")
    await store.add_link(a, b, "supersedes")  # idempotent
    assert [(x.src, x.dst, x.relation) for x in await store.list_links(b)] == [(a, b, "supersedes")]
    assert await store.has_archived("alice") is False
    await store.update_memory(b, {"is_active": False})
    assert await store.has_archived("alice") is True and await store.has_archived("bob") is False
    await store.update_memory(b, {"deleted_at": T0})       # forgotten is not archived
    assert await store.has_archived("alice") is False
    await store.update_memory(b, {"deleted_at": None, "is_active": True})
    assert await has_archived_as_viewers(store) == 5
    await store.add_link(a, b, "duplicates")
    assert await store.remove_link(a, b, "duplicates") is True
    assert await store.remove_link(a, b, "duplicates") is False     # gone; the other relation stays
    assert [(x.src, x.dst, x.relation) for x in await store.list_links(a)] == [(a, b, "supersedes")]
    await store.add_feedback(a, "cited", 1.0, T0)
    m = await store.get_memory(a)
    assert m is not None and m.cite_count == 1


async def test_iter_and_list_order(store: Store) -> None:
    ids = [await put(store, f"n{i}", at=T0 + timedelta(hours=i)) for i in range(5)]
    assert [m.id async for m in store.iter_memories("alice", batch=2)] == ids
    newest = await store.list_memories(SearchFilters(user_id="alice"), limit=2)
    assert [m.id for m in newest] == [ids[4], ids[3]]
    await store.touch([ids[0]], T0)
    m = await store.get_memory(ids[0])
    # An appearance in results is counted apart from views (explicit opens).
    assert m is not None and m.shown_count == 1 and m.view_count == 0 and m.last_accessed_at == T0


async def test_update_refuses_identity_columns(store: Store) -> None:
    from gieok.core.errors import StoreError
    mid = await put(store, "immutable identity")
    with pytest.raises(StoreError, match="cannot update"):
        await store.update_memory(mid, {"user_id": "mallory"})
    m = await store.get_memory(mid)
    assert m is not None and m.user_id == "alice"
    assert not await store.update_memory("01a22c2d-0000-7000-8000-000000000000", {"title": "x"})


async def _session(store: Store, session: str, *turns: str) -> list[str]:
    """Chat turns of one session, one second apart, in order."""
    return [await put(store, t, session_id=session, at=T0 + timedelta(seconds=i)) for i, t in enumerate(turns)]


async def _found(store: Store, query: str) -> list[str]:
    return [m.id for m, _ in await store.keyword_search(SearchFilters(user_id="alice"), query_terms(query), 10)]


async def test_neighbour_context_finds_a_reply_by_its_question(store: Store) -> None:
    q, a, thanks = await _session(store, "s1", "How did your kids react at the memorial?",
                                  "They were awestruck and humbled.", "그래서 다음 주 회의에 가져갈게요")
    other = await _session(store, "s2", "Totally unrelated gardening chat")
    note = await put(store, "manual note right after", session_id="s1", at=T0 + timedelta(seconds=9),
                     source="manual")
    assert await _found(store, "memorial") == [q]         # nothing before the librarian's pass
    assert await store.refresh_context([a]) > 0
    # The reply holds its question's words, and so does the message after it (its previous but one).
    assert set(await _found(store, "memorial")) == {q, a, thanks}
    assert (await _found(store, "memorial"))[0] == q     # a row's own words outrank its neighbours'
    # The next message counts too (Korean bigrams included); other sessions and non-chat rows never do.
    assert set(await _found(store, "awestruck")) == {q, a, thanks}
    assert set(await _found(store, "회의")) == {a, thanks}
    assert await _found(store, "gardening") == other
    assert note not in await _found(store, "awestruck")
    assert await store.refresh_context([a]) == 0         # idempotent: nothing rewritten


async def test_a_chat_row_is_embedded_after_its_sessions_previous_message(store: Store) -> None:
    q, a, thanks = await _session(store, "s1", "How did your kids react?", "They were awestruck.", "고마워요")
    first_other = (await _session(store, "s2", "Unrelated gardening chat"))[0]
    note = await put(store, "manual note", session_id="s1", at=T0 + timedelta(seconds=9), source="manual")
    lone = await put(store, "no session", at=T0 + timedelta(seconds=10))
    got = await store.embedded_after([q, a, thanks, first_other, note, lone, "no-such-id"])
    assert {k: v.id for k, v in got.items()} == {a: q, thanks: a}
    # A forgotten message is no context: the one before it is.
    assert await store.update_memory(a, {"deleted_at": T0})
    assert {k: v.content for k, v in (await store.embedded_after([thanks])).items()} == {
        thanks: "How did your kids react?"}
    assert await store.embedded_after([]) == {}


@pytest.mark.parametrize("hard", [False, True])
async def test_forgetting_a_turn_removes_its_words_from_its_neighbours(store: Store, hard: bool) -> None:
    before, secret, after = await _session(store, "s1", "What was the code?", "The vault code is zanzibar",
                                           "Noted, thanks")
    await store.refresh_context([before, secret, after])
    assert set(await _found(store, "zanzibar")) == {before, secret, after}
    if hard:
        assert await store.hard_delete(secret)
    else:
        assert await store.update_memory(secret, {"deleted_at": T0})
    assert await _found(store, "zanzibar") == []
    # The two rows around it are neighbours now.
    assert set(await _found(store, "noted")) == {after, before}
    if not hard:
        assert await store.update_memory(secret, {"deleted_at": None})   # undo: it is context again
        assert set(await _found(store, "zanzibar")) == {before, secret, after}


async def test_the_message_two_before_is_context_too(store: Store) -> None:
    # The answer continues its author's own previous message, through the other speaker's question.
    setup, question, answer, later = await _session(store, "s1", "I had a picnic with friends from church",
                                                     "What did you play?", "Some fun ones like charades",
                                                     "Nice, sounds like fun")
    await store.refresh_context([setup, question, answer, later])
    assert set(await _found(store, "picnic")) == {setup, question, answer}    # not three messages later
    assert set(await _found(store, "charades")) == {question, answer, later}  # only one message after
    # A message stored late, between the set-up and the question, moves what is two before the answer.
    late = await put(store, "Also a zanzibar cake", session_id="s1", at=T0 + timedelta(milliseconds=500))
    await store.refresh_context([late])
    assert set(await _found(store, "picnic")) == {setup, late, question}
    assert set(await _found(store, "zanzibar")) == {setup, late, question, answer}
    # Forgotten, it is no one's context, and the answer has its set-up back; erased, the set-up goes everywhere.
    assert await store.update_memory(late, {"deleted_at": T0})
    assert await _found(store, "zanzibar") == []
    assert set(await _found(store, "picnic")) == {setup, question, answer}
    assert await store.hard_delete(setup)
    assert await _found(store, "picnic") == []
    assert await store.refresh_context([question, answer, later]) == 0   # every change was kept up to date


async def test_editing_a_turn_updates_its_neighbours(store: Store) -> None:
    first, second = await _session(store, "s1", "We met at the aquarium", "It was lovely")
    await store.refresh_context([second])
    _, new_text = row("We met at the planetarium")
    assert await store.update_memory(first, {"content": "We met at the planetarium"}, search_text=new_text)
    assert await _found(store, "aquarium") == []
    assert set(await _found(store, "planetarium")) == {first, second}


async def _embed(store: Store, ids: list[str], model: str = "test-model") -> dict[str, np.ndarray]:
    vecs = {mid: unit(i + 1) for i, mid in enumerate(ids)}
    await store.complete_cold([ColdResult(mid, embedding=v, embedding_model=model) for mid, v in vecs.items()], T0)
    return vecs


def _as_sets(got: dict[str, list[tuple[str, np.ndarray]]], vecs: dict[str, np.ndarray]) -> dict[str, set[str]]:
    """Each row's neighbours by id, checking each came with its own vector."""
    for pairs in got.values():
        for nid, v in pairs:
            assert v.astype(np.float32).tobytes() == vecs[nid].astype(np.float32).tobytes()
    return {mid: {nid for nid, _v in pairs} for mid, pairs in got.items()}


async def test_neighbour_vectors_are_the_adjacent_chat_messages(store: Store) -> None:
    q, a, thanks, last = await _session(store, "s1", "How did your kids react at the memorial?",
                                        "They were awestruck and humbled.", "Glad to hear it", "Bye for now")
    (alone,) = await _session(store, "s2", "A session of one message")
    note = await put(store, "manual note in the session", session_id="s1", at=T0 + timedelta(seconds=1, microseconds=5),
                     source="manual")
    vecs = await _embed(store, [q, a, thanks, alone, note])
    await store.complete_cold([ColdResult(last, embedding=unit(99), embedding_model="other-model")], T0)
    f = SearchFilters(user_id="alice")
    got = _as_sets(await store.neighbour_vectors(f, [q, a, thanks, last, alone, note], "test-model"), vecs)
    # A non-chat row neither has neighbours nor is one; a neighbour with only another model's vector is none.
    assert got == {q: {a}, a: {q, thanks}, thanks: {a}, last: {thanks}}
    assert await store.neighbour_vectors(f, [], "test-model") == {}
    # Every filter applies (here the code-anchor ones, with their own subqueries): no row is about a file.
    unanchored = SearchFilters(user_id="alice", stale="exclude", p_tag="gieok", tags=("x",))
    assert await store.neighbour_vectors(SearchFilters(user_id="alice", file="retry.py"), [a], "test-model") == {}
    assert await store.neighbour_vectors(unanchored, [a], "test-model") == {}
    assert _as_sets(await store.neighbour_vectors(SearchFilters(user_id="alice", stale="exclude"), [a], "test-model"),
                    vecs) == {a: {q, thanks}}
    # A forgotten message is no one's neighbour: the messages around it are each other's.
    assert await store.update_memory(a, {"deleted_at": T0})
    got = _as_sets(await store.neighbour_vectors(f, [q, thanks], "test-model"), vecs)
    assert got == {q: {thanks}, thanks: {q}}
    # The filters apply to the neighbours too: one outside the window does not count.
    since = SearchFilters(user_id="alice", since=T0 + timedelta(seconds=1))
    assert await store.neighbour_vectors(since, [thanks], "test-model") == {}
    # Another user's rows are never read.
    assert await store.neighbour_vectors(SearchFilters(user_id="bob"), [q, thanks], "test-model") == {}


@asynccontextmanager
async def _store_without(db_url: str, monkeypatch: pytest.MonkeyPatch,
                         versions: tuple[int, ...]) -> AsyncIterator[Store]:
    """The store as a database created without migrations `versions` is; they are back once it closes."""
    import gieok.store.postgres.migrations as pg_mod
    import gieok.store.sqlite.migrations as sqlite_mod
    for mod in (sqlite_mod, pg_mod):
        monkeypatch.setattr(mod, "MIGRATIONS", [m for m in mod.MIGRATIONS if m[0] not in versions])
    old = open_store(db_url)
    await old.open()
    try:
        yield old
    finally:
        await old.close()
        monkeypatch.undo()


async def test_upgrade_gives_existing_rows_their_context(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Migration 005 computes the neighbour context of rows stored before it existed. (The later migrations are
    applied first: today's code writes their columns; 013, which rewrites the context 005 adds, and 015, which
    counts its words, are left out with it.)"""
    async with _store_without(db_url, monkeypatch, (5, 13, 15)) as old:
        assert await old.schema_version() != 5
        q, a = await _session(old, "s1", "How did your kids react at the memorial?", "They were awestruck.")
        other = await put(old, "a zanzibar turn of another session", session_id="s2")
    new = open_store(db_url)
    await new.open()
    try:
        assert await new.schema_version() >= 5
        assert set(await _found(new, "memorial")) == {q, a}
        assert set(await _found(new, "awestruck")) == {q, a}
        assert await _found(new, "zanzibar") == [other]
        assert await new.refresh_context([q, a]) == 0      # the migration computed what the librarian would
    finally:
        await new.close()


async def test_upgrade_gives_existing_rows_the_message_two_before(db_url: str,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Migration 013 writes the context as the librarian now would, for rows whose context was computed before."""
    async with _store_without(db_url, monkeypatch, (13,)) as old:
        ids = await _session(old, "s1", "I had a picnic with friends from church", "What did you play?",
                             "Some fun ones like charades", "Nice")
        gone = await put(old, "a forgotten picnic note", session_id="s1", at=T0 + timedelta(seconds=10))
        await old.update_memory(gone, {"deleted_at": T0})
        (other,) = await _session(old, "s2", "a picnic of another session")
    new = open_store(db_url)
    await new.open()
    try:
        assert await new.schema_version() >= 13
        assert set(await _found(new, "picnic")) == {*ids[:3], other}
        assert await new.refresh_context([*ids, other]) == 0   # the migration computed what the librarian would
    finally:
        await new.close()


# --- iter_pages: the one filtered walk (maintenance, consolidation, session summaries) -------------------
def _id_at(ms: int) -> str:
    from gieok.core.ids import uuid7
    return uuid7(ms)


async def test_iter_pages_walks_created_at_then_id_even_when_ids_disagree(store: Store) -> None:
    # Ids a client chose (or an import kept) need not sort like created_at: a walk by id alone would skip
    # rows here. Two rows share a created_at: the id breaks the tie.
    base_ms = int(T0.timestamp() * 1000)
    want = []
    for i in range(7):
        mid = _id_at(base_ms + 10_000_000 - i * 1000)          # ids descend while created_at ascends
        want.append(await put(store, f"walk {i}", at=T0 + timedelta(minutes=i), id=mid))
    tie_a, tie_b = sorted([_id_at(base_ms - 5000), _id_at(base_ms - 4000)])
    await put(store, "tie b", at=T0 + timedelta(minutes=9), id=tie_b)
    await put(store, "tie a", at=T0 + timedelta(minutes=9), id=tie_a, session_id="other")
    want += [tie_a, tie_b]
    await put(store, "bob's row", user="bob", at=T0 + timedelta(minutes=3))
    gone = await put(store, "deleted", at=T0 + timedelta(minutes=4, seconds=30))
    await store.update_memory(gone, {"deleted_at": T0})
    archived = await put(store, "archived", at=T0 + timedelta(minutes=5, seconds=30))
    await store.update_memory(archived, {"is_active": False, "archived_at": T0})

    pages = [p async for p in store.iter_pages(SearchFilters(user_id="alice"), batch=3)]
    assert [len(p) for p in pages] == [3, 3, 3]                # a full last page: no empty page after it
    assert [m.id for p in pages for m in p] == want
    with_archived = [m.id async for p in store.iter_pages(SearchFilters(user_id="alice", include_archived=True),
                                                          batch=4) for m in p]
    assert with_archived == [*want[:6], archived, *want[6:]]
    one = [p async for p in store.iter_pages(SearchFilters(user_id="alice", session_id="other"), batch=100)]
    assert [[m.id for m in p] for p in one] == [[tie_a]]
    assert [p async for p in store.iter_pages(SearchFilters(user_id="nobody"))] == []


async def test_iter_pages_survives_changes_made_while_walking(store: Store) -> None:
    ids = [await put(store, f"회의 기록 {i}", at=T0 + timedelta(minutes=i)) for i in range(10)]
    seen: list[str] = []
    async for page in store.iter_pages(SearchFilters(user_id="alice"), batch=4):
        seen += [m.id for m in page]
        # What maintenance does to the rows it has just read: erase the last, archive the first.
        assert await store.hard_delete(page[-1].id)
        await store.update_memory(page[0].id, {"is_active": False, "archived_at": T0})
    assert seen == ids                                          # nothing skipped, nothing twice


async def test_iter_pages_lets_other_tasks_run_between_pages(store: Store) -> None:
    import asyncio
    for i in range(6):
        await put(store, f"page row {i}", at=T0 + timedelta(minutes=i))
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)
    task = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    try:
        before = ticks
        pages = [p async for p in store.iter_pages(SearchFilters(user_id="alice"), batch=2)]
        assert len(pages) == 3 and ticks - before >= 2   # SQLite reads inline: only the walk itself yields
    finally:
        task.cancel()


async def test_iter_pages_refuses_an_empty_batch(store: Store) -> None:
    from gieok.core.errors import StoreError
    await put(store, "x")
    with pytest.raises(StoreError, match="batch"):
        _ = [p async for p in store.iter_pages(SearchFilters(user_id="alice"), batch=0)]


# --- what a backend checks about itself, and how it waits ---------------------------------------------
async def test_check_passes_on_a_fresh_store(store: Store) -> None:
    checks = await store.check()
    assert len(checks) >= 2 and all(c.ok for c in checks), checks
    assert any("memory table has all" in c.what for c in checks)


async def test_wait_for_pending_matches_its_capability(store: Store) -> None:
    import time
    t0 = time.monotonic()
    woke = await store.wait_for_pending(0.2)
    if not store.wakes_on_pending:
        assert woke is False and time.monotonic() - t0 >= 0.19   # it waits out the timeout, never spins
    else:
        assert isinstance(woke, bool)


# --- anchors and error fingerprints (gieok.store.code_refs) ------------------------------------------------
def _anchor(path: str, root: str = "/src/shop", **kw: object) -> Anchor:
    return Anchor(path, root=root, remote=str(kw.pop("remote", "git@github.com:acme/shop.git")),
                  commit=str(kw.pop("commit", "c" * 40)), blob=str(kw.pop("blob", "b" * 40)), **kw)  # type: ignore[arg-type]


async def _raw_count(store: Store, table: str, memory_id: str) -> int:
    """Rows of a side table for one memory, read past the store API: erasure must reach the tables."""
    from gieok.store.postgres import PostgresStore
    from gieok.store.sqlite import SQLiteStore
    if isinstance(store, SQLiteStore):
        return int(store.db.execute(f"SELECT count(*) FROM {table} WHERE memory_id = ?", (memory_id,)).fetchone()[0])
    assert isinstance(store, PostgresStore)
    async with store._conn() as con:
        row = await (await con.execute(f"SELECT count(*) FROM {table} WHERE memory_id = %s", (memory_id,))).fetchone()
    return int(row[0]) if row else 0


async def _ids(store: Store, **kw: object) -> set[str]:
    kw.setdefault("user_id", "alice")
    return {m.id for m in await store.list_memories(SearchFilters(**kw), limit=50)}  # type: ignore[arg-type]


async def test_anchors_indexed_and_found_by_file_and_repo(store: Store) -> None:
    from gieok.store.code_refs import AnchorCheck
    retry = await put(store, "the retry logic lives in billing/retry.py", at=T0)
    both = await put(store, "retry calls the ledger", at=T0 + timedelta(minutes=1))
    notes = await put(store, "회의록 정리", at=T0 + timedelta(minutes=2))
    plain = await put(store, "no code here", at=T0 + timedelta(minutes=3))
    await store.index_code_refs(retry, [_anchor("billing/retry.py", line_start=10, line_end=20)], [])
    await store.index_code_refs(both, [_anchor("billing/retry.py"), _anchor("billing/ledger_io.py")], [])
    await store.index_code_refs(notes, [_anchor("/home/kim/문서/회의록.md", root="", remote="", blob="sha256:x")], [])

    got = await store.anchors_for([retry, both, plain])
    assert set(got) == {retry, both}
    a = got[retry][0]
    assert (a.anchor.path, a.anchor.line_start, a.anchor.line_end, a.status) == (
        "billing/retry.py", 10, 20, "unchecked")
    assert a.anchor.repo == "shop" and a.created_at == T0

    assert await _ids(store, file="billing/retry.py") == {retry, both}
    assert await _ids(store, file="retry.py") == {retry, both}               # a trailing part of the path
    assert await _ids(store, file="ry.py") == set()                          # ... at a path boundary only
    assert await _ids(store, file="/src/shop/billing/retry.py") == {retry, both}   # absolute
    assert await _ids(store, file="ledger_io.py") == {both}                  # `_` is no wildcard
    assert await _ids(store, file="ledger_Io.py") == set()                   # case matters, on both backends
    assert await _ids(store, file="회의록.md") == {notes}
    assert await _ids(store, repo="shop") == {retry, both}
    assert await _ids(store, repo="git@github.com:acme/shop.git") == {retry, both}
    assert await _ids(store, repo="/src/shop", file="ledger_io.py") == {both}
    assert await _ids(store, repo="other", file="retry.py") == set()
    assert await _ids(store, user_id="bob", file="retry.py") == set()
    kw = await store.keyword_search(SearchFilters(user_id="alice", file="retry.py"), query_terms("retry"), 10)
    assert {m.id for m, _ in kw} == {retry, both}

    assert await store.anchor_repos() == [("/src/shop", "git@github.com:acme/shop.git")]
    in_repo = await store.anchors_in_repo("/src/shop", "")
    assert [(r.memory_id, r.anchor.path) for r in in_repo] == [
        (retry, "billing/retry.py"), (both, "billing/retry.py"), (both, "billing/ledger_io.py")]
    other_clone = await store.anchors_in_repo("/elsewhere/shop", "git@github.com:acme/shop.git", after_id=in_repo[0].id)
    assert len(other_clone) == 2                                             # matched by remote, paged by id
    assert await store.anchors_in_repo("/elsewhere/shop", "") == []

    # A check marks the memory possibly stale; the filters see it at once.
    await store.record_checks([AnchorCheck(in_repo[0].id, "changed", "billing/retry.py changed 3 commits ago",
                                           checked_head="h" * 40, checked_blob="n" * 40)], T0)
    assert await _ids(store, stale="only") == {retry}
    assert await _ids(store, stale="exclude") == {both, notes, plain}
    row = (await store.anchors_for([retry]))[retry][0]
    assert row.stale and row.detail.endswith("3 commits ago") and row.checked_blob == "n" * 40
    assert row.anchor.commit == "c" * 40                                     # untouched unless the check sets it
    await store.record_checks([AnchorCheck(in_repo[0].id, "unchanged", commit="d" * 40, blob="e" * 40)], T0)
    row = (await store.anchors_for([retry]))[retry][0]
    assert (row.status, row.anchor.commit, row.anchor.blob) == ("unchanged", "d" * 40, "e" * 40)

    # Re-indexing replaces; soft forget hides the row's anchors from checks and filters.
    await store.index_code_refs(both, [_anchor("billing/ledger_io.py")], [])
    assert [r.anchor.path for r in (await store.anchors_for([both]))[both]] == ["billing/ledger_io.py"]
    await store.update_memory(both, {"deleted_at": T0})
    assert await _ids(store, file="ledger_io.py") == set()
    assert [r.memory_id for r in await store.anchors_in_repo("/src/shop", "")] == [retry]


async def test_fingerprint_matches_within_scope_whole_first(store: Store) -> None:
    from gieok.core.fingerprint import fingerprints
    trace = ("Traceback (most recent call last):\n  File \"/a/shop/billing/retry.py\", line 6, in backoff\n"
             "    return xs[7]\nIndexError: list index out of range\n")
    fp = fingerprints(trace)[0]
    loose = fingerprints("IndexError: list index out of range")[0]
    assert fp.signature == loose.signature != fp.digest
    old = await put(store, "old paste", at=T0)
    new = await put(store, "new paste", at=T0 + timedelta(days=1))
    sig_only = await put(store, "bare line, later", at=T0 + timedelta(days=2))
    bobs = await put(store, "bob's paste", user="bob", at=T0 + timedelta(days=3))
    gone = await put(store, "forgotten paste", at=T0 + timedelta(days=4))
    for mid, f in ((old, fp), (new, fp), (sig_only, loose), (bobs, fp), (gone, fp)):
        await store.index_code_refs(mid, [], [f])
    await store.update_memory(gone, {"deleted_at": T0})
    got = await store.fingerprint_matches(SearchFilters(user_id="alice"), [fp.digest], [fp.signature], 10)
    assert [(m.memory_id, m.exact) for m in got] == [(new, True), (old, True), (sig_only, False)]
    assert got[0].fingerprint["error_type"] == "IndexError" and got[0].fingerprint["frames"] == ["retry.py:backoff"]
    assert [m.memory_id for m in await store.fingerprint_matches(SearchFilters(user_id="bob"), [fp.digest], [], 10)
            ] == [bobs]
    assert await store.fingerprint_matches(SearchFilters(user_id="alice"), [], [], 10) == []
    assert [m.memory_id for m in await store.fingerprint_matches(SearchFilters(user_id="alice"), [fp.digest],
                                                                 [fp.signature], 1)] == [new]


async def test_hard_delete_erases_anchors_and_fingerprints(store: Store) -> None:
    from gieok.core.fingerprint import fingerprints
    fp = fingerprints("KeyError: 'customer_id'")[0]
    mid = await put(store, "KeyError: 'customer_id' in billing/retry.py")
    keep = await put(store, "another memory about billing/retry.py")
    await store.index_code_refs(mid, [_anchor("billing/retry.py")], [fp])
    await store.index_code_refs(keep, [_anchor("billing/retry.py")], [])
    assert await _raw_count(store, "memory_anchors", mid) == 1
    assert await _raw_count(store, "memory_fingerprints", mid) == 1
    assert await store.hard_delete(mid)
    assert await _raw_count(store, "memory_anchors", mid) == 0
    assert await _raw_count(store, "memory_fingerprints", mid) == 0
    assert await store.anchors_for([mid]) == {}
    assert await store.fingerprint_matches(SearchFilters(user_id="alice"), [fp.digest], [fp.signature], 5) == []
    assert [r.memory_id for r in await store.anchors_in_repo("/src/shop", "")] == [keep]
    await store.index_code_refs(mid, [_anchor("x.py")], [fp])       # indexing an erased row writes nothing
    assert await _raw_count(store, "memory_anchors", mid) == 0


async def has_archived_as_viewers(store: Store) -> int:
    """`has_archived` with a viewer sees the archived rows that viewer may see, and no others. Returns how many
    (viewer, expected) cases were tried."""
    eve, eng, ops = (Principal("eve", teams=("eng",)), Principal("frank", teams=("eng",)),
                     Principal("gus", teams=("ops",)))
    shared = await put(store, "eve's archived team note", user="eve", privacy_scope="team", team="eng")
    await store.update_memory(shared, {"is_active": False})
    cases = [(eve, True), (eng, True), (ops, False), (Principal("hal"), False)]
    got = [await store.has_archived(p.user_id, p) for p, _ in cases]
    assert got == [want for _, want in cases]
    await store.update_memory(shared, {"privacy_scope": "public", "team": ""})
    assert await store.has_archived("hal", Principal("hal")) is True     # public: anyone's
    await store.update_memory(shared, {"deleted_at": T0})
    return len(cases) + 1

"""Forgetting and review (ARCHITECTURE §7): forget score, soft archive by kind TTL, hard delete only when enabled,
pinned rows exempt, the spaced-review schedule and its place in load_context, synonym tags merged."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from gieok.app.runtime import open_service
from gieok.core.errors import InvalidInput, NotFound
from gieok.core.models import Identity, Memory, SearchFilters
from gieok.core.settings import Settings, load_settings
from gieok.librarian import maintenance
from gieok.librarian.maintenance import forget_score
from gieok.memory.context import load_context
from gieok.memory.ingest import MessageIn
from gieok.memory.service import MemoryService
from gieok.store.base import ColdResult, ProjectTag
from tests.fakes.embedding_server import FakeEmbeddingServer

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def make_settings(db_url: str, tmp_path: Path, **kw: object) -> Settings:
    base: dict[str, object] = dict(database_url=db_url, home=str(tmp_path), user_id="alice", embedder="none",
                                   librarian=False)
    base.update(kw)
    return load_settings(**base)


@pytest.fixture
async def svc(db_url: str, tmp_path: Path) -> AsyncIterator[MemoryService]:
    async with open_service(make_settings(db_url, tmp_path)) as service:
        yield service


async def run_maintenance(svc: MemoryService, now: datetime) -> dict[str, Any]:
    """The maintenance job as the librarian runs it: on the service's store, settings and embedder."""
    return await maintenance.run_maintenance(svc.store, svc.settings, embedder=svc.embedder,
                                             processor=svc.processor, now=now)


async def put(svc: MemoryService, text: str, *, age_days: float, kind: str = "episodic", importance: float = 0.5,
              pinned: bool = False, user: str = "alice", meta: dict[str, object] | None = None,
              session: str = "") -> str:
    mid, _ = await svc.ingest(MessageIn(content=text, user_id=user, kind=kind, importance=importance, is_pinned=pinned,
                                        created_at=NOW - timedelta(days=age_days), meta=dict(meta or {}),
                                        session_id=session))
    return mid


async def get(svc: MemoryService, mid: str) -> Memory:
    m = await svc.store.get_memory(mid)
    assert m is not None
    return m


def test_forget_score_follows_the_formula() -> None:
    fresh = Memory(id="a", user_id="u", content="x", kind="episodic", created_at=NOW)
    assert forget_score(fresh, NOW) == pytest.approx(0.25 - 0.15 * 0.5)  # recency 1, unused, importance 0.5
    month = Memory(id="b", user_id="u", content="x", kind="episodic", created_at=NOW - timedelta(days=30))
    assert forget_score(month, NOW, dup_ratio=1.0) == pytest.approx(0.35 * 0.5 + 0.25 + 0.20 - 0.075)
    used = Memory(id="c", user_id="u", content="x", kind="episodic", created_at=NOW - timedelta(days=30),
                  view_count=3, cite_count=2)
    assert forget_score(used, NOW) < forget_score(month, NOW)
    pinned = Memory(id="d", user_id="u", content="x", kind="episodic", created_at=NOW, is_pinned=True)
    assert forget_score(pinned, NOW) == pytest.approx(0.25 - 0.15 * 0.7 - 0.30)  # importance +0.2 when pinned


async def test_soft_archive_by_kind_ttl_and_score(svc: MemoryService) -> None:
    stale_working = await put(svc, "scratch note", age_days=25, kind="working", importance=0.0)
    young_working = await put(svc, "scratch note 2", age_days=1, kind="working", importance=0.0)  # < TTL 2 d
    kept_working = await put(svc, "a working note someone cares about", age_days=25, kind="working", importance=0.9)
    old_episode = await put(svc, "we talked about lunch", age_days=200)  # importance 0.5: tops out at 0.525
    consolidated = await put(svc, "deploy talk", age_days=130, meta={"consolidated_into": "x"})
    young_consolidated = await put(svc, "deploy talk 2", age_days=20, meta={"consolidated_into": "x"})  # < 30 d
    semantic = await put(svc, "deploys happen on friday", age_days=900, kind="semantic", importance=0.0)
    pinned = await put(svc, "my old pinned scratch", age_days=900, kind="working", importance=0.0, pinned=True)
    res = await run_maintenance(svc, now=NOW)
    assert set(res["archived_ids"]) == {stale_working, consolidated}
    for mid in (stale_working, consolidated):
        m = await get(svc, mid)
        assert not m.is_active and m.archived_at == NOW
    for mid in (young_working, kept_working, old_episode, young_consolidated, semantic, pinned):
        assert (await get(svc, mid)).is_active, mid
    # Archived is not deleted: searchable with include_archived, gone from the default view.
    outcome = await svc.search(SearchFilters(user_id="alice", include_archived=True), "scratch", count_view=False)
    assert stale_working in {h.memory.id for h in outcome.hits}
    outcome = await svc.search(SearchFilters(user_id="alice"), "scratch", count_view=False)
    assert stale_working not in {h.memory.id for h in outcome.hits}


async def test_duplicates_are_archived_and_only_the_newer_twin_survives(db_url: str, tmp_path: Path) -> None:
    with FakeEmbeddingServer() as server:
        s = make_settings(db_url, tmp_path, embedder="openai", embedding_url=server.openai_url, embedding_model="fake")
        async with open_service(s) as svc:
            text = "the staging database password rotates every ninety days"
            older = await put(svc, text, age_days=60)
            newer = await put(svc, text + ".", age_days=40)
            bobs = await put(svc, text, age_days=1, user="bob")  # another user's twin is not ours
            other = await put(svc, "an unrelated thought about lunch menus", age_days=60)
            await svc.processor.run_once()
            res = await run_maintenance(svc, now=NOW)
            assert res["archived_ids"] == [older] and res["duplicates_linked"] == 1
            assert [(x.src, x.dst, x.relation) for x in await svc.store.list_links(older)] == [
                (older, newer, "duplicates")]
            for mid in (newer, bobs, other):
                assert (await get(svc, mid)).is_active


async def test_hard_delete_only_when_enabled_and_erases_everywhere(db_url: str, tmp_path: Path) -> None:
    async with open_service(make_settings(db_url, tmp_path, hard_delete=False)) as svc:
        keep = await put(svc, "the kept twin", age_days=0.5, kind="working")
        gone = await put(svc, "the forgotten twin, said in Lisbon", age_days=40, kind="working", importance=0.0)
        await svc.store.add_link(gone, keep, "duplicates")
        await svc.store.add_feedback(gone, "neglected", -0.5, NOW - timedelta(days=39))
        res = await run_maintenance(svc, now=NOW)
        assert res["hard_deleted"] == 0 and res["archived_ids"] == [gone]  # disabled: archived, never erased
        assert await svc.store.get_memory(gone) is not None
    async with open_service(make_settings(db_url, tmp_path, hard_delete=True)) as svc:
        res = await run_maintenance(svc, now=NOW)  # the archived row is past TTL_hard and over 0.8
        assert res["hard_deleted"] == 1
        assert await svc.store.get_memory(gone, include_deleted=True) is None
        assert await svc.store.list_links(keep) == [] and await svc.store.list_feedback(gone) == []
        f = SearchFilters(user_id="alice", include_archived=True)
        assert await svc.store.substring_search(f, "Lisbon", 5) == []
        assert [m.id async for m in svc.store.iter_memories("alice", include_deleted=True)] == [keep]


async def test_hard_delete_drops_profile_facts_learned_only_from_the_row(db_url: str, tmp_path: Path) -> None:
    async with open_service(make_settings(db_url, tmp_path, hard_delete=True)) as svc:
        gone = await put(svc, "I live in Lisbon.", age_days=40, kind="working", importance=0.0)
        await svc.processor.run_once()
        assert any(f["value"] == "Lisbon" for f in (await svc.profile("alice")).sub_profile)
        keep = await put(svc, "twin", age_days=0.5, kind="working")
        await svc.store.add_link(gone, keep, "duplicates")
        await run_maintenance(svc, now=NOW)
        assert not any(f["value"] == "Lisbon" for f in (await svc.profile("alice")).sub_profile)


async def test_review_schedule_and_due_reviews_in_context(svc: MemoryService) -> None:
    t0 = NOW - timedelta(days=30)
    old_fact = await put(svc, "The staging cluster lives in eu-west-1.", age_days=40, kind="semantic")
    new_fact = await put(svc, "The release train leaves on Thursdays.", age_days=30 + 1 / 24, kind="procedural")
    explicit = (await svc.remember(MessageIn(content="Use the blue deploy button", user_id="alice",
                                             created_at=t0 - timedelta(days=10)))).id
    episode = await put(svc, "we chatted about the weather", age_days=40)
    res = await run_maintenance(svc, now=t0)
    assert res["review_enrolled"] == 3
    # First review one day after creation; a row enrolled late is due at once.
    m = await get(svc, new_fact)
    assert m.next_review_at == t0 - timedelta(hours=1) + timedelta(days=1) and m.review_interval_days == 1
    assert (await get(svc, old_fact)).next_review_at == t0
    assert (await get(svc, episode)).next_review_at is None  # transcripts are not reviewed
    shown = t0 + timedelta(minutes=1)
    assert {x.id for x in await svc.due_reviews("alice", shown)} == {old_fact, explicit}
    block = await load_context(svc, Identity(user_id="alice"), now=shown)
    assert [item["id"] for item in block.sections["review"]] == [old_fact]  # the pinned one is shown as pinned
    assert "Due for review" in block.text
    # Offered but not yet for a day: stays due. After a day: the next interval is 6 days.
    await run_maintenance(svc, now=shown)
    assert (await get(svc, old_fact)).review_interval_days == 1
    second = t0 + timedelta(days=1, minutes=2)
    res = await run_maintenance(svc, now=second)
    m = await get(svc, old_fact)
    assert m.review_interval_days == 6 and m.next_review_at == second + timedelta(days=6)
    assert (await get(svc, new_fact)).review_interval_days == 1  # came due at t0+23h: not yet a day
    # Reviewed (opened after it came due): the interval grows by importance and usage.
    third_due = second + timedelta(days=6)
    await svc.open(old_fact, "alice", now=third_due + timedelta(minutes=1))
    await run_maintenance(svc, now=third_due + timedelta(minutes=2))
    m = await get(svc, old_fact)
    usage = math.log(2) / (1 + math.log(2))
    assert m.review_interval_days == math.ceil(6 * (1 + 0.5 * 0.6 + 0.3 * usage)) == 9


async def test_clear_synonym_tags_are_merged_and_rows_rewritten(svc: MemoryService) -> None:
    await svc.store.upsert_project_tag(ProjectTag("centrazen", usage_count=5))
    await svc.store.upsert_project_tag(ProjectTag("centrazen-project", usage_count=1))
    await svc.store.upsert_project_tag(ProjectTag("webshop", usage_count=2))
    a = await put(svc, "one", age_days=1)
    b = await put(svc, "two", age_days=1)
    await svc.store.complete_cold([ColdResult(a, p_tags=["centrazen-project"], d_tags=[]),
                                   ColdResult(b, p_tags=["webshop"], d_tags=[])], NOW)
    res = await run_maintenance(svc, now=NOW)
    assert res["tags_merged"] == 1 and res["rows_retagged"] == 1
    tags = {t.name: t for t in await svc.store.list_project_tags()}
    assert tags["centrazen-project"].alias_of == "centrazen" and tags["centrazen"].usage_count == 6
    assert tags["webshop"].alias_of is None
    assert (await get(svc, a)).p_tags == ["centrazen"] and (await get(svc, b)).p_tags == ["webshop"]


async def test_merge_tags_follows_aliases_and_refuses_cycles(svc: MemoryService) -> None:
    for name in ("gieok", "memory-server", "mem-srv"):
        await svc.store.upsert_project_tag(ProjectTag(name))
    await maintenance.merge_tags(svc.store, "memory-server", "gieok")
    res = await maintenance.merge_tags(svc.store, "mem-srv", "memory-server")  # an alias resolves to its canonical tag
    assert res["canonical"] == "gieok"
    with pytest.raises(InvalidInput, match="other way round"):
        await maintenance.merge_tags(svc.store, "gieok", "memory-server")
    with pytest.raises(NotFound):
        await maintenance.merge_tags(svc.store, "no-such-tag", "gieok")
    with pytest.raises(InvalidInput):
        await maintenance.merge_tags(svc.store, "gieok", "Gieok")


SESSION = [
    "결제 모듈에서 환불 API가 500 에러 나. 로그 보면 NullPointerException at RefundService.java:88",
    "RefundService.java 88번째 줄에서 order.getPayment()가 null이에요. 부분 환불된 주문은 payment가 분리돼서 그래요. "
    "null 체크 추가하고 PartialRefund 테이블에서 조회하도록 고쳤습니다.",
    "고마워, 배포는 내일 오전에 할게",
    "Can you set up the nightly job that exports invoices to S3?",
    "Added a CronJob invoice-export at 01:30 KST that writes CSVs to s3://acme-billing/exports/.",
    "great, also send a Slack message when it fails",
]


async def test_a_reply_is_no_duplicate_of_what_it_replies_to(tmp_path: Path) -> None:
    # A chat message is embedded with the one before it: on the local model "고마워, 배포는 내일 오전에 할게" stood at
    # cosine ≥ 0.95 to the answer it thanked for, and the answer (and the question before it) were archived as its
    # duplicates 30 days on; LoCoMo dev conversation 30 lost 241 of its 369 turns that way.
    from tests.conftest import e5_service

    start = datetime(2026, 9, 1, 10, tzinfo=UTC)
    created = [start + timedelta(minutes=i) for i in range(len(SESSION))]
    async with e5_service(tmp_path, SESSION, session_id="s1", created=created) as svc:
        # The same rule said again in another session, a day later: a duplicate in words too.
        again, _ = await svc.ingest(MessageIn(content=SESSION[4] + " ", user_id="alice", session_id="s2",
                                              created_at=start + timedelta(days=1)))
        assert svc.processor is not None
        await svc.processor.run_once()
        res = await run_maintenance(svc, now=start + timedelta(days=60))
        rows = {m.content: m async for m in svc.store.iter_memories("alice")}
        assert res["archived"] == 1 and not rows[SESSION[4]].is_active, res
        assert all(rows[t].is_active for t in SESSION if t != SESSION[4])
        later = start + timedelta(days=60)
        hits = (await svc.search(svc.filters("alice"), "환불 500 에러 원인이 뭐였지?", limit=5, now=later,
                                 count_view=False)).hits
        assert SESSION[1] in [h.memory.content for h in hits]
        assert (await get(svc, again)).is_active      # of the twins, the newer survives


async def test_rows_archived_as_duplicates_by_their_vectors_alone_come_back(svc: MemoryService) -> None:
    # As the vectors-only rule left them: an answer archived as a duplicate of the reply after it.
    answer = await put(svc, "Added a CronJob invoice-export at 01:30 KST that writes CSVs to S3.", age_days=60,
                       session="s1")
    reply = await put(svc, "great, also send a Slack message when it fails", age_days=60, session="s1")
    twin = await put(svc, "we deploy on fridays", age_days=61, session="s2")
    kept = await put(svc, "we deploy on fridays.", age_days=50, session="s2")
    # Across sessions too ("Thanks! I'm going for my dreams!" and "Thanks! Keep going for your dreams and don't
    # quit!" on LoCoMo), but someone's own link between two notes, whatever their words, is kept.
    other = await put(svc, "Thanks! I'm going for my dreams!", age_days=70, session="s3")
    later = await put(svc, "Thanks! Keep going for your dreams and don't quit!", age_days=40, session="s4")
    mine = await put(svc, "the retry fix from Tuesday", age_days=70)
    theirs = await put(svc, "Backoff now doubles up to five tries", age_days=40)
    for old, new in ((answer, reply), (twin, kept), (other, later), (mine, theirs)):
        await svc.store.add_link(old, new, "duplicates")
        await svc.store.update_memory(old, {"is_active": False, "archived_at": NOW - timedelta(days=5)})
    res = await run_maintenance(svc, now=NOW)
    assert res["restored"] == 2 and (await get(svc, other)).is_active
    row = await get(svc, answer)
    assert row.is_active and row.archived_at is None and row.meta["duplicate_words_checked"] is True
    assert [x for x in await svc.store.list_links(answer) if x.relation == "duplicates"] == []
    # A twin in words stays archived, linked to the one that survives; and each row is looked at once.
    assert not (await get(svc, twin)).is_active
    assert [(x.src, x.dst) for x in await svc.store.list_links(twin)] == [(twin, kept)]
    assert not (await get(svc, mine)).is_active
    assert (await run_maintenance(svc, now=NOW))["restored"] == 0

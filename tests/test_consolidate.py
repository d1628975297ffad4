"""Consolidation: recent episodes of a project become semantic memories linked to their sources; a later fact
that disagrees with an earlier one is linked, never overwritten; one session can be summarised on demand."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from gieok.app.runtime import open_service
from gieok.core.errors import NotFound
from gieok.core.models import Memory, SearchFilters
from gieok.core.settings import Settings, load_settings
from gieok.librarian import consolidate as consolidation
from gieok.librarian.consolidate import cluster_rows
from gieok.librarian.contradictions import conflict, moved
from gieok.memory.forgetting import drop_from_summaries as drop_from_store_summaries
from gieok.memory.ingest import MessageIn
from gieok.memory.service import MemoryService
from tests.fakes.embedding_server import FakeEmbeddingServer
from tests.fakes.llm_server import FakeLLMServer

T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
LATER = T0 + timedelta(hours=3)  # past the settle time of every turn below

DEPLOY = ["We deploy the API on Friday afternoon after the release review.",
          "The Friday deploy needs the release checklist and a rollback plan.",
          "Can the release review move earlier so the Friday deploy starts at two?",
          "Yes, the release review is at noon and the deploy starts at two on Friday."]
DATABASE = ["The Postgres connection pool should stay at twenty connections.",
            "Postgres lock timeouts happen when the batch job holds the connection pool.",
            "Move the batch job off peak hours so Postgres keeps free connections.",
            "The connection pool of twenty is enough for Postgres once the batch job moves."]
KO_DEPLOY = ["배포는 금요일 오후에 릴리스 리뷰 후에 진행합니다.",
             "금요일 배포 전에 릴리스 체크리스트를 확인해야 해요.",
             "릴리스 리뷰가 늦어지면 금요일 배포도 늦어집니다.",
             "금요일 배포 롤백 계획도 릴리스 체크리스트에 넣어 주세요."]
KO_COFFEE = ["회사 앞 카페 커피가 정말 맛있어요.",
             "카페 라떼는 오후에 마시면 잠이 안 와요.",
             "커피 원두는 카페에서 직접 사는 게 좋아요.",
             "점심 먹고 카페에서 커피 한 잔 할까요?"]


# The librarian's jobs take the store, settings and embedder, and the librarian as the processor that tags and
# embeds each summary at once; these call them the way the librarian does.
async def consolidate(svc: MemoryService, now: datetime) -> dict[str, Any]:
    return await consolidation.consolidate(svc.store, svc.settings, embedder=svc.embedder, processor=svc.processor,
                                           now=now)


async def summarize_session(svc: MemoryService, user_id: str, session_id: str) -> dict[str, Any]:
    return await consolidation.summarize_session(svc.store, svc.settings, user_id, session_id,
                                                 processor=svc.processor)


async def drop_from_summaries(svc: MemoryService, memory_id: str) -> list[str]:
    return await drop_from_store_summaries(svc.store, memory_id, svc.processor)


def make_settings(db_url: str, tmp_path: Path, **kw: object) -> Settings:
    base: dict[str, object] = dict(database_url=db_url, home=str(tmp_path), user_id="alice", embedder="none",
                                   librarian=False)
    base.update(kw)
    return load_settings(**base)


@pytest.fixture
async def svc(db_url: str, tmp_path: Path) -> AsyncIterator[MemoryService]:
    async with open_service(make_settings(db_url, tmp_path)) as service:
        yield service


async def turns(svc: MemoryService, texts: list[str], *, start: datetime = T0, project: str = "gieok",
                session: str = "s1", user: str = "alice") -> list[str]:
    ids = []
    for i, text in enumerate(texts):
        mid, _ = await svc.ingest(MessageIn(content=text, user_id=user, role="user" if i % 2 == 0 else "assistant",
                                            project=project, session_id=session,
                                            created_at=start + timedelta(minutes=i)))
        ids.append(mid)
    await svc.processor.run_once()  # tagged (p_tag, d_tags) as the librarian would before consolidating
    return ids


async def sources_of(svc: MemoryService, summary_id: str) -> set[str]:
    return {x.dst for x in await svc.store.list_links(summary_id) if x.relation == "derived_from"
            and x.src == summary_id}


async def test_each_topic_becomes_one_semantic_memory_linked_to_its_sources(svc: MemoryService) -> None:
    deploy = await turns(svc, DEPLOY)
    db = await turns(svc, DATABASE, start=T0 + timedelta(minutes=10))
    res = await consolidate(svc, now=LATER)
    assert len(res["summaries"]) == 2 and res["rows_consolidated"] == 8
    got = {frozenset(await sources_of(svc, sid)) for sid in res["summaries"]}
    assert got == {frozenset(deploy), frozenset(db)}  # topics never mixed
    for sid in res["summaries"]:
        m = await svc.store.get_memory(sid)
        assert m is not None and (m.kind, m.role, m.source) == ("semantic", "system", "tool")
        assert m.p_tags == ["gieok"] and m.meta["origin"] == "librarian" and m.meta["method"] == "extractive"
        assert m.meta["source_count"] == 4 and m.tag_status == "ok"
        lines = m.content.splitlines()
        assert 1 <= len(lines) <= 3 and all(line.startswith(("- user: ", "- assistant: ")) for line in lines)
    for mid in deploy + db:
        row = await svc.store.get_memory(mid)
        assert row is not None and row.meta["consolidated_into"] in res["summaries"]
    # Sources are not summarised twice.
    again = await consolidate(svc, now=LATER + timedelta(hours=1))
    assert again["summaries"] == [] and again["rows_consolidated"] == 0


async def test_korean_topics_are_clustered_and_summarised_in_korean(svc: MemoryService) -> None:
    deploy = await turns(svc, KO_DEPLOY)
    coffee = await turns(svc, KO_COFFEE, start=T0 + timedelta(minutes=10))
    res = await consolidate(svc, now=LATER)
    got = {frozenset(await sources_of(svc, sid)) for sid in res["summaries"]}
    assert got == {frozenset(deploy), frozenset(coffee)}
    texts = [m.content for m in await svc.store.get_memories(res["summaries"])]
    assert any("금요일 배포" in t or "배포" in t for t in texts) and any("카페" in t for t in texts)


async def test_window_settle_time_and_projects_bound_what_is_consolidated(svc: MemoryService) -> None:
    await turns(svc, DEPLOY[:2], project="gieok")
    await turns(svc, DEPLOY[2:], project="webshop")  # same words, another project
    await turns(svc, DATABASE, start=LATER - timedelta(minutes=10))  # still being talked about
    await turns(svc, KO_COFFEE, start=T0 - timedelta(days=30))  # long past the window
    res = await consolidate(svc, now=LATER)
    assert res["summaries"] == [] and res["rows_consolidated"] == 0


async def test_clusters_use_vectors_when_every_row_has_one(db_url: str, tmp_path: Path) -> None:
    with FakeEmbeddingServer() as server:
        s = make_settings(db_url, tmp_path, embedder="openai", embedding_url=server.openai_url, embedding_model="fake")
        async with open_service(s) as svc:
            deploy = await turns(svc, DEPLOY)
            db = await turns(svc, DATABASE, start=T0 + timedelta(minutes=10))
            rows = await svc.store.get_memories(deploy + db)
            vecs = await svc.store.get_vectors([m.id for m in rows], "openai/fake")
            assert len(vecs) == 8
            clusters = cluster_rows(rows, vecs)
            assert {frozenset(m.id for m in c) for c in clusters} == {frozenset(deploy), frozenset(db)}
            res = await consolidate(svc, now=LATER)
            assert len(res["summaries"]) == 2
            summary = await svc.store.get_memory(res["summaries"][0])
            assert summary is not None and summary.embed_status == "ok"  # embedded at once, findable by meaning


async def test_forgetting_a_source_reaches_its_summary(svc: MemoryService) -> None:
    deploy = await turns(svc, DEPLOY)
    res = await consolidate(svc, now=LATER)
    sid = res["summaries"][0]
    summary = await svc.store.get_memory(sid)
    assert summary is not None and DEPLOY[0] in summary.content  # quoted verbatim
    assert await drop_from_summaries(svc, deploy[0]) == [sid]
    await svc.forget(deploy[0], "alice", hard=True)
    rebuilt = await svc.store.get_memory(sid)
    assert rebuilt is not None and DEPLOY[0] not in rebuilt.content and rebuilt.meta["source_count"] == 3
    assert await sources_of(svc, sid) == set(deploy[1:])
    hits = await svc.store.substring_search(SearchFilters(user_id="alice"), "afternoon after the release", 5)
    assert hits == []  # gone from the full-text index of the summary too
    for mid in deploy[1:]:
        await drop_from_summaries(svc, mid)
        await svc.forget(mid, "alice", hard=True)
    assert await svc.store.get_memory(sid, include_deleted=True) is None  # nothing left to summarise


# --- contradictions -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(("old", "new", "expected"), [
    ("Deploys happen on Friday.", "Deploys happen on Monday.", "supersedes"),
    ("The API timeout is 30 seconds.", "The API timeout is 60 seconds.", "supersedes"),
    ("배포는 매주 금요일 오후에 합니다.", "배포는 매주 월요일 오후에 합니다.", "supersedes"),
    # Day and time changed together: one slot, an update (3 of 5 words shared).
    ("Deploys happen on Friday afternoon.", "Deploys happen on Monday morning.", "supersedes"),
    ("배포는 매주 금요일 오후에 합니다.", "배포는 매주 월요일 오전에 합니다.", "supersedes"),
    ("The API timeout is 30 seconds.", "The API timeout is two minutes.", "supersedes"),
    ("Deploys happen on Friday.", "Deploys never happen on Friday.", "contradicts"),
    ("We use Postgres.", "We use SQLite.", "contradicts"),  # a short frame: a conflict, not surely an update
    ("Deploys happen on Friday.", "Deploys happen on Friday after the review.", None),  # an elaboration
    ("Deploys happen on Friday.", "Deploys happen on Friday.", None),
    ("Deploys happen on Friday.", "Coffee is served at noon.", None),
])
def test_offline_conflict_rule(old: str, new: str, expected: str | None) -> None:
    assert conflict(new, old) == expected


async def knowledge(svc: MemoryService, text: str, at: datetime, project: str = "gieok") -> str:
    mid, _ = await svc.ingest(MessageIn(content=text, user_id="alice", kind="semantic", source="manual",
                                        project=project, created_at=at))
    await svc.processor.run_once()
    return mid


async def test_a_later_fact_supersedes_the_earlier_one_and_both_stay(svc: MemoryService) -> None:
    old = await knowledge(svc, "Deploys happen on Friday.", T0)
    other_project = await knowledge(svc, "Deploys happen on Tuesday.", T0 + timedelta(minutes=1), project="webshop")
    detail = await knowledge(svc, "Deploys happen on Friday after the release review.", T0 + timedelta(minutes=2))
    new = await knowledge(svc, "Deploys happen on Monday.", T0 + timedelta(hours=1))
    res = await consolidate(svc, now=LATER)
    assert (new, old, "supersedes") in [tuple(x) for x in res["links"]]
    links = {(x.src, x.dst, x.relation) for x in await svc.store.list_links(new)}
    assert (new, old, "supersedes") in links
    assert not any(other_project in (s, d) for s, d, _ in links)  # another project's deploys are not ours
    assert not any(detail in (s, d) and r == "supersedes" and s == detail for s, d, r in links)
    kept = await svc.store.get_memory(old)
    assert kept is not None and kept.content == "Deploys happen on Friday." and kept.meta["superseded_by"] == new
    newer = await svc.store.get_memory(new)
    assert newer is not None and newer.meta["contradiction_checked"] == "offline"
    again = await consolidate(svc, now=LATER + timedelta(hours=1))
    assert again["checked"] == 0 and again["links"] == []


async def test_korean_later_fact_supersedes(svc: MemoryService) -> None:
    old = await knowledge(svc, "배포는 매주 금요일 오후에 합니다.", T0)
    new = await knowledge(svc, "배포는 매주 월요일 오후에 합니다.", T0 + timedelta(days=1))
    await consolidate(svc, now=LATER + timedelta(days=1))
    assert [(x.src, x.dst, x.relation) for x in await svc.store.list_links(old)] == [(new, old, "supersedes")]


# --- with an LLM --------------------------------------------------------------------------------------------
@pytest.fixture
def llm_server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(default_answer={"results": []}) as s:
        yield s


async def llm_svc(db_url: str, tmp_path: Path, server: FakeLLMServer) -> AsyncIterator[MemoryService]:
    s = make_settings(db_url, tmp_path, llm="openai", llm_url=server.url, llm_model="fake", provider_timeout_s=2)
    async with open_service(s) as svc:
        yield svc


def tag_answer(n: int) -> dict[str, object]:
    return {"results": [{"index": i, "p_tag": "gieok", "d_tags": ["deploy"]} for i in range(n)]}


async def test_llm_summary_is_validated_and_used(db_url: str, tmp_path: Path, llm_server: FakeLLMServer) -> None:
    async for svc in llm_svc(db_url, tmp_path, llm_server):
        llm_server.script(tag_answer(4))
        ids = await turns(svc, DEPLOY)
        llm_server.script({"title": "Friday deploys", "statements": ["The user decided deploys run on Friday at two."]},
                          tag_answer(1))  # the summary, then its own tagging
        res = await consolidate(svc, now=LATER)
        assert len(res["summaries"]) == 1
        m = await svc.store.get_memory(res["summaries"][0])
        assert m is not None and m.title == "Friday deploys" and m.meta["method"] == "llm:openai/fake"
        assert m.content == "- The user decided deploys run on Friday at two."
        assert await sources_of(svc, m.id) == set(ids)
        prompt = next(r.prompt for r in llm_server.requests if "consolidate" in r.prompt)
        assert "Never state the assistant's guesses about the user" in prompt and DEPLOY[0] in prompt


async def test_llm_garbage_falls_back_to_extractive_and_outage_waits(db_url: str, tmp_path: Path,
                                                                      llm_server: FakeLLMServer) -> None:
    async for svc in llm_svc(db_url, tmp_path, llm_server):
        llm_server.script(tag_answer(4))
        ids = await turns(svc, DEPLOY)
        llm_server.fail("down", times=1)
        res = await consolidate(svc, now=LATER)
        assert res["summaries"] == [] and "TransientProviderError" in res["errors"][0]
        assert all(not m.meta.get("consolidated_into") for m in await svc.store.get_memories(ids))  # retried later
        llm_server.fail("garbage", times=1)
        llm_server.script(tag_answer(1))
        res = await consolidate(svc, now=LATER)
        m = await svc.store.get_memory(res["summaries"][0])
        assert m is not None and m.meta["method"] == "extractive" and "did not match" in m.meta["llm_error"]


async def test_llm_judges_contradictions(db_url: str, tmp_path: Path, llm_server: FakeLLMServer) -> None:
    async for svc in llm_svc(db_url, tmp_path, llm_server):
        llm_server.script(tag_answer(1))
        old = await knowledge(svc, "Our deploy day is Friday.", T0)
        llm_server.script({"judgments": []}, tag_answer(1))  # the old row is checked first: no candidates
        new = await knowledge(svc, "We ship releases at the start of the week now, deploy day moved.",
                              T0 + timedelta(hours=1))
        llm_server.script({"judgments": [{"index": 0, "relation": "supersedes"}]})
        res = await consolidate(svc, now=LATER)
        assert [tuple(x) for x in res["links"]] == [(new, old, "supersedes")]
        checked = await svc.store.get_memory(new)
        assert checked is not None and checked.meta["contradiction_checked"] == "llm:openai/fake"


# --- one session --------------------------------------------------------------------------------------------
async def test_summarize_session(svc: MemoryService) -> None:
    ids = await turns(svc, DEPLOY + DATABASE, session="s-42")
    await turns(svc, KO_COFFEE, session="other")
    res = await svc.processor.summarize_thread("alice", "s-42")
    assert res["created"] and res["sources"] == 8 and res["session_id"] == "s-42"
    assert await sources_of(svc, res["id"]) == set(ids)
    m = await svc.store.get_memory(res["id"])
    assert m is not None and m.kind == "semantic" and m.session_id == "s-42"
    assert 3 <= len(m.content.splitlines()) <= 8
    # Nothing new: the same summary. A new turn: a new summary that supersedes the previous one.
    assert (await summarize_session(svc, "alice", "s-42"))["id"] == res["id"]
    await turns(svc, ["Also remember the Friday deploy freeze in December."], session="s-42",
                start=T0 + timedelta(hours=1))
    res2 = await summarize_session(svc, "alice", "s-42")
    assert res2["created"] and res2["supersedes"] == res["id"] and res2["sources"] == 9
    with pytest.raises(NotFound):
        await summarize_session(svc, "alice", "no-such-session")
    with pytest.raises(NotFound):
        await summarize_session(svc, "bob", "s-42")  # another user's session is not visible


async def test_summary_rows_never_feed_the_profile(svc: MemoryService) -> None:
    await turns(svc, ["Let's plan the deploy.", "The user is a Staff Engineer, so the deploy plan can be terse.",
                      "Sure, terse deploy plan please.", "Deploy plan: Friday, two o'clock, with a rollback."],
                session="s-9")
    await summarize_session(svc, "alice", "s-9")
    await svc.processor.run_once()
    prof = await svc.profile("alice")
    assert all("staff" not in str(f.get("value", "")).lower() for f in prof.core_profile + prof.sub_profile)
    rows = await svc.store.list_memories(SearchFilters(user_id="alice", kinds=("semantic",)))
    assert rows and all(isinstance(m, Memory) and m.role == "system" for m in rows)


@pytest.mark.parametrize(("old", "new", "expected"), [
    ("We use MySQL 5.7 for the main database.", "Migrated the main database from MySQL to Postgres 15.", True),
    ("Our CI runs on Jenkins.", "Moved CI from Jenkins to GitHub Actions.", True),
    ("Billing service deploys to Heroku every Tuesday.", "Moved the billing service from Heroku to AWS.", True),
    ("Standup is at 10:00 in the small room.", "Moved standup from 10:00 to 10:30.", True),
    ("Hotfixes need two approvals.", "We went from two approvals to one for hotfixes.", True),
    ("우리 CI는 젠킨스에서 돈다.", "CI를 젠킨스에서 깃허브 액션으로 옮겼다.", True),
    ("주간 회의는 3층 회의실에서 한다.", "회의실을 3층에서 5층으로 옮겼어.", True),
    # Nothing else in common: the CI cache left S3, the backups did not; the billing service left Heroku, the
    # marketing site did not.
    ("Backups go to the S3 bucket acme-backup.", "Switched the CI cache from S3 to local disk.", False),
    ("The marketing site is on Heroku.", "Moved the billing service from Heroku to AWS.", False),
    # The old statement already names where it went; a route is no move.
    ("We moved CI to GitHub Actions from Jenkins last year.", "Moved CI from Jenkins to GitHub Actions.", False),
    ("The Seoul office has a train schedule board.", "The train from Seoul to Busan takes 2h30.", False),
    ("서울 사무실은 9시에 연다.", "서울에서 부산까지 기차로 2시간 반 걸려.", False),
])
def test_a_move_from_what_a_fact_states_supersedes_it(old: str, new: str, expected: bool) -> None:
    assert moved(new, old) is expected


async def test_a_move_supersedes_over_a_real_store(svc: MemoryService) -> None:
    old = await knowledge(svc, "We use MySQL 5.7 for the main database.", T0)
    backups = await knowledge(svc, "Backups of the main database go to S3.", T0 + timedelta(minutes=1))
    new = await knowledge(svc, "Migrated the main database from MySQL to Postgres 15 over the weekend.",
                          T0 + timedelta(days=30))
    await consolidate(svc, now=LATER + timedelta(days=30))
    assert [(x.src, x.dst, x.relation) for x in await svc.store.list_links(old)] == [(new, old, "supersedes")]
    assert await svc.store.list_links(backups) == []

"""load_context priorities and budget; explicit knowledge; forget; export/import round trip."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from gieok.app.runtime import open_service
from gieok.core.models import Identity
from gieok.core.settings import Settings, load_settings
from gieok.memory.context import load_context
from gieok.memory.export import export_text, import_ndjson
from gieok.memory.ingest import MessageIn
from gieok.memory.service import MemoryService

NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)


async def test_context_priority_and_budget(svc: MemoryService) -> None:
    await svc.profile_edit("alice", "core_profile", "add", "Alice, backend engineer", key="name")
    pinned = await svc.remember(MessageIn(content="Always answer in Korean", user_id="alice"))
    for i in range(50):
        await svc.ingest(MessageIn(content=f"turn {i} about the migration plan " + "x" * 200, user_id="alice",
                                   agent_platform="claude-code", created_at=NOW - timedelta(hours=50 - i)))
    await svc.ingest(MessageIn(content="codex said something", user_id="alice", agent_platform="codex",
                               created_at=NOW - timedelta(hours=1)))
    await svc.ingest(MessageIn(content="ancient history", user_id="alice", agent_platform="claude-code",
                               created_at=NOW - timedelta(days=10)))
    ident = Identity(user_id="alice", agent_platform="claude-code")
    block = await load_context(svc, ident, token_budget=1200, now=NOW)
    assert block.tokens <= 1200 and block.truncated
    text = block.text
    assert text.index("Alice, backend engineer") < text.index("Always answer in Korean") < text.index("turn 49")
    assert "codex said something" not in text        # another agent, no shared project
    assert "ancient history" not in text             # outside the short-term window
    assert "turn 0 " not in text                     # the budget keeps the newest turns
    assert block.sections["pinned"][0]["id"] == pinned.id
    big = await load_context(svc, ident, token_budget=100000, now=NOW)
    assert "turn 0 " in big.text and not big.truncated


async def test_many_pinned_memories_leave_room_for_the_session(svc: MemoryService) -> None:
    # Every explicit memory is pinned: 120 of them must not crowd out this session's turns.
    for i in range(120):
        await svc.remember(MessageIn(content=f"사실 {i}: 배포 규칙 메모 " + "y" * 120, user_id="alice",
                                     created_at=NOW - timedelta(days=30, minutes=i)))
    deploy = await svc.remember(MessageIn(content="결제 서비스는 금요일에 배포하지 않는다", user_id="alice",
                                          created_at=NOW - timedelta(days=60)))
    await svc.ingest(MessageIn(content="지금 세션에서 마이그레이션을 고치는 중", user_id="alice",
                               agent_platform="claude-code", created_at=NOW - timedelta(minutes=5)))
    ident = Identity(user_id="alice", agent_platform="claude-code")
    block = await load_context(svc, ident, token_budget=2000, now=NOW, query="결제 서비스 배포")
    pinned = block.sections["pinned"]
    assert 0 < len(pinned) < 121 and block.truncated
    assert pinned[0]["id"] == deploy.id          # the oldest pinned, but the one the query is about
    assert f"and {121 - len(pinned)} more pinned" in block.text
    assert "지금 세션에서 마이그레이션을 고치는 중" in block.text
    assert block.tokens <= 2000


async def test_collaborators_on_the_same_project(svc: MemoryService) -> None:
    await svc.ingest(MessageIn(content="codex refactored the parser", user_id="alice", agent_platform="codex",
                               project="gieok", created_at=NOW - timedelta(hours=2)))
    block = await load_context(svc, Identity(user_id="alice", agent_platform="claude-code", project="gieok"), now=NOW)
    assert "codex refactored the parser" in block.text


async def test_explicit_memory_is_pinned_and_forget_hard_erases(svc: MemoryService) -> None:
    res = await svc.remember(MessageIn(content="내 커피는 항상 아메리카노", user_id="alice"))
    assert res.stored and res.tagged == "ok" and res.embedded == "pending"   # no embedder in this fixture
    m = await svc.get(res.id, "alice")
    assert m.is_pinned and m.d_tags
    await svc.forget(res.id, "alice", hard=True)
    assert await svc.store.get_memory(res.id, include_deleted=True) is None
    text, n = await export_text(svc.store, "alice", "ndjson")
    assert n == 0 and res.id not in text


async def test_ndjson_round_trip_loses_nothing(svc: MemoryService, settings: Settings, tmp_path: object) -> None:
    ids = [(await svc.ingest(MessageIn(content=f"메모 {i} note", user_id="alice", role="assistant", session_id="s",
                                       agent_platform="codex", agent_model="gpt-5.5", project="p",
                                       created_at=NOW - timedelta(minutes=i), meta={"i": i})))[0] for i in range(5)]
    await svc.set_pinned(ids[0], "alice", True)
    text, n = await export_text(svc.store, "alice", "ndjson")
    assert n == 5
    other = load_settings(database_url=f"sqlite:///{tmp_path}/copy.db", user_id="alice", embedder="none",
                          librarian=False)
    async with open_service(other, with_embedder=False) as svc2:
        read, inserted = await import_ndjson(svc2.store, text.splitlines())
        assert (read, inserted) == (5, 5)
        assert (await import_ndjson(svc2.store, text.splitlines())) == (5, 0)   # nothing twice
        text2, _ = await export_text(svc2.store, "alice", "ndjson")
    strip = lambda t: [line for line in sorted(t.splitlines())]  # noqa: E731
    # everything but the librarian's transient fields is identical
    import json
    def core(line: str) -> dict[str, object]:
        d = json.loads(line)
        for k in ("embed_status", "embedding_model", "lease_until"):
            d.pop(k)
        return d
    assert sorted(map(json.dumps, map(core, strip(text)))) == sorted(map(json.dumps, map(core, strip(text2))))
    md, _ = await export_text(svc.store, "alice", "markdown")
    csv, _ = await export_text(svc.store, "alice", "csv")
    assert "메모 0 note" in md and csv.count("\n") == 6


async def test_a_line_said_again_is_in_the_context_once(svc: MemoryService) -> None:
    # The same rule said to this agent two days ago (the recent section shows it) and to another agent
    # yesterday (the search's pick, the newer copy): shown once, not again under "Relevant to".
    rule = "코드 리뷰는 한국어로 해 주세요. 변수 이름은 영어로."
    for at, agent in ((NOW - timedelta(days=2), "claude-code"), (NOW - timedelta(days=1), "codex")):
        await svc.ingest(MessageIn(content=rule, user_id="alice", agent_platform=agent, session_id=agent,
                                   created_at=at))
    await svc.ingest(MessageIn(content="Deploy notes for billing", user_id="alice", agent_platform="codex",
                               created_at=NOW - timedelta(days=25)))
    ident = Identity(user_id="alice", agent_platform="claude-code")
    block = await load_context(svc, ident, query="코드 리뷰 언어", token_budget=4000, now=NOW)
    assert block.text.count("코드 리뷰는 한국어로") == 1, block.text
    assert [i["content"] for i in block.sections["recent"]] == [rule]
    assert rule not in [i["content"] for i in block.sections.get("relevant", [])]

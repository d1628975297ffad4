"""The hot path: validation, normalisation, redaction, time order, nothing half-written."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from gieok.core.dates import parse_date_range
from gieok.core.errors import InvalidInput
from gieok.core.ids import uuid7, uuid7_time_ms
from gieok.memory.ingest import MessageIn, prepare
from gieok.memory.service import MemoryService


def msg(**kw: object) -> MessageIn:
    base: dict[str, object] = {"content": "hello", "user_id": "alice"}
    base.update(kw)
    return MessageIn(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize(("kw", "field"), [
    ({"content": ""}, "content"),
    ({"content": "   \n"}, "content"),
    ({"content": "x" * 70000}, "content"),
    ({"role": "robot"}, "role"),
    ({"kind": "dream"}, "kind"),
    ({"source": "telepathy"}, "source"),
    ({"id": "not-a-uuid"}, "id"),
    ({"created_at": "yesterday-ish"}, "created_at"),
    ({"importance": 1.5}, "importance"),
    ({"user_id": ""}, "user_id"),
    ({"session_id": "a\nb"}, "session_id"),
])
def test_refuses_bad_input_naming_the_field(kw: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidInput) as err:
        prepare(msg(**kw), max_bytes=65536)
    assert err.value.field == field
    assert field in str(err.value)


def test_size_limit_is_configurable_and_says_how_to_fix() -> None:
    with pytest.raises(InvalidInput, match="GIEOK_MAX_CONTENT_BYTES"):
        prepare(msg(content="가" * 100), max_bytes=200)   # 300 UTF-8 bytes
    prepare(msg(content="가" * 100), max_bytes=300)


def test_normalises_identity_labels() -> None:
    m, _ = prepare(msg(agent_platform=" Claude-Code ", agent_model="Opus-4-7", subagent_role="  Researcher  ",
                       role="Assistant"), max_bytes=65536)
    assert (m.agent_platform, m.agent_model, m.subagent_role, m.role) == ("claude-code", "opus-4-7", "researcher",
                                                                          "assistant")
    assert m.is_subagent and m.tag_status == "pending" and m.embed_status == "pending"


def test_explicit_created_at_and_time_ordered_ids() -> None:
    m, _ = prepare(msg(created_at="2023-05-08T13:56:00+09:00"), max_bytes=65536)
    assert m.created_at == datetime(2023, 5, 8, 4, 56, tzinfo=UTC)
    assert uuid7_time_ms(m.id) == int(m.created_at.timestamp() * 1000)
    ids = [uuid7() for _ in range(2000)]
    assert ids == sorted(ids) and len(set(ids)) == 2000


def test_secrets_are_redacted_before_storage() -> None:
    key = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    m, text = prepare(msg(content=f"my token is {key} ok"), max_bytes=65536)
    assert key not in m.content and "[REDACTED:github_token]" in m.content
    assert "a1b2c3d4" not in text.lower()
    assert m.meta["redacted"] == ["github_token"]


async def test_nothing_half_written(svc: MemoryService) -> None:
    with pytest.raises(InvalidInput):
        await svc.ingest(msg(role="wizard"))
    assert (await svc.store.stats("alice"))["total"] == 0


async def test_just_ingested_row_is_findable_at_once(svc: MemoryService) -> None:
    mid, _ = await svc.ingest(msg(content="오늘 회의에서 커피 머신 교체를 결정했다"))
    for q in ("회의", "커피"):
        out = await svc.search(svc.filters("alice"), q)
        assert [h.memory.id for h in out.hits] == [mid], q


async def test_search_filters_through_the_service(svc: MemoryService) -> None:
    now = datetime(2026, 11, 30, 12, tzinfo=UTC)
    old, _ = await svc.ingest(msg(content="deploy notes", created_at="2026-11-01T10:00:00Z"))
    new, _ = await svc.ingest(msg(content="deploying again", created_at="2026-11-29T10:00:00Z", role="assistant",
                                  agent_platform="codex"))
    f = svc.filters("alice", date_range="3d", now=now)
    assert [h.memory.id for h in (await svc.search(f, "deploy", now=now)).hits] == [new]
    f = svc.filters("alice", date_range="2026-11-01", now=now)
    assert [h.memory.id for h in (await svc.search(f, "deploy", now=now)).hits] == [old]
    f = svc.filters("alice", role="user")
    assert [h.memory.id for h in (await svc.search(f, "deployed", now=now)).hits] == [old]
    f = svc.filters("alice", platform="Codex")
    assert [h.memory.id for h in (await svc.search(f, "deploy", now=now)).hits] == [new]
    with pytest.raises(InvalidInput, match="date_range"):
        svc.filters("alice", date_range="whenever")


def test_date_ranges() -> None:
    now = datetime(2026, 11, 30, 12, tzinfo=UTC)   # a Monday
    assert parse_date_range("3d", now)[0] == datetime(2026, 11, 27, 12, tzinfo=UTC)
    assert parse_date_range("last week", now) == (datetime(2026, 11, 23, tzinfo=UTC),
                                                  datetime(2026, 11, 30, tzinfo=UTC))
    assert parse_date_range("지난주", now) == parse_date_range("last week", now)
    assert parse_date_range("어제", now) == (datetime(2026, 11, 29, tzinfo=UTC), datetime(2026, 11, 30, tzinfo=UTC))
    assert parse_date_range("2026-11-01..2026-11-03", now) == (datetime(2026, 11, 1, tzinfo=UTC),
                                                               datetime(2026, 11, 4, tzinfo=UTC))

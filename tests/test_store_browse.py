"""The browsing contract (gieok.store.browse) on every backend: keyset pages, states, scopes, activity per day,
facets and the librarian's unfinished rows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from gieok.core.models import Memory, SearchFilters
from gieok.memory.ingest import MessageIn, prepare
from gieok.store import Store
from gieok.store.browse import DayCount, PageQuery, as_browse

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)


async def put(store: Store, content: str, *, at: datetime = T0, user: str = "alice", **kw: object) -> str:
    m, text = prepare(MessageIn(content=content, user_id=user, created_at=at, **kw),  # type: ignore[arg-type]
                      max_bytes=65536)
    mid, inserted = await store.insert_memory(m, text)
    assert inserted
    return mid


async def page_ids(store: Store, **kw: object) -> list[str]:
    f = SearchFilters(user_id=str(kw.pop("user_id", "alice")), **kw.pop("filters", {}))  # type: ignore[arg-type]
    return [m.id for m in await as_browse(store).list_page(PageQuery(f, **kw))]  # type: ignore[arg-type]


async def test_pages_walk_newest_first_without_gaps_or_repeats(store: Store) -> None:
    # Several rows share one created_at: the id breaks the tie, so the walk neither skips nor repeats them.
    ids = [await put(store, f"row {i}", at=T0 + timedelta(minutes=i // 3)) for i in range(11)]
    want = [m.id for m in sorted(
        [m for m in await store.get_memories(ids)], key=lambda m: (m.created_at, m.id), reverse=True)]
    b = as_browse(store)
    seen: list[Memory] = []
    before = None
    while True:
        page = await b.list_page(PageQuery(SearchFilters(user_id="alice"), before=before, limit=4))
        if not page:
            break
        assert len(page) <= 4
        seen.extend(page)
        last = page[-1]
        assert last.created_at is not None
        before = (last.created_at, last.id)
    assert [m.id for m in seen] == want


async def test_page_states_scopes_and_filters(store: Store) -> None:
    live = await put(store, "live 회의 note", agent_platform="codex", role="user")
    arch = await put(store, "archived note", agent_platform="cursor", role="assistant", at=T0 + timedelta(hours=1))
    gone = await put(store, "forgotten note", at=T0 + timedelta(hours=2))
    shared = await put(store, "team note", at=T0 + timedelta(hours=3), kind="semantic")
    await put(store, "bob's private note", user="bob")
    await store.update_memory(arch, {"is_active": False, "archived_at": T0})
    await store.update_memory(gone, {"deleted_at": T0})
    await store.update_memory(shared, {"privacy_scope": "team"})
    assert await page_ids(store) == [shared, live]
    assert await page_ids(store, state="archived") == [arch]
    assert await page_ids(store, state="forgotten") == [gone]
    assert await page_ids(store, state="all") == [shared, gone, arch, live]
    assert await page_ids(store, scopes=("team",)) == [shared]
    assert await page_ids(store, state="all", filters={"agent_platform": "cursor"}) == [arch]
    assert await page_ids(store, filters={"kinds": ("semantic",)}) == [shared]
    assert await page_ids(store, filters={"since": T0 + timedelta(minutes=30)}) == [shared]
    assert await page_ids(store, user_id="bob") != [] and live not in await page_ids(store, user_id="bob")


async def test_activity_counts_per_day_platform_and_model(store: Store) -> None:
    await put(store, "a", agent_platform="codex", agent_model="gpt-5.5")
    await put(store, "b", agent_platform="codex", agent_model="gpt-5.5", at=T0 + timedelta(minutes=5))
    await put(store, "c", agent_platform="claude-code", agent_model="opus-4-7", at=T0 + timedelta(days=1))
    gone = await put(store, "d", agent_platform="codex", agent_model="gpt-5.5", at=T0 + timedelta(days=1, hours=1))
    await put(store, "e", user="bob", agent_platform="codex")
    await store.update_memory(gone, {"deleted_at": T0})
    got = await as_browse(store).activity("alice", T0 - timedelta(days=1), T0 + timedelta(days=2))
    assert sorted(got, key=lambda d: (d.day, d.platform)) == [
        DayCount("2026-11-01", "codex", "gpt-5.5", 2), DayCount("2026-11-02", "claude-code", "opus-4-7", 1)]
    assert await as_browse(store).activity("alice", T0 + timedelta(days=5), T0 + timedelta(days=6)) == []


async def test_facets_sum_labels_of_live_rows(store: Store) -> None:
    await put(store, "a", agent_platform="codex", agent_model="gpt-5.5", project="gieok")
    await put(store, "b", agent_platform="codex", agent_model="o3", subagent_role="reviewer")
    await put(store, "c", agent_platform="cursor", at=T0 + timedelta(minutes=1))
    await put(store, "z", user="bob", agent_platform="hermes-agent")
    f = await as_browse(store).facets("alice")
    assert f.platforms == [("codex", 2), ("cursor", 1)]
    assert f.models == [("gpt-5.5", 1), ("o3", 1)]
    assert f.subagent_roles == [("reviewer", 1)] and f.projects == [("gieok", 1)]
    assert (await as_browse(store).facets("nobody")).platforms == []


@pytest.mark.parametrize("status", ["pending", "failed"])
async def test_list_cold_rows(store: Store, status: str) -> None:
    a = await put(store, "first")
    b = await put(store, "second", at=T0 + timedelta(minutes=1))
    if status == "failed":
        await store.fail_cold(a, "embedding API said 503", permanent=True, max_attempts=3, now=T0)
        rows = await as_browse(store).list_cold("alice", "failed", 10)
        assert [m.id for m in rows] == [a] and rows[0].cold_error == "embedding API said 503"
    else:
        assert [m.id for m in await as_browse(store).list_cold("alice", "pending", 10)] == [b, a]
        assert await as_browse(store).list_cold("bob", "pending", 10) == []

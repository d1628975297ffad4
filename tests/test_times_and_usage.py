"""Times that cannot be right are refused or explained; usage counts what was used, not what was shown.
Runs on every backend."""

from __future__ import annotations

from datetime import timedelta

import pytest

from gieok.core.dates import MAX_CLOCK_SKEW, parse_date_range, utcnow
from gieok.core.errors import InvalidInput, StoreError
from gieok.memory.ingest import MessageIn
from gieok.memory.service import MemoryService
from gieok.retrieval.ranking import usage_level


async def test_created_at_in_the_future_is_refused_within_a_small_skew(svc: MemoryService) -> None:
    with pytest.raises(InvalidInput) as exc:
        await svc.ingest(MessageIn(content="from the future", user_id="alice", created_at="2099-01-01T00:00:00Z"))
    assert exc.value.field == "created_at" and "in the future" in str(exc.value)
    assert (await svc.store.stats("alice"))["total"] == 0            # nothing half-written
    with pytest.raises(InvalidInput):
        await svc.ingest(MessageIn(content="미래에서 온 메시지", user_id="alice",
                                   created_at=(utcnow() + MAX_CLOCK_SKEW + timedelta(minutes=1)).isoformat()))
    # A clock a little ahead is fine.
    mid, inserted = await svc.ingest(MessageIn(content="slightly ahead", user_id="alice",
                                               created_at=(utcnow() + timedelta(minutes=2)).isoformat()))
    assert inserted and mid


def test_reversed_and_empty_ranges_are_refused_with_the_fix() -> None:
    with pytest.raises(InvalidInput) as exc:
        parse_date_range("2026-11-30..2026-11-01")
    assert exc.value.field == "date_range" and "2026-11-01..2026-11-30" in str(exc.value)
    with pytest.raises(InvalidInput) as exc:
        parse_date_range("2026-11-01T10:00..2026-11-01T10:00")
    assert "empty window" in str(exc.value)
    # A one-day range (both ends the same date) is a whole day, not empty.
    since, until = parse_date_range("2026-11-01..2026-11-01")
    assert since is not None and until is not None and until - since == timedelta(days=1)


async def test_a_search_in_an_empty_window_says_so(svc: MemoryService) -> None:
    await svc.ingest(MessageIn(content="회의록: 배포는 화요일", user_id="alice", created_at="2026-11-10T09:00:00Z"))
    empty = await svc.search(svc.filters("alice", date_range="2026-10-01..2026-10-31"), "배포")
    assert empty.hits == [] and any("between 2026-10-01 and 2026-10-31" in n for n in empty.notes)
    future = await svc.search(svc.filters("alice", date_range="2099-01-01..2099-02-01"), None)
    assert future.hits == [] and any("in the future" in n for n in future.notes)
    found = await svc.search(svc.filters("alice", date_range="2026-11-01..2026-11-30"), "배포")
    assert len(found.hits) == 1 and found.notes == []


async def test_a_failing_appearance_count_does_not_fail_the_search(svc: MemoryService,
                                                                   monkeypatch: pytest.MonkeyPatch,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    await svc.ingest(MessageIn(content="the coffee machine on floor 3 is broken", user_id="alice"))

    async def broken(ids: list[str], now: object) -> None:
        raise StoreError("database is locked")

    monkeypatch.setattr(svc.store, "touch", broken)
    found = await svc.search(svc.filters("alice"), "coffee")
    await svc.settle()
    assert len(found.hits) == 1 and "could not count 1 search results as shown" in caplog.text


async def test_being_shown_is_not_being_used(svc: MemoryService) -> None:
    pinned = await svc.remember(MessageIn(content="I take my coffee black", user_id="alice"))
    other, _ = await svc.ingest(MessageIn(content="the coffee machine on floor 3 is broken", user_id="alice"))
    f = svc.filters("alice")
    for _ in range(30):
        await svc.search(f, "coffee")
    await svc.settle()          # counts are written beside the answers, not before them
    shown = await svc.get(pinned.id, "alice")
    assert shown.shown_count == 30 and shown.view_count == 0 and shown.cite_count == 0
    assert usage_level(shown) < 0.15                       # thirty appearances are next to nothing
    # Explicit opens, cites and helpful feedback are usage.
    await svc.open(other, "alice")
    opened = await svc.get(other, "alice")
    assert opened.view_count == 1 and usage_level(opened) > 2 * usage_level(shown)
    await svc.feedback(other, "alice", "cited")
    await svc.feedback(other, "alice", "helpful")
    cited = await svc.get(other, "alice")
    assert cited.cite_count == 2 and usage_level(cited) > 0.6
    hits = {h.memory.id: h for h in (await svc.search(f, "coffee", count_view=False)).hits}
    assert hits[other].parts["usage"] > hits[pinned.id].parts["usage"]
    # Usage is on a fixed scale: the most-shown candidate no longer gets a full 1.0 for it.
    assert hits[pinned.id].parts["usage"] == pytest.approx(usage_level(shown), abs=1e-6)


async def test_a_date_filter_reads_the_relative_times_a_query_reads(svc: MemoryService) -> None:
    # Friday 4 December 2026: the week before last is 16–22 November, last Friday 27 November.
    now = utcnow().replace(year=2026, month=12, day=4, hour=10, minute=0, second=0, microsecond=0)
    await svc.ingest(MessageIn(content="배포 회의: 결제 서비스는 화요일에", user_id="alice",
                               created_at="2026-11-17T09:00:00Z"))
    await svc.ingest(MessageIn(content="deploy review of the billing service", user_id="alice",
                               created_at="2026-11-27T15:00:00Z"))
    expect = {"지지난주": "2026-11-16", "the week before last": "2026-11-16", "지지난주에": "2026-11-16",
              "last Friday": "2026-11-27", "지난주 금요일": "2026-11-27", "on Friday": "2026-12-04",
              "지난주에": "2026-11-23", "2w": None}
    for text, start in expect.items():
        f = svc.filters("alice", date_range=text, now=now)
        assert f.since is not None, text
        if start is not None:
            assert f.since.date().isoformat() == start, (text, f.since)
    # The row of the week before last, and only it, through the filter.
    hits = (await svc.search(svc.filters("alice", date_range="지지난주", now=now), None)).hits
    assert [h.memory.content[:5] for h in hits] == ["배포 회의"]
    hits = (await svc.search(svc.filters("alice", date_range="last Friday", now=now), None)).hits
    assert [h.memory.content[:6] for h in hits] == ["deploy"]
    # What is not one time is refused as before, naming the field and the forms it reads.
    for bad in ("지지난주 회의", "every Friday", "Fridays", "someday"):
        with pytest.raises(InvalidInput) as exc:
            svc.filters("alice", date_range=bad, now=now)
        assert exc.value.field == "date_range" and "지지난주" in str(exc.value), bad

"""How the librarian waits between cycles: until its interval passes, `stop()` or an ingest in this process sets
its wake-up event, enough rows are pending from any process (Postgres LISTEN/NOTIFY says so; SQLite is asked
every `IDLE_POLL_S`), or a few have waited `QUIET_S` with no more coming."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from gieok.store.base import Store

# With a store-side wake-up (Postgres LISTEN) the in-process event is checked between slices this long.
WAKE_POLL_S = 1.0
# How often a store that cannot signal new rows (SQLite) is asked whether enough are pending; a store that can
# (Postgres) is asked as often for the rule below.
IDLE_POLL_S = 5.0
# Fewer rows than `librarian_wake_pending` wait for more to batch with, but not for the whole interval: once the
# count of claimable rows has stayed the same this long (nothing more is coming), they are processed. A lone
# `gieok remember` from a shell, or the last turn of a session, is then embedded within seconds, not a minute.
QUIET_S = 10.0


class NewRows:
    """Whether the rows pending beyond `floor` are worth a cycle: as many as `wake_pending` (the threshold of
    this process's own ingests), or fewer whose count has stayed the same for `QUIET_S`."""

    def __init__(self, floor: int | None, wake_pending: int) -> None:
        self.floor = self.n = floor
        self.wake_pending = wake_pending
        self.since = 0.0

    def worth_waking(self, n: int | None, now: float) -> bool:
        if n is None:  # the store could not count: no news
            return False
        if self.floor is None:  # the first count failed: the first that works stands for what was left
            self.floor = self.n = n
            self.since = now
            return False
        if n - self.floor >= self.wake_pending:
            return True
        if n != self.n:
            self.n, self.since = n, now
            return False
        return n > self.floor and now - self.since >= QUIET_S


async def wait_for_work(store: Store, wake: asyncio.Event, stopping: Callable[[], bool],
                        count: Callable[[], Awaitable[int | None]], wake_pending: int, timeout: float) -> None:
    """Return when there is work or `timeout` has passed. `count`: the claimable rows now, None when the store
    cannot say (no news)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    counted_at = loop.time()
    # What the last cycle left claimable (rows it could not finish) is not news: only rows beyond it are.
    news = NewRows(await count(), wake_pending)
    while not wake.is_set() and not stopping():
        left = deadline - loop.time()
        if left <= 0:
            break
        if store.wakes_on_pending:
            # Short slices instead of racing two tasks: cancelling a LISTEN mid-wait could leave its
            # connection half-read, and one second is an acceptable delay for the in-process signal.
            ask = await store.wait_for_pending(min(left, WAKE_POLL_S))
        else:
            # Another process (`gieok ingest`, an import, a hook writing to the file itself) cannot set
            # `wake`, and its rows waited out the whole interval (a minute by default) however many there
            # were. A count of claimable rows every few seconds wakes for them as a Postgres notification
            # does: a partial index holds only pending rows, so the count costs next to nothing.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(wake.wait(), timeout=min(left, IDLE_POLL_S))
            ask = not wake.is_set()
        now = loop.time()
        # The quiet rule needs a count now and then, notified or not.
        if wake.is_set() or not (ask or now - counted_at >= IDLE_POLL_S):
            continue
        counted_at = now
        if news.worth_waking(await count(), now):
            break


async def pause(wake: asyncio.Event) -> None:
    """A short wait after a failed one: the worker tries again soon instead of spinning."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(wake.wait(), timeout=IDLE_POLL_S)

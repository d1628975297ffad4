"""Search before background work on a small machine: a low-priority lane for the librarian's document batches and
a gate that holds those batches back while search queries are being embedded.

A second model handle lets a query run beside a document batch, but on 2 cores shared with the server's event
loop (and, on a developer's machine, with everything else) both compete for CPU: under 8 ingesting clients a
4-word query took 116 ms inside the engine instead of 15 ms while the batch thread used most of a core. Two
mechanisms give the query the CPU:

* the batches run on one thread of their own at nice 10 under SCHED_IDLE (Linux keeps both per thread), so
  the kernel runs them on a core nothing else wants and preempts them as soon as a search thread wakes up;
* before each chunk of a batch the lane waits while a search is in flight — the whole search, not only its
  query embedding, because a chunk beside a search slows it even with a core to spare (8 clients, SQLite:
  search p95 88 ms with no librarian, 124 ms beside an idle-priority e5 loop in another process) — at most
  `max_hold_s`, so a steady stream of searches slows the librarian down but never stops it.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")

__all__ = ["GATE", "BackgroundLane", "QueryGate", "foreground", "in_foreground", "lower_thread_priority"]

# Set while a caller waits for its documents' vectors (an explicit `remember`, an edit): those are embedded at
# normal priority beside the lane, not queued behind the librarian's chunks on it.
_FOREGROUND: contextvars.ContextVar[bool] = contextvars.ContextVar("gieok_foreground_embedding", default=False)


@contextlib.contextmanager
def foreground() -> Iterator[None]:
    """Document embedding in this block (this task and what it awaits) is someone's request, not background."""
    token = _FOREGROUND.set(True)
    try:
        yield
    finally:
        _FOREGROUND.reset(token)


def in_foreground() -> bool:
    return _FOREGROUND.get()


def lower_thread_priority(nice: int) -> int | None:
    """Run the calling thread at nice value `nice` at least (capped at 19; a thread already nicer keeps its
    value, so a `gieok worker` started at nice 10 is not pushed further down) and, where Linux offers it, under
    SCHED_IDLE; returns the thread's nice value, or None where the platform has no per-thread priority.
    Lowering a priority needs no privilege and cannot be undone without one, which is why the lane has a thread
    of its own."""
    if nice <= 0:
        return None
    try:
        tid = threading.get_native_id()
        # On Linux setpriority(PRIO_PROCESS, tid) changes only that thread (nice is a per-thread attribute).
        current = os.getpriority(os.PRIO_PROCESS, tid)
        new = max(current, min(19, nice))
        if new != current:
            os.setpriority(os.PRIO_PROCESS, tid, new)
    except (AttributeError, OSError) as exc:   # not Linux, or a sandbox that forbids it: run at normal priority
        log.debug("cannot lower the embedding thread's priority: %s", exc)
        return None
    _idle_policy(tid)
    return new


def _idle_policy(tid: int) -> None:
    """SCHED_IDLE: nice only weighs shares once threads compete; an idle-class thread also gives way the moment
    a normal one wakes. It is not starved: under a saturated CPU it still gets a small share."""
    setter = getattr(os, "sched_setscheduler", None)
    policy = getattr(os, "SCHED_IDLE", None)
    if setter is None or policy is None:
        return
    try:
        setter(tid, policy, os.sched_param(0))
    except OSError as exc:   # a seccomp profile may refuse it; nice alone still applies
        log.debug("cannot put the embedding thread under SCHED_IDLE: %s", exc)


class QueryGate:
    """Counts searches in flight; background work waits for none to be before each of its chunks."""

    def __init__(self, max_hold_s: float = 0.25) -> None:
        self.max_hold_s = max_hold_s
        self._cond = threading.Condition()
        self._active = 0
        self.held = 0           # chunks that waited for a query (for tests and curiosity)

    @property
    def active(self) -> int:
        return self._active

    @contextlib.contextmanager
    def query(self) -> Iterator[None]:
        with self._cond:
            self._active += 1
        try:
            yield
        finally:
            with self._cond:
                self._active -= 1
                if self._active == 0:
                    self._cond.notify_all()

    def wait_turn(self) -> bool:
        """Block until no query is in flight or `max_hold_s` passed; True when the way was clear in time."""
        with self._cond:
            if self._active == 0:
                return True
            self.held += 1
            return self._cond.wait_for(lambda: self._active == 0, timeout=self.max_hold_s)


# The longest a chunk waits for searches to finish before it runs anyway (the librarian slows, never stops).
MAX_HOLD_S = 0.25
# One per process: searches (gieok.retrieval.search) and query embeddings enter it; the lanes of the process's
# embedders wait on it.
GATE = QueryGate(MAX_HOLD_S)


class BackgroundLane:
    """One thread, started on first use at nice value `nice` (or the process's, if that is nicer), running its
    calls in order.

    Each call is one chunk of a batch, so another caller of the lane waits for at most the chunk in progress,
    not for a whole librarian batch."""

    def __init__(self, name: str, nice: int, gate: QueryGate) -> None:
        self.name = name
        self.nice = nice
        self.gate = gate
        self.thread_nice: int | None = None      # what the thread got (None: normal priority)
        self.thread_id: int | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def _start_thread(self) -> None:
        self.thread_id = threading.get_native_id()
        self.thread_nice = lower_thread_priority(self.nice)

    def _get(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(1, thread_name_prefix=self.name, initializer=self._start_thread)
            return self._executor

    def _chunk(self, fn: Callable[..., T], *args: object) -> T:
        self.gate.wait_turn()
        return fn(*args)

    async def run(self, fn: Callable[..., T], *args: object) -> T:
        """`fn(*args)` on the lane once no query is in flight (or the gate's hold ran out)."""
        return await asyncio.wrap_future(self._get().submit(self._chunk, fn, *args))

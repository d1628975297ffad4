"""gieok.core.once: a dictionary read on first use is read once, even when threads ask together."""

from __future__ import annotations

import threading
import time

from gieok.core.once import Once


def test_built_once_for_threads_asking_together() -> None:
    calls: list[int] = []

    def build() -> dict[str, int]:
        calls.append(1)
        time.sleep(0.05)                 # long enough for every thread to arrive while it is being built
        return {"n": len(calls)}

    once = Once(build)
    assert not once.loaded
    got: list[dict[str, int]] = []
    threads = [threading.Thread(target=lambda: got.append(once.get())) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == [1] and once.loaded and all(g is got[0] for g in got)


async def test_ready_builds_off_the_event_loop_and_then_answers_at_once() -> None:
    loop_thread = threading.get_ident()
    built_in: list[int] = []
    once = Once(lambda: built_in.append(threading.get_ident()) or "table")
    assert await once.ready() == "table" and built_in != [loop_thread]
    assert await once.ready() == "table" and len(built_in) == 1

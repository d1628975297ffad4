"""Concurrent search queries embedded together.

With one query handle, eight agents searching at once queued one behind the other: the last waited for seven
model calls (query lock wait p50 ~200 ms under load). Here queries go to one thread that takes everything
waiting and embeds it in one call: a query that arrives while the model is busy waits for at most the call in
progress, and a call of 8 short queries costs about 5 single ones (the weights are read once per call).
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future

import numpy as np
import numpy.typing as npt

__all__ = ["QueryBatcher"]

Embed = Callable[[list[str]], npt.NDArray[np.float32]]


class QueryBatcher:
    """Runs `embed(texts)` on one daemon thread over whatever queries are waiting, `max_batch` at most."""

    def __init__(self, embed: Embed, *, max_batch: int = 16, name: str = "gieok-embed-queries") -> None:
        self._embed = embed
        self.max_batch = max_batch
        self.name = name
        self._queue: queue.SimpleQueue[tuple[str, Future[npt.NDArray[np.float32]]]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._start = threading.Lock()
        self.calls = 0              # model calls made, and the largest batch (for tests and curiosity)
        self.largest = 0

    def _ensure_thread(self) -> None:
        with self._start:
            if self._thread is None or not self._thread.is_alive():
                # A daemon: an idle query thread must not keep the process from exiting.
                self._thread = threading.Thread(target=self._serve, name=self.name, daemon=True)
                self._thread.start()

    def _serve(self) -> None:
        while True:
            batch = [self._queue.get()]
            while len(batch) < self.max_batch:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            live = [(t, f) for t, f in batch if f.set_running_or_notify_cancel()]
            if not live:
                continue
            self.calls += 1
            self.largest = max(self.largest, len(live))
            try:
                out = self._embed([t for t, _ in live])
            except Exception as exc:  # every waiting caller gets the error; the thread lives on
                for _, f in live:
                    f.set_exception(exc)
                continue
            for i, (_, f) in enumerate(live):
                f.set_result(out[i])

    def submit(self, text: str) -> Future[npt.NDArray[np.float32]]:
        fut: Future[npt.NDArray[np.float32]] = Future()
        self._queue.put((text, fut))
        self._ensure_thread()
        return fut

    async def embed(self, text: str) -> npt.NDArray[np.float32]:
        return await asyncio.wrap_future(self.submit(text))

"""A value built on first use, once per process: the dictionaries the search and the librarian read (tens of
megabytes, a few tenths of a second) are built the first time a Korean or cross-lingual query needs them, never
at start-up, and only once even when two threads ask at the same moment."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

import anyio

T = TypeVar("T")

__all__ = ["Once"]


class Once(Generic[T]):
    def __init__(self, build: Callable[[], T]) -> None:
        self._build = build
        self._value: T | None = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._value is not None

    def get(self) -> T:
        if self._value is None:
            with self._lock:
                if self._value is None:
                    self._value = self._build()
        return self._value

    async def ready(self) -> T:
        """The value, built off the event loop the first time (a search must not stall every other request)."""
        return self._value if self._value is not None else await anyio.to_thread.run_sync(self.get)

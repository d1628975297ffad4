"""A stdlib HTTP server on 127.0.0.1 (free port) in a background thread: the lifecycle the fake providers
share. Subclasses set `handler_base` (their request handler, which reaches the fake as `self.fake`)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar, Self


@dataclass
class BackgroundHTTPServer:
    handler_base: ClassVar[type[BaseHTTPRequestHandler]]
    thread_name: ClassVar[str] = "fake-http"

    _stopping: threading.Event = field(default_factory=threading.Event)
    _httpd: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    def start(self) -> Self:
        self._stopping.clear()
        handler = type("Handler", (self.handler_base,), {"fake": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        # A short poll interval: shutdown() waits up to one interval, and every test stops a server.
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), name=self.thread_name,
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes handlers stalled in "slow" so shutdown does not wait for them
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """Base URL, e.g. http://127.0.0.1:43121 (clients add /v1/…, /v1beta/… themselves)."""
        assert self._httpd is not None, "server not started"
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

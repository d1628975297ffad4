"""`gieok serve --transport http` as a real subprocess on a free 127.0.0.1 port, for tests that need real HTTP
(keep-alive connections, the browser guard, a server under load)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2

GIEOK = str(Path(sys.executable).with_name("gieok"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def live_server(db_url: str, home: Path, **env_extra: str) -> Iterator[str]:
    """Yields the server's base URL once /health is ok; the server is stopped on exit."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIEOK_")}
    env.update(GIEOK_DATABASE_URL=db_url, GIEOK_HOME=str(home), GIEOK_USER_ID="alice", GIEOK_EMBEDDER="none",
               GIEOK_LIBRARIAN="true", GIEOK_LIBRARIAN_INTERVAL_S="1", GIEOK_TOOLS="full", OMP_NUM_THREADS="1",
               HOME=str(home))
    env.update(env_extra)
    log = open(home / f"server-{port}.log", "wb")  # noqa: SIM115  (closed below, after the process)
    proc = subprocess.Popen([GIEOK, "serve", "--transport", "http", "--port", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=log)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    try:
        while True:
            try:
                if httpx2.get(url + "/health", timeout=0.5).json().get("ok"):
                    break
            except Exception:
                time.sleep(0.2)
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError((home / f"server-{port}.log").read_text(errors="replace")[-3000:])
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        log.close()

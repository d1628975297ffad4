"""Is the HTTP port free, and if not, who holds it? Asked before `gieok serve --transport http` announces
itself: uvicorn would print nothing useful, only `[Errno 98] address already in use` after our banner.

psutil finds the listening process (Linux, macOS, Windows); a process of another user may stay anonymous.
A gieok server is recognised by its `/health` answer, so the message can say "already running: use it"."""

from __future__ import annotations

import errno
import json
import socket
import urllib.request
from dataclasses import dataclass


@dataclass(slots=True)
class PortHolder:
    pid: int | None
    command: str          # the process's command line, or "" when it cannot be seen
    gieok_version: str    # set when a gieok server answers /health there

    def describe(self, host: str, port: int) -> str:
        who = f"process {self.pid}" if self.pid else "another process"
        if self.command:
            who += f" ({self.command})"
        if self.gieok_version:
            what = (f"port {port} on {host} is taken: a gieok server ({who}) is already serving "
                    f"http://{host}:{port}/mcp. Use that one")
        else:
            what = f"port {port} on {host} is taken by {who}. Stop it"
        stop = f", stop it (kill {self.pid})" if self.gieok_version and self.pid else ""
        return f"{what}{stop}, or choose another port with --port or GIEOK_PORT."


def port_in_use(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        # As uvicorn binds: SO_REUSEADDR, so a port left in TIME_WAIT by a server just stopped counts as free.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return True
            raise
    return False


def _listener_pid(port: int) -> int | None:
    import psutil
    try:
        conns = psutil.net_connections(kind="inet")
    except (psutil.AccessDenied, OSError):
        return None
    return next((c.pid for c in conns if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port
                 and c.pid), None)


def _command(pid: int) -> str:
    import psutil
    try:
        return " ".join(psutil.Process(pid).cmdline())[:200]
    except (psutil.Error, OSError):
        return ""


def _gieok_version(host: str, port: int) -> str:
    probe = "127.0.0.1" if host in ("0.0.0.0", "") else ("::1" if host == "::" else host)
    url_host = f"[{probe}]" if ":" in probe else probe
    try:
        with urllib.request.urlopen(f"http://{url_host}:{port}/health", timeout=1.0) as r:
            data = json.loads(r.read(4096))
    except (OSError, ValueError):
        return ""
    return str(data.get("version", "")) if isinstance(data, dict) and "ok" in data else ""


def port_holder(host: str, port: int) -> PortHolder | None:
    """None when `host:port` can be bound; else what holds it, as far as this user can see."""
    if not port_in_use(host, port):
        return None
    pid = _listener_pid(port)
    return PortHolder(pid, _command(pid) if pid else "", _gieok_version(host, port))

"""The hook's client for a running `gieok serve --transport http`: `POST /v1/messages` and `GET /v1/context`.

Why not `http.client` or `urllib`: importing `http.client` alone (it pulls in `email`, `ssl` and the
`HTTPStatus` enum) costs more than a bare interpreter start on this kind of machine, and the hook's whole
budget with a server is twice that start (`gieok bench hook`). A hook speaks to one local server, one
request per connection, JSON both ways, so the client below is a plain HTTP/1.1 exchange: `Connection:
close`, the body read to the end of the stream (de-chunked if the server chunks it). It runs on `_socket`,
the C module `socket` wraps: `socket.py` builds its enums and imports `selectors` at import time (measured
here: ~0.35 of a bare interpreter start, against nothing for `_socket`), and a hook needs none of that.
Host names go to `getaddrinfo` as bytes: a `str` would load the IDNA codec first.

`server_for` is the one place that decides whether a hook uses a server: today, one answers when it accepts
a connection on GIEOK_HOST:GIEOK_PORT within `CONNECT_TIMEOUT_S`. A further check that the server serves the
store this hook would otherwise write to belongs there too (it can ask `/health` on the same connection
before handing it out).
"""

from __future__ import annotations

from gieok.capture.fastjson import dumps, loads

try:
    import _socket as _net
except ImportError:          # an interpreter without CPython's module layout
    import socket as _net  # type: ignore[no-redef]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from gieok.capture.hook_config import HookSettings

CONNECT_TIMEOUT_S = 0.3
REPLY_TIMEOUT_S = 2.0
_MAX_REPLY = 8 << 20


class LocalServer:
    """A gieok server on this machine that accepted a connection."""

    __slots__ = ("_pending", "host", "port")

    def __init__(self, host: str, port: int, sock: _net.socket | None = None) -> None:
        self.host = host
        self.port = port
        self._pending = sock          # the connection `server_for` opened, used by the first request

    def _connect(self) -> _net.socket:
        if self._pending is not None:
            sock, self._pending = self._pending, None
            return sock
        return connect(self.host, self.port)

    def request(self, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes] | None:
        """(status, body), or None when the server went away or did not answer in time."""
        head = [f"{method} {path} HTTP/1.1", f"Host: {self.host}:{self.port}", "Connection: close",
                "Accept: application/json"]
        if body is not None:
            head += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
        data = ("\r\n".join(head) + "\r\n\r\n").encode("ascii") + (body or b"")
        try:
            sock = self._connect()
        except OSError:
            return None
        try:
            sock.settimeout(REPLY_TIMEOUT_S)
            sock.sendall(data)
            chunks: list[bytes] = []
            size = 0
            while size <= _MAX_REPLY:
                got = sock.recv(65536)
                if not got:
                    break
                chunks.append(got)
                size += len(got)
        except OSError:
            return None
        finally:
            sock.close()
        return _parse(b"".join(chunks))

    def post_json(self, path: str, obj: Any) -> tuple[int, Any] | None:
        res = self.request("POST", path, dumps(obj).encode("utf-8"))
        return None if res is None else (res[0], _loads(res[1]))

    def get_json(self, path: str) -> tuple[int, Any] | None:
        res = self.request("GET", path)
        return None if res is None else (res[0], _loads(res[1]))

    def close(self) -> None:
        if self._pending is not None:
            self._pending.close()
            self._pending = None


def _loads(body: bytes) -> Any:
    try:
        return loads(body)
    except ValueError:
        return None


def _parse(raw: bytes) -> tuple[int, bytes] | None:
    head, sep, body = raw.partition(b"\r\n\r\n")
    if not sep:
        return None
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        return None
    headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = _dechunk(body)
    elif headers.get("content-length", "").isdigit():
        body = body[:int(headers["content-length"])]
    return int(parts[1]), body


def _dechunk(body: bytes) -> bytes:
    out: list[bytes] = []
    pos = 0
    while True:
        nl = body.find(b"\r\n", pos)
        if nl < 0:
            break
        try:
            n = int(body[pos:nl].split(b";", 1)[0], 16)
        except ValueError:
            break
        if n == 0:
            break
        out.append(body[nl + 2:nl + 2 + n])
        pos = nl + 2 + n + 2
    return b"".join(out)


def connect(host: str, port: int) -> _net.socket:
    """A TCP connection to host:port within CONNECT_TIMEOUT_S (OSError otherwise)."""
    try:
        infos = _net.getaddrinfo(host.encode("ascii"), port, 0, _net.SOCK_STREAM)
    except UnicodeEncodeError:
        infos = _net.getaddrinfo(host, port, 0, _net.SOCK_STREAM)
    error: OSError = OSError(f"cannot resolve {host}")
    for family, kind, proto, _, addr in infos:
        sock = _net.socket(family, kind, proto)
        try:
            sock.settimeout(CONNECT_TIMEOUT_S)
            sock.connect(addr)
            return sock
        except OSError as exc:
            sock.close()
            error = exc
    raise error


def server_for(cfg: HookSettings) -> LocalServer | None:
    """The running server this hook should use, or None to open the database itself: only a server whose
    `/health` names the store this hook is configured for (`gieok.core.store_id`) — another run's server on
    the same port must not receive our rows, nor give us its context."""
    from gieok.core.store_id import store_fingerprint
    host = cfg.host if cfg.host not in ("", "0.0.0.0", "::") else "127.0.0.1"
    try:
        sock = connect(host, int(cfg.port))
    except (OSError, ValueError):
        return None
    server = LocalServer(host, int(cfg.port), sock)
    health = server.get_json("/health")
    if health is None or health[0] != 200 or not isinstance(health[1], dict):
        return None
    if health[1].get("store") != store_fingerprint(cfg.resolved_database_url):
        return None
    return server

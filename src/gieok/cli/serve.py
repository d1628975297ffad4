"""`gieok serve` (the MCP server) and `gieok doctor`."""

from __future__ import annotations

import asyncio
from typing import Annotated

import anyio
import typer

from gieok.cli.app import DbOpt, UserOpt, app, settings_for
from gieok.core.settings import Settings


@app.command()
def serve(
    transport: Annotated[str, typer.Option(help="stdio (for one local client) or http (Streamable HTTP).")] = "stdio",
    host: Annotated[str | None, typer.Option(help="HTTP bind address (default 127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option(help="HTTP port (default 8765).")] = None,
    no_librarian: Annotated[bool, typer.Option("--no-librarian", help="Do not run the librarian in-process.")] = False,
    db: DbOpt = None,
    user: UserOpt = None,
) -> None:
    """Run the MCP server (stdio or Streamable HTTP) with the librarian in the background."""
    from gieok.app.observability import configure_logging
    from gieok.core.errors import ConfigError
    from gieok.core.settings import redacted_url
    from gieok.mcp.http_app import run_http
    from gieok.mcp.server import build_http_app, build_server
    s = settings_for(db, user, host=host, port=port)
    configure_logging(s)
    if transport not in ("stdio", "http"):
        typer.echo("error: --transport must be stdio or http", err=True)
        raise typer.Exit(2)
    if transport == "stdio":
        # stdio is one local client, the user who started it: single-user, no key (GIEOK_AUTH is for HTTP).
        server = build_server(s.model_copy(update={"auth": "none"}), run_librarian=not no_librarian and s.librarian)
        try:
            server.run("stdio")
        except BaseExceptionGroup as group:
            _, other = group.split(_CLIENT_GONE)
            if other is not None:
                raise
            _client_went_away()
        return
    # Before anything says "serving": a taken port would otherwise end in uvicorn's bare Errno 98.
    from gieok.app.ports import port_holder
    holder = port_holder(s.host, s.port)
    if holder is not None:
        typer.echo(f"error: {holder.describe(s.host, s.port)}", err=True)
        raise typer.Exit(2)
    try:
        mcp = build_server(s, run_librarian=not no_librarian and s.librarian)
        app_ = build_http_app(mcp, s)
    except ConfigError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    _banner(s.host, s.port, redacted_url(s.resolved_database_url),
            ",".join(sorted(s.auth_modes)) or "none (loopback only)", ui=s.ui, as_json=s.log_format == "json")
    run_http(app_, s)


# What writing to or reading from a stdio client raises once it has gone (closed its end, or was killed).
_CLIENT_GONE = (BrokenPipeError, ConnectionResetError, anyio.BrokenResourceError, anyio.ClosedResourceError,
                anyio.EndOfStream)


def _client_went_away() -> None:
    """A stdio client that closed its end mid-answer is the end of the session, not a crash: one line on
    stderr instead of the SDK's task-group traceback, and stdout pointed at /dev/null so the interpreter's
    last flush at exit does not raise again (Python's documented way out of a broken pipe)."""
    import logging
    import os
    import sys
    logging.getLogger("gieok.serve").info("the MCP client closed its connection; stopping")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def _banner(host: str, port: int, database: str, auth: str, *, ui: bool = False, as_json: bool = False) -> None:
    base = f"http://{host}:{port}"
    if as_json:
        # A log collector reads one JSON object per line: the banner is one more of them, not eight lines of text.
        import logging
        logging.getLogger("gieok.serve").info("gieok is serving", extra={
            "mcp": f"{base}/mcp", "capture": f"{base}/v1/messages", "context": f"{base}/v1/context",
            "health": f"{base}/health", **({"dashboard": f"{base}/ui/"} if ui else {}), "database": database,
            "auth": auth})
        return
    typer.echo("\n".join([
        "gieok is serving:",
        f"  MCP (Streamable HTTP)  {base}/mcp",
        f"  capture                POST {base}/v1/messages   ·   session-start context  GET {base}/v1/context",
        f"  health                 {base}/health",
        *([f"  memory dashboard: {base}/ui/"] if ui else []),
        f"  database               {database}",
        f"  auth                   {auth}",
        "Ctrl-C stops it.",
    ]), err=True)


@app.command()
def doctor(db: DbOpt = None, user: UserOpt = None) -> None:
    """Check the database, extensions and providers, and say how to fix what is wrong."""
    from gieok.app.doctor import run_checks
    s = settings_for(db, user)
    ok = asyncio.run(run_checks(s, typer.echo))
    _outbox_check(s)
    raise typer.Exit(0 if ok else 1)


def _outbox_check(s: Settings) -> None:
    """Captured messages that hooks could not store in time wait on disk (not lost, not searchable yet)."""
    import os
    import time

    from gieok.capture.hook_messages import OUTBOX_PER_RUN, outbox_left
    left = outbox_left(s)
    if not left:
        typer.echo("[ok] hooks: no captured messages waiting to be stored")
        return
    try:
        oldest = time.time() - os.stat(left[0]).st_mtime      # oldest first
    except OSError:         # a hook delivered it meanwhile
        oldest = 0.0
    typer.echo(f"[warn] hooks: {len(left)} batch(es) of captured messages wait in {os.path.dirname(left[0])} "
               f"(the oldest for {oldest / 60:.0f} min): the server or database did not answer in time\n"
               f"       fix: nothing is lost; the next hook run stores up to {OUTBOX_PER_RUN} of them (check that "
               "`gieok serve` is up, or that no other process holds the database)")


@app.command()
def healthcheck(
    port: Annotated[int | None, typer.Option(help="Port to probe (default GIEOK_PORT; a worker's is "
                                                  "GIEOK_WORKER_PORT).")] = None,
    path: Annotated[str, typer.Option(help="/health (alive) or /ready (can serve).")] = "/health",
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the answer.")] = 3.0,
) -> None:
    """Probe this machine's gieok HTTP server (for a container HEALTHCHECK): exit 0 when it answers 200."""
    import urllib.error
    import urllib.request
    s = settings_for()
    url = f"http://127.0.0.1:{port or s.port}{path}"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            ok = resp.status == 200
    except (urllib.error.URLError, OSError) as exc:
        typer.echo(f"{url}: {exc}", err=True)
        raise typer.Exit(1) from None
    raise typer.Exit(0 if ok else 1)

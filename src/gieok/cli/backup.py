"""`gieok backup PATH` and `gieok restore PATH`: the whole database to one verified file and back."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from gieok.cli.app import DbOpt, app, print_json, run, settings_for


def _progress() -> tuple[Any, Any]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
    bar = Progress(TextColumn("{task.description:<8}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                   transient=True)
    tasks: dict[str, Any] = {}

    def on_progress(stage: str, done: int, total: int) -> None:
        if stage not in tasks:
            tasks[stage] = bar.add_task(stage, total=total)
        bar.update(tasks[stage], completed=done, total=total)
    return bar, on_progress


def _finish(report: Any, as_json: bool) -> None:
    from gieok.app.backup import describe
    if as_json:
        print_json(describe(report))
    else:
        for line in report.lines():
            typer.echo(line)
        typer.echo("verified" if report.ok else "verification FAILED", err=not report.ok)
    raise typer.Exit(0 if report.ok else 1)


@app.command()
def backup(
    path: Annotated[Path, typer.Argument(help="The backup file to write (must not exist), e.g. "
                                              "/backups/gieok-2026-12-01.db.")],
    pg_dump: Annotated[bool, typer.Option(
        "--pg-dump", help="PostgreSQL only: write a `pg_dump -Fc` archive (needs pg_dump on PATH) instead of "
                          "a SQLite file.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    db: DbOpt = None,
) -> None:
    """Back up the whole database (every user's memories with their vectors, profiles, tags, links and
    feedback) to one file while servers keep running, then verify it by counts and a search. SQLite uses
    its online backup API; PostgreSQL is copied into a SQLite file (restorable into either backend)."""
    from gieok.app.backup import backup_database
    s = settings_for(db)
    bar, on_progress = _progress()

    async def go() -> Any:
        with bar:
            return await backup_database(s.resolved_database_url, path, use_pg_dump=pg_dump,
                                         on_progress=on_progress)

    _finish(run(go), as_json)


@app.command()
def restore(
    path: Annotated[Path, typer.Argument(help="A file written by `gieok backup`.")],
    to: Annotated[str | None, typer.Option("--to", help="Target database URL (default GIEOK_DATABASE_URL).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Restore a backup into a database and verify it by counts and a search. Into a new (or empty) SQLite
    file the backup is copied as it is; into PostgreSQL, or a database that already holds memories, every
    row of the backup is copied in and rows already there are skipped (run it again to resume)."""
    from gieok.app.backup import restore_database
    s = settings_for(to)
    bar, on_progress = _progress()

    async def go() -> Any:
        with bar:
            return await restore_database(path, s.resolved_database_url, on_progress=on_progress)

    _finish(run(go), as_json)

"""The typer apps every command module registers on, the options they share, and how a command runs."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

import typer

from gieok import __version__
from gieok.cli.helpfmt import TidyGroup
from gieok.core.errors import GieokError
from gieok.core.settings import Settings, load_settings

T = TypeVar("T")

app = typer.Typer(help="gieok (기억): long-term memory for AI agents, served over MCP.", no_args_is_help=True,
                  add_completion=False, pretty_exceptions_enable=False, cls=TidyGroup)
import_app = typer.Typer(help="Import memories: ndjson (a gieok export), claude-code transcripts, chatgpt export.",
                         no_args_is_help=True)
bench_app = typer.Typer(help="Benchmarks that print measured numbers.", no_args_is_help=True)
tags_app = typer.Typer(help="Project tags: list and merge synonyms.", no_args_is_help=True)
app.add_typer(import_app, name="import")
app.add_typer(bench_app, name="bench")
app.add_typer(tags_app, name="tags")

def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"gieok {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", callback=_print_version, is_eager=True,
                                                help="Print the version and exit.")] = False) -> None:
    """gieok (기억): long-term memory for AI agents, served over MCP."""


DbOpt = Annotated[str | None, typer.Option("--db", help="Database URL (overrides GIEOK_DATABASE_URL).")]
UserOpt = Annotated[str | None, typer.Option("--user", help="User id (overrides GIEOK_USER_ID).")]


def settings_for(db: str | None = None, user: str | None = None, **kw: Any) -> Settings:
    return load_settings(database_url=db, user_id=user, **kw)


def run(coro_fn: Callable[[], Awaitable[T]]) -> T:
    """Run one async command; our errors print as one clear line and exit 2."""
    try:
        return asyncio.run(coro_fn())  # type: ignore[arg-type]
    except GieokError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None


def print_json(obj: Any) -> None:
    typer.echo(json.dumps(obj, ensure_ascii=False, indent=2, default=str))

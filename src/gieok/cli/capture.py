"""Capture commands: `hook`, `install`, `uninstall`, `import claude-code|chatgpt`, `bench hook` (in `gieok.bench.hook`).

This module is imported by every `gieok` run, hooks included, so it imports nothing heavy at module level.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from gieok.cli.app import DbOpt, UserOpt, app, bench_app, import_app

ScopeOpt = Annotated[bool, typer.Option("--project/--user", help="--project: this directory's .claude/settings.json "
                                        "and .mcp.json; --user (default): ~/.claude/settings.json and ~/.claude.json.")]
ProgressOpt = Annotated[bool, typer.Option("--progress/--no-progress",
                                           help="Show a progress bar (default: when stderr is a terminal).")]


def _print_report(rep: Any) -> None:
    for line in rep.changes:
        typer.echo(line)
    for line in rep.notes:
        typer.echo(f"note: {line}", err=True)
    if not rep.ok:
        raise typer.Exit(1)


hook_app = typer.Typer(help="Agent hooks (run by the agent, not by hand): capture turns, load context.",
                       no_args_is_help=True)
install_app = typer.Typer(help="Add gieok's hooks and MCP server to an agent's settings.", no_args_is_help=True)
uninstall_app = typer.Typer(help="Remove gieok's hooks and MCP server from an agent's settings (only ours).",
                            no_args_is_help=True)
app.add_typer(hook_app, name="hook")
app.add_typer(install_app, name="install")
app.add_typer(uninstall_app, name="uninstall")

@hook_app.command("claude-code")
def hook_claude_code() -> None:
    """Handle one Claude Code hook event (JSON on stdin). Always exits 0; problems go to stderr."""
    from gieok.capture.hooks import read_stdin, run
    raise typer.Exit(run("claude-code", read_stdin))

@hook_app.command("codex")
def hook_codex(
    payload: Annotated[str | None, typer.Argument(help="The notify JSON Codex passes as the last argument "
                                                       "(read from stdin when omitted).")] = None,
) -> None:
    """Handle one Codex `notify` call (agent-turn-complete). Always exits 0; problems go to stderr."""
    from gieok.capture.hooks import read_stdin, run
    raise typer.Exit(run("codex", (lambda: payload) if payload is not None else read_stdin))

@install_app.command("claude-code")
def install_claude_code(project: ScopeOpt = False) -> None:
    """Add the SessionStart, UserPromptSubmit, Stop, SubagentStop and SessionEnd hooks and the `gieok serve`
    MCP server to Claude Code's settings, keeping everything else as it is."""
    from gieok.capture.install import install_claude
    _print_report(_config_errors(lambda: install_claude("project" if project else "user")))

@install_app.command("codex")
def install_codex_cmd() -> None:
    """Set Codex's `notify` program to `gieok hook codex` (unless one is set) and add the MCP server, in
    $CODEX_HOME/config.toml."""
    from gieok.capture.install import install_codex
    _print_report(_config_errors(install_codex))

@uninstall_app.command("claude-code")
def uninstall_claude_code(project: ScopeOpt = False) -> None:
    """Remove gieok's hooks and MCP server from Claude Code's settings; other entries stay."""
    from gieok.capture.install import uninstall_claude
    _print_report(_config_errors(lambda: uninstall_claude("project" if project else "user")))

@uninstall_app.command("codex")
def uninstall_codex_cmd() -> None:
    """Remove gieok's notify line and MCP server from Codex's config.toml; other settings stay."""
    from gieok.capture.install import uninstall_codex
    _print_report(_config_errors(uninstall_codex))

@import_app.command("claude-code")
def import_claude_code(
    path: Annotated[Path, typer.Argument(help="A transcript .jsonl, or a projects directory such as "
                                              "~/.claude/projects (searched recursively).")],
    progress: ProgressOpt = sys.stderr.isatty(),
    db: DbOpt = None,
    user: UserOpt = None,
) -> None:
    """Import Claude Code transcripts with their original times, roles, models, sessions and subagents."""
    from gieok.capture.hook_messages import project_hint
    from gieok.capture.importers import claude_code_files, claude_code_messages, guess_kind, wrong_kind_hint
    files = claude_code_files(_existing(path))
    if not files:
        typer.echo(f"error: path: no Claude Code transcripts (*.jsonl) under {path}; Claude Code keeps them in "
                   "~/.claude/projects", err=True)
        raise typer.Exit(2)
    if not any(guess_kind(f) == "claude-code" for f in files[:50]):
        # Storing nothing and saying "read 0" would look like success.
        typer.echo(f"error: path: {files[0] if len(files) == 1 else path} holds no Claude Code transcript "
                   "(expected .jsonl lines with a \"type\" and a \"message\")"
                   f"{wrong_kind_hint(files[0], 'claude-code')}", err=True)
        raise typer.Exit(2)
    sessions: dict[str, Any] = {}
    projects: dict[str, str] = {}

    def project_of(cwd: str) -> str:
        if cwd not in projects:
            projects[cwd] = project_hint(cwd)
        return projects[cwd]

    _import(db, user, files, lambda uid: lambda f: claude_code_messages(f, uid, project_of, sessions),
            "claude-code", progress)

@import_app.command("chatgpt")
def import_chatgpt(
    path: Annotated[Path, typer.Argument(help="conversations.json from a ChatGPT data export.")],
    all_branches: Annotated[bool, typer.Option("--all-branches", help="Also import regenerated answers and "
                                               "edited prompts the conversation moved away from.")] = False,
    progress: ProgressOpt = sys.stderr.isatty(),
    db: DbOpt = None,
    user: UserOpt = None,
) -> None:
    """Import a ChatGPT export: each conversation is a session; times, roles and models are kept."""
    from gieok.capture.importers import chatgpt_messages, load_chatgpt
    convs = _config_errors(lambda: load_chatgpt(_existing(path)))
    _import(db, user, convs, lambda uid: lambda c: chatgpt_messages(c, uid, all_branches=all_branches),
            "chatgpt", progress)

@bench_app.command("hook")
def bench_hook(
    events: Annotated[int, typer.Option(help="Hook events per run (prompts and stops, alternating).")] = 200,
    server: Annotated[bool, typer.Option("--server/--no-server", help="Also measure with a running "
                                         "`gieok serve --transport http`.")] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON too.")] = False,
) -> None:
    """Wall time of `gieok hook claude-code` per event, process start included (p50/p95), against a temp
    GIEOK_HOME: writing straight to SQLite, and through a running server; each next to a bare
    `python -c pass` measured in the same run."""
    from gieok.bench.hook import run_gather_bench, run_hook_bench
    results = [run_hook_bench(events, with_server=False)]
    if server:
        results.append(run_hook_bench(events, with_server=True))
    for r in results:
        typer.echo(r["line"])
        typer.echo(r["bare_line"])
    gathered = run_gather_bench()
    typer.echo(gathered["line"])
    results.append(gathered)
    if as_json:
        typer.echo(json.dumps(results, indent=2))


def _config_errors(fn: Any) -> Any:
    """Our errors (bad settings file, unreadable export) print as one line and exit 2, as in `gieok.cli.app.run`."""
    from gieok.core.errors import GieokError
    try:
        return fn()
    except GieokError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None


def _existing(path: Path) -> Path:
    if not path.exists():
        typer.echo(f"error: path: {path} does not exist", err=True)
        raise typer.Exit(2)
    return path


def _import(db: str | None, user: str | None, sources: list[Any], messages_for: Any, label: str,
            progress: bool) -> None:
    """Run an import with the CLI's error handling. `messages_for(user_id)` gives source → messages."""
    from gieok.app.runtime import open_service
    from gieok.capture.importers import BatchWriter, ImportCounts, import_sources
    from gieok.cli.app import run, settings_for
    s = settings_for(db, user)

    async def go() -> ImportCounts:
        async with open_service(s, with_embedder=False) as svc:
            writer = BatchWriter(svc.store, max_bytes=s.max_content_bytes, redact_secrets=s.redact_secrets)
            return await import_sources(writer, sources, messages_for(s.user_id), label=f"import {label}",
                                        progress=progress)

    counts = run(go)
    refused = f", refused {counts.invalid}" if counts.invalid else ""
    typer.echo(f"read {counts.read}, stored {counts.stored}, skipped {counts.duplicates} already present{refused}")
    for err in counts.errors:
        typer.echo(f"  refused: {err}", err=True)

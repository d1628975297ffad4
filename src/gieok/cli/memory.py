"""Memory commands: ingest, add, search, context, export, import ndjson, stats, bench ingest."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from gieok.cli import render
from gieok.cli.app import DbOpt, UserOpt, app, bench_app, import_app, print_json, run, settings_for


@app.command()
def ingest(
    text: Annotated[str, typer.Argument(help="The message text, or '-' to read stdin.")],
    role: Annotated[str, typer.Option(help="user | assistant | system | tool")] = "user",
    platform: Annotated[str | None, typer.Option(help="Agent platform (claude-code, codex, …).")] = None,
    model: Annotated[str | None, typer.Option(help="Agent model.")] = None,
    session: Annotated[str | None, typer.Option(help="Session id.")] = None,
    project: Annotated[str | None, typer.Option(help="Project hint (repo name).")] = None,
    at: Annotated[str | None, typer.Option(help="created_at, ISO-8601 (imports, benchmarks).")] = None,
    subagent_role: Annotated[str | None, typer.Option(help="Subagent role, when a subagent speaks.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="stdin/text is a JSON message object (or array).")] = False,
    db: DbOpt = None,
    user: UserOpt = None,
) -> None:
    """Store one message on the hot path (no embedding, no LLM). Prints its id."""
    from gieok.app.runtime import open_service
    from gieok.core.errors import InvalidInput
    from gieok.memory.ingest import MessageIn, message_from_json

    s = settings_for(db, user)
    body = sys.stdin.read() if text == "-" else text

    async def go() -> list[tuple[str, bool]]:
        async with open_service(s, with_embedder=False) as svc:
            base = svc.default_identity()
            if as_json:
                try:
                    data = json.loads(body)
                except json.JSONDecodeError as exc:
                    raise InvalidInput("stdin", f"not JSON ({exc.msg}); drop --json to store plain text") from None
                except RecursionError:
                    raise InvalidInput("stdin", "is nested too deeply to be a message") from None
                items = data if isinstance(data, list) else [data]
                msgs = []
                for i, item in enumerate(items):
                    if not isinstance(item, dict):
                        raise InvalidInput(f"[{i}]", "each message must be a JSON object")
                    msgs.append(message_from_json(item, base))
                # All or nothing, as POST /v1/messages: one bad item refuses the whole list.
                return await svc.ingest_batch(msgs)
            msg = MessageIn(content=body, user_id=base.user_id, role=role,
                            agent_platform=platform or base.agent_platform, agent_model=model or base.agent_model,
                            session_id=session or base.session_id, project=project or base.project, created_at=at,
                            subagent_role=subagent_role or base.subagent_role)
            return [await svc.ingest(msg)]

    for mid, inserted in run(go):
        typer.echo(mid if inserted else f"{mid} (already stored)")


@app.command()
def add(
    text: Annotated[str, typer.Argument(help="What to remember ('-' for stdin).")],
    kind: Annotated[str, typer.Option(help="working | episodic | semantic | procedural")] = "semantic",
    importance: Annotated[float, typer.Option(help="0..1")] = 0.8,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="Topic tag (repeatable).")] = None,
    title: Annotated[str | None, typer.Option(help="Short title.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    file: Annotated[list[str] | None, typer.Option("--file", help="A file it is about (repeatable): path, "
                                                   "path:42, path:10-20 or path::symbol.")] = None,
    db: DbOpt = None,
    user: UserOpt = None,
) -> None:
    """Remember something explicitly: pinned, tagged and embedded now; --file anchors it to code."""
    from gieok.app.runtime import open_service
    from gieok.memory.ingest import MessageIn

    s = settings_for(db, user)
    body = sys.stdin.read() if text == "-" else text

    async def go() -> dict[str, Any]:
        async with open_service(s) as svc:
            ident = svc.default_identity()
            res = await svc.remember(MessageIn(content=body, user_id=ident.user_id, kind=kind, importance=importance,
                                               d_tags=list(tag or []), title=title or "", source="manual",
                                               agent_platform=ident.agent_platform, agent_model=ident.agent_model,
                                               project=ident.project), files=list(file or []) or None)
            return res.to_dict()

    res = run(go)
    if as_json:
        print_json(res)
        return
    render.console.print(f"remembered {res['id']} (pinned; tags {res['tagged']}, embedding {res['embedded']})")
    render.print_notes(res.get("notes", []))


@app.command()
def search(
    query: Annotated[str | None, typer.Argument(help="What to find (omit to list the newest).")] = None,
    limit: Annotated[int, typer.Option(help="How many results.")] = 10,
    role: Annotated[str | None, typer.Option(help="user | assistant | system | tool")] = None,
    kind: Annotated[str | None, typer.Option(help="working | episodic | semantic | procedural")] = None,
    p_tag: Annotated[str | None, typer.Option("--p-tag", help="Project tag.")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="Topic tag (repeatable).")] = None,
    date_range: Annotated[str | None, typer.Option("--date-range", "--when",
                                                   help="3d, last Friday, 지지난주, 2026-11-01..2026-11-30 …")] = None,
    platform: Annotated[str | None, typer.Option(help="Only this agent platform.")] = None,
    model: Annotated[str | None, typer.Option(help="Only this agent model.")] = None,
    include_archived: Annotated[bool, typer.Option("--include-archived", help="Search archived memory too.")] = False,
    recipe: Annotated[str | None, typer.Option(help="Retrieval recipe: hybrid, vector, keyword.")] = None,
    file: Annotated[str | None, typer.Option("--file", help="Only memories about this file (path or its end: "
                                             "retry.py, billing/retry.py).")] = None,
    repo: Annotated[str | None, typer.Option(help="Only memories about files of this repository (name, root "
                                             "or remote URL).")] = None,
    stale: Annotated[str | None, typer.Option(help="only: memories whose files changed since; exclude: the "
                                              "others.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    db: DbOpt = None,
    user: UserOpt = None,
) -> None:
    """Search memory with the full ranking; --json prints score parts and recall reasons."""
    from gieok.app.runtime import open_service
    s = settings_for(db, user)

    async def go() -> Any:
        async with open_service(s, with_embedder=recipe != "keyword") as svc:
            f = svc.filters(s.user_id, role=role, kind=kind, p_tag=p_tag, tags=tag, date_range=date_range,
                            platform=platform, model=model, include_archived=include_archived, file=file,
                            repo=repo, stale=stale)
            return await svc.search(f, query, limit=limit, recipe=recipe)

    out = run(go)
    if as_json:
        print_json({"mode": out.mode, "notes": out.notes, "results": [h.to_dict() for h in out.hits]})
        return
    n = len(out.hits)
    what = f"for {query!r} ({_MODES.get(out.mode, out.mode)})" if query else "newest first"
    render.header(f"{n} {'memory' if n == 1 else 'memories'} of user {s.user_id} {what}")
    render.print_notes(out.notes)
    render.print_hits(out.hits, show_score=bool(query))


_MODES = {"hybrid": "meaning and keywords", "vector": "meaning", "keyword": "keywords",
          "fallback": "keywords: nothing close in meaning", "recent": "newest"}


@app.command()
def context(
    query: Annotated[str | None, typer.Option(help="The task at hand.")] = None,
    project: Annotated[str | None, typer.Option(help="Project (p_tag).")] = None,
    platform: Annotated[str | None, typer.Option(help="Agent platform.")] = None,
    model: Annotated[str | None, typer.Option(help="Agent model.")] = None,
    budget: Annotated[int | None, typer.Option(help="Token budget (default GIEOK_TOKEN_BUDGET).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON with sections.")] = False,
    db: DbOpt = None,
    user: UserOpt = None,
) -> None:
    """Print the context block an agent would start a session with."""
    from gieok.app.runtime import open_service
    from gieok.memory.context import load_context
    s = settings_for(db, user, agent_platform=platform, agent_model=model)

    async def go() -> Any:
        async with open_service(s) as svc:
            return await load_context(svc, svc.default_identity(), project=project, query=query, token_budget=budget)

    block = run(go)
    if as_json:
        print_json(block.to_dict())
    else:
        typer.echo(block.text)


@app.command()
def export(
    fmt: Annotated[str, typer.Option("--format", help="ndjson | markdown | csv")] = "ndjson",
    output: Annotated[Path | None, typer.Option("-o", "--output", help="File to write (default stdout).")] = None,
    all_users: Annotated[bool, typer.Option("--all-users", help="Every user, not just GIEOK_USER_ID.")] = False,
    db: DbOpt = None,
    user: UserOpt = None,
) -> None:
    """Export memories to read or move elsewhere: ndjson (every field of every memory, for `gieok import
    ndjson`), markdown or csv. Not a backup: profiles, forgotten rows and vectors stay behind; for a full,
    verified copy use `gieok copy --to sqlite:///backup.db`."""
    from gieok.app.runtime import open_service
    from gieok.memory.export import export_text
    s = settings_for(db, user)

    async def go() -> tuple[str, int]:
        async with open_service(s, with_embedder=False) as svc:
            return await export_text(svc.store, None if all_users else s.user_id, fmt)

    text, n = run(go)
    if output:
        output.write_text(text, encoding="utf-8")
        typer.echo(f"exported {n} memories to {output}", err=True)
    else:
        sys.stdout.write(text)


@import_app.command("ndjson")
def import_ndjson_cmd(
    path: Annotated[str, typer.Argument(help="An ndjson file from `gieok export` ('-' for stdin).")],
    db: DbOpt = None,
    user: UserOpt = None,
) -> None:
    """Import a `gieok export --format ndjson` file: every field as exported (vectors are recomputed);
    nothing is stored twice."""
    from gieok.app.runtime import open_service
    from gieok.capture.importers import wrong_kind_hint
    from gieok.core.errors import InvalidInput
    from gieok.memory.export import import_ndjson
    s = settings_for(db, user)

    async def go() -> tuple[int, int]:
        async with open_service(s, with_embedder=False) as svc:
            if path == "-":
                return await import_ndjson(svc.store, sys.stdin)
            try:
                with open(path, encoding="utf-8") as fh:
                    return await import_ndjson(svc.store, fh)
            except FileNotFoundError:
                raise InvalidInput("path", f"{path} does not exist") from None
            except InvalidInput as exc:
                hint = wrong_kind_hint(Path(path), "ndjson")
                if hint:
                    raise InvalidInput("path", f"{path} is not a gieok export{hint}") from exc
                raise

    read, inserted = run(go)
    typer.echo(f"read {read}, imported {inserted}, skipped {read - inserted} already present")


@app.command()
def stats(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    all_users: Annotated[bool, typer.Option("--all-users", help="Count every user's memories.")] = False,
    db: DbOpt = None,
    user: UserOpt = None,
) -> None:
    """Counts of one user's memories (GIEOK_USER_ID or --user; --all-users for everyone), the librarian's
    pending and failed rows with the last error, and its periodic jobs."""
    from gieok.app.runtime import open_service
    from gieok.librarian.status import librarian_status
    s = settings_for(db, user)

    async def go() -> dict[str, Any]:
        async with open_service(s, with_embedder=False) as svc:
            data = await svc.store.stats(None if all_users else s.user_id)
            users = await svc.store.list_user_ids()
            data["user"] = None if all_users else s.user_id
            data["users_in_database"] = len(users)
            if not all_users:
                data["all_users_total"] = (await svc.store.stats(None))["total"]
            data["librarian_jobs"] = await librarian_status(svc.store)
            return data

    data = run(go)
    if as_json:
        print_json(data)
        return
    print_stats(data, s.resolved_database_url)


def print_stats(d: dict[str, Any], url: str) -> None:
    from gieok.cli.render import console, kv_table, rows_table
    who = f"user {d['user']}" if d["user"] else f"all {d['users_in_database']} users"
    console.print(f"[bold]{who}[/] in {url}")
    if d["user"]:
        others = d["all_users_total"] - d["total"]
        console.print(f"[dim]the database holds {d['all_users_total']} memories of {d['users_in_database']} "
                      f"user(s); {others} belong to others (--all-users counts them)[/]")
    console.print(kv_table([
        ("memories", d["total"]), ("active", d["active"]), ("archived", d["archived"]),
        ("forgotten", d["deleted"]), ("pinned", d["pinned"]),
        ("oldest", str(d["oldest"] or "-")[:16]), ("newest", str(d["newest"] or "-")[:16]),
    ], title="Memories"))
    err = d.get("last_error")
    console.print(kv_table([
        ("pending", d["pending"]), ("failed", d["failed"]), ("done in the last hour", d["processed_last_hour"]),
        ("last error", f"{err['error']} (memory {err['id']}, {str(err['at'])[:16]})" if err else None),
    ], title="Librarian"))
    if d["by_platform"]:
        console.print(rows_table(("platform", "memories"), sorted(d["by_platform"].items(), key=lambda kv: -kv[1]),
                                 title="By agent platform"))
    if d["by_embedding_model"]:
        console.print(rows_table(("embedding model", "memories"), d["by_embedding_model"].items(),
                                 title="By embedding model"))
    jobs = d.get("librarian_jobs") or {}
    if jobs:
        console.print(rows_table(
            ("job", "last finished", "running on", "last result"),
            [(name, str(j["last_finished_at"] or "never")[:19], j["running_on"],
              ", ".join(f"{k} {v}" for k, v in j["last_result"].items()))
             for name, j in jobs.items()], title="Periodic jobs"))
    else:
        console.print("[dim]periodic jobs (maintenance, consolidation): never run yet; they run in `gieok serve` "
                      "and `gieok worker`, or now with `gieok maintain`[/]")


@bench_app.command("ingest")
def bench_ingest(
    n: Annotated[int, typer.Option(help="Number of single ingests.")] = 10000,
    size: Annotated[int, typer.Option(help="Bytes per message.")] = 500,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Ingest p50/p99 against a bare SQLite INSERT with the same full-text trigger, in one run."""
    from gieok.bench.ingest import run_ingest_bench
    res = asyncio.run(run_ingest_bench(n=n, size=size))
    if as_json:
        print_json(res)

"""Looking after one's memory by hand: `list`, `show`, `edit`, `pin`, `unpin`, `forget`.

Each acts on the memories of one user (GIEOK_USER_ID or --user) and refuses ids of anyone else's."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from gieok.cli import render
from gieok.cli.app import DbOpt, UserOpt, app, print_json, run, settings_for

IdArg = Annotated[str, typer.Argument(metavar="ID", help="The memory's id (from `gieok list` or `gieok search`).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]


@app.command("list")
def list_cmd(
    limit: Annotated[int, typer.Option(help="Memories per page (1..1000).")] = 20,
    after: Annotated[str | None, typer.Option(metavar="ID", help="Start after this id: the last one of the "
                                              "previous page (the command prints it).")] = None,
    role: Annotated[str | None, typer.Option(help="user | assistant | system | tool")] = None,
    kind: Annotated[str | None, typer.Option(help="working | episodic | semantic | procedural")] = None,
    p_tag: Annotated[str | None, typer.Option("--p-tag", help="Project tag.")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="Topic tag (repeatable).")] = None,
    date_range: Annotated[str | None, typer.Option("--date-range", "--when",
                                                   help="3d, last Friday, 지지난주, 2026-11-01..2026-11-30 …")] = None,
    platform: Annotated[str | None, typer.Option(help="Only this agent platform.")] = None,
    model: Annotated[str | None, typer.Option(help="Only this agent model.")] = None,
    session: Annotated[str | None, typer.Option(help="Only this session id.")] = None,
    pinned: Annotated[bool, typer.Option("--pinned", help="Only pinned memories.")] = False,
    include_archived: Annotated[bool, typer.Option("--include-archived", help="Archived memory too.")] = False,
    as_json: JsonOpt = False,
    db: DbOpt = None,
    user: UserOpt = None,
) -> None:
    """List memories, newest first, with the filters of `gieok search`; page on with --after."""
    from gieok.app.runtime import open_service
    s = settings_for(db, user)

    async def go() -> Any:
        async with open_service(s, with_embedder=False) as svc:
            f = svc.filters(s.user_id, role=role, kind=kind, p_tag=p_tag, tags=tag, date_range=date_range,
                            platform=platform, model=model, session_id=session, include_archived=include_archived)
            f.pinned_only = pinned
            return await svc.newest(f, limit=limit, after_id=after)

    rows = run(go)
    if as_json:
        print_json({"results": [m.to_dict() for m in rows],
                    "next_after": rows[-1].id if len(rows) == limit else None})
        return
    if not rows:
        render.header(f"no memories of user {s.user_id} match" + (" after that id" if after else ""))
        return
    render.header(f"{len(rows)} memories of user {s.user_id}, newest first" + (" (continued)" if after else ""))
    for m in rows:
        render.print_memory_line(m)
    if len(rows) == limit:
        render.console.print(f"[dim]next page: the same command with --after {rows[-1].id}[/]")


@app.command()
def show(
    memory_id: IdArg,
    as_json: JsonOpt = False,
    db: DbOpt = None,
    user: UserOpt = None,
) -> None:
    """Print one memory in full, with its tags, identity, status and counts."""
    from gieok.app.runtime import open_service
    s = settings_for(db, user)

    async def go() -> Any:
        async with open_service(s, with_embedder=False) as svc:
            return await svc.open(memory_id, s.user_id)

    m = run(go)
    if as_json:
        print_json(m.to_dict())
        return
    render.console.print(render.kv_table([
        ("id", m.id), ("created", m.created_at.isoformat() if m.created_at else None),
        ("role · kind", f"{m.role} · {m.kind}"), ("title", m.title),
        ("platform · model", " · ".join(x for x in (m.agent_platform, m.agent_model) if x)),
        ("subagent", m.subagent_role), ("session", m.session_id), ("project", m.project),
        ("project tags", ", ".join(m.p_tags)), ("topic tags", ", ".join(m.d_tags)),
        ("importance", f"{m.importance:.2f}"), ("status", render.flags(m) or "active"),
        ("librarian", f"tags {m.tag_status}, embedding {m.embed_status}"
                      + (f" ({m.embedding_model})" if m.embedding_model else "")
                      + (f"; last error: {m.cold_error}" if m.cold_error else "")),
        ("used", f"opened {m.view_count}, cited {m.cite_count}, edited {m.edit_count}, "
                 f"shown in results {m.shown_count}"),
        ("redacted", ", ".join(m.meta.get("redacted", []))),
    ]))
    render.console.print()
    render.console.print(m.content, markup=False)


@app.command()
def edit(
    memory_id: IdArg,
    content: Annotated[str | None, typer.Option(help="New text ('-' reads stdin); it is re-tagged and "
                                                     "re-embedded.")] = None,
    importance: Annotated[float | None, typer.Option(help="0..1")] = None,
    kind: Annotated[str | None, typer.Option(help="working | episodic | semantic | procedural")] = None,
    title: Annotated[str | None, typer.Option(help="Short title.")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="Topic tags, replacing the old ones "
                                                                "(repeatable).")] = None,
    db: DbOpt = None,
    user: UserOpt = None,
) -> None:
    """Change a memory's content, importance, kind, title or topic tags."""
    from gieok.app.runtime import open_service
    s = settings_for(db, user)
    text = sys.stdin.read() if content == "-" else content

    async def go() -> Any:
        async with open_service(s) as svc:
            return await svc.update(memory_id, s.user_id, content=text, importance=importance, kind=kind,
                                    tags=tag, title=title)

    m = run(go)
    render.header(f"edited {m.id}")
    render.print_memory_line(m)


def _set_pinned(memory_id: str, pinned: bool, db: str | None, user: str | None) -> None:
    from gieok.app.runtime import open_service
    s = settings_for(db, user)

    async def go() -> Any:
        async with open_service(s, with_embedder=False) as svc:
            return await svc.set_pinned(memory_id, s.user_id, pinned)

    m = run(go)
    render.console.print(f"{'pinned' if pinned else 'unpinned'} {m.id}"
                         + (": it is loaded into every session's context" if pinned else ""))


@app.command()
def pin(memory_id: IdArg, db: DbOpt = None, user: UserOpt = None) -> None:
    """Pin a memory: it goes into every session's context and is never archived."""
    _set_pinned(memory_id, True, db, user)


@app.command()
def unpin(memory_id: IdArg, db: DbOpt = None, user: UserOpt = None) -> None:
    """Unpin a memory: it is ranked like any other again."""
    _set_pinned(memory_id, False, db, user)


@app.command()
def forget(
    memory_id: IdArg,
    hard: Annotated[bool, typer.Option("--hard", help="Erase it from every table, index, summary and profile "
                                                      "fact (a leaked secret, a right-to-erasure request); "
                                                      "it cannot be undone.")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask before --hard (asked only at a "
                                                          "terminal).")] = False,
    db: DbOpt = None,
    user: UserOpt = None,
) -> None:
    """Forget a memory: hidden from search and context (soft, the default), or erased everywhere (--hard)."""
    from gieok.app.runtime import open_service
    s = settings_for(db, user)
    if hard and not yes and sys.stdin.isatty():
        typer.confirm(f"Erase memory {memory_id} everywhere? This cannot be undone", abort=True)

    async def go() -> Any:
        async with open_service(s, with_embedder=False) as svc:
            return await svc.forget(memory_id, s.user_id, hard=hard)

    res = run(go)
    if res["forgotten"] == "hard":
        render.console.print(f"erased {memory_id}: gone from every table, index and export")
    else:
        render.console.print(f"forgot {memory_id}: hidden from search and context. "
                             f"`gieok forget {memory_id} --hard` erases it everywhere.")

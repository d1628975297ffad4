"""Team server commands: `gieok keys`, `gieok teams`, `gieok audit`, `gieok erase`. They open the database
directly (the operator's own access) and are audited as `cli:<os user>`."""

from __future__ import annotations

import getpass
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, TypeVar

import typer

from gieok.cli.app import DbOpt, app, bench_app, print_json, run, settings_for

T = TypeVar("T")

keys_app = typer.Typer(help="API keys of the team server: create (printed once), list, revoke.", no_args_is_help=True)
teams_app = typer.Typer(help="Teams and their members.", no_args_is_help=True)
app.add_typer(keys_app, name="keys")
app.add_typer(teams_app, name="teams")


def _operator() -> str:
    try:
        return "cli:" + getpass.getuser()
    except Exception:
        return "cli:unknown"


def _with_admin(db: str | None, fn: Callable[..., Awaitable[T]]) -> T:
    from gieok.auth.admin import Admin
    from gieok.core.principal import Principal
    from gieok.store import open_store

    s = settings_for(db)

    async def go() -> T:
        store = open_store(s.resolved_database_url, busy_timeout_ms=s.busy_timeout_ms)
        await store.open()
        try:
            return await fn(Admin(store, Principal(_operator(), roles=("admin",), client="gieok-cli")))
        finally:
            await store.close()
    return run(go)


@keys_app.command("create")
def keys_create(
    user: Annotated[str, typer.Option("--user", help="Whose key (their user id).")],
    team: Annotated[list[str] | None, typer.Option("--team", help="Team the user belongs to (repeatable).")] = None,
    role: Annotated[str, typer.Option(help="viewer (read) | editor (read, write own) | admin.")] = "editor",
    expires: Annotated[str | None, typer.Option(help="Lifetime: 90d, 12h, 2w, 6m, 1y or never.")] = "90d",
    name: Annotated[str, typer.Option(help="A label (which machine or agent uses it).")] = "",
    db: DbOpt = None,
) -> None:
    """Create an API key and print it once (only its hash is stored)."""
    made = _with_admin(db, lambda a: a.create_key(user, role=role, teams=team, expires=expires, name=name))
    typer.echo(made.key.token)
    r = made.record
    typer.echo(f"key {r.key_id} for {r.user_id}: role {r.role}, teams {', '.join(r.teams) or '-'}, expires "
               f"{r.expires_at.isoformat() if r.expires_at else 'never'}. It is shown only now: store it safely.",
               err=True)


@keys_app.command("list")
def keys_list(user: Annotated[str | None, typer.Option("--user", help="Only this user's keys.")] = None,
              as_json: Annotated[bool, typer.Option("--json")] = False, db: DbOpt = None) -> None:
    """List API keys (never their secrets)."""
    async def go(a: object) -> list[dict[str, object]]:
        from gieok.auth.admin import Admin
        assert isinstance(a, Admin)
        return [k.public() for k in await a.store.list_api_keys(user)]
    rows = _with_admin(db, go)
    if as_json:
        print_json(rows)
        return
    for k in rows:
        state = "revoked" if k["revoked_at"] else "active"
        typer.echo(f"{k['key_id']}  {k['user_id']:<16} {k['role']:<7} {state:<8} expires {k['expires_at'] or 'never'}"
                   f"  last used {k['last_used_at'] or '-'}  {k['name']}")


@keys_app.command("revoke")
def keys_revoke(key_id: Annotated[str, typer.Argument(help="The key id (from `gieok keys list`).")],
                db: DbOpt = None) -> None:
    """Revoke a key: the next request with it is refused (401)."""
    rec = _with_admin(db, lambda a: a.revoke_key(key_id))
    typer.echo(f"revoked {rec.key_id} ({rec.user_id})")


@teams_app.command("list")
def teams_list(as_json: Annotated[bool, typer.Option("--json")] = False, db: DbOpt = None) -> None:
    """Teams and their members."""
    async def go(a: object) -> list[dict[str, object]]:
        from gieok.auth.admin import Admin
        assert isinstance(a, Admin)
        return [{"name": t.name, "description": t.description, "members": t.members}
                for t in await a.store.list_teams()]
    rows = _with_admin(db, go)
    if as_json:
        print_json(rows)
        return
    for t in rows:
        typer.echo(f"{t['name']}: {', '.join(t['members']) or '(no members)'}")  # type: ignore[arg-type]


@teams_app.command("create")
def teams_create(team: str, description: Annotated[str, typer.Option(help="What the team is.")] = "",
                 db: DbOpt = None) -> None:
    """Create a team (adding a member also creates it)."""
    _with_admin(db, lambda a: a.create_team(team, description))
    typer.echo(f"team {team}")


@teams_app.command("delete")
def teams_delete(team: str, db: DbOpt = None) -> None:
    """Delete a team: its team memories stay their owners' and are shared with nobody."""
    _with_admin(db, lambda a: a.delete_team(team))
    typer.echo(f"deleted team {team}")


@teams_app.command("add")
def teams_add(team: str, user: Annotated[str, typer.Option("--user", help="The member's user id.")],
              db: DbOpt = None) -> None:
    """Add a user to a team."""
    _with_admin(db, lambda a: a.add_member(team, user))
    typer.echo(f"{user} is in {team}")


@teams_app.command("remove")
def teams_remove(team: str, user: Annotated[str, typer.Option("--user", help="The member's user id.")],
                 db: DbOpt = None) -> None:
    """Remove a user from a team: they stop seeing its team memories at once."""
    _with_admin(db, lambda a: a.remove_member(team, user))
    typer.echo(f"{user} left {team}")


@app.command()
def audit(
    user: Annotated[str | None, typer.Option("--user", help="Entries by, for, or reading the memories of this user.")]
    = None,
    since: Annotated[str | None, typer.Option(help="From this time: ISO date/time, or 24h, 7d, 'last week'.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="NDJSON, one entry per line (for a SIEM).")] = False,
    out: Annotated[Path | None, typer.Option(help="Write NDJSON to this file instead of stdout.")] = None,
    limit: Annotated[int, typer.Option(help="Most entries to print (0: all).")] = 1000,
    db: DbOpt = None,
) -> None:
    """The audit log: who did what, when, with which key, and what it touched."""
    from gieok.core.dates import parse_date_range

    start = parse_date_range(since)[0] if since else None

    async def go(a: object) -> int:
        from gieok.auth.admin import Admin
        assert isinstance(a, Admin)
        sink = out.open("w", encoding="utf-8") if out else sys.stdout
        n, after = 0, None
        try:
            while limit == 0 or n < limit:
                page = await a.store.list_audit(user_id=user, since=start, after_id=after,
                                                limit=min(1000, limit - n) if limit else 1000)
                if not page:
                    break
                for e in page:
                    if as_json or out:
                        sink.write(json.dumps(e.to_dict(), ensure_ascii=False) + "\n")
                    else:
                        who = e.actor + (f" for {e.on_behalf}" if e.on_behalf else "")
                        ids = f" [{', '.join(e.memory_ids[:5])}{'…' if len(e.memory_ids) > 5 else ''}]" \
                            if e.memory_ids else ""
                        owners = f" of {', '.join(e.owners)}" if e.owners else ""
                        sink.write(f"{e.ts.isoformat(timespec='seconds')} {who} ({e.via or '-'} {e.key_id or '-'}) "
                                   f"{e.action} {e.outcome}{ids}{owners} {e.detail}\n")
                n += len(page)
                after = page[-1].id
        finally:
            if out:
                sink.close()
        return n

    n = _with_admin(db, go)
    if out:
        typer.echo(f"{n} entries → {out}", err=True)


@app.command()
def erase(user: Annotated[str, typer.Option("--user", help="The person to erase.")],
          yes: Annotated[bool, typer.Option("--yes", help="Do not ask for confirmation.")] = False,
          db: DbOpt = None) -> None:
    """Erase a person (GDPR-style): every memory, index entry, summary, profile, membership and key."""
    if not yes and not typer.confirm(f"Erase everything of {user!r}? This cannot be undone"):
        raise typer.Exit(1)
    rep = _with_admin(db, lambda a: a.erase_user(user))
    print_json(rep.to_dict())


@bench_app.command("audit")
def bench_audit(n: Annotated[int, typer.Option(help="Ingests in all.")] = 10000,
                size: Annotated[int, typer.Option(help="Bytes per message.")] = 500) -> None:
    """What audit entries cost the hot path: ingest with and without one per write, measured in one run."""
    import asyncio

    from gieok.bench.audit import run_audit_bench
    asyncio.run(run_audit_bench(n, size, typer.echo))

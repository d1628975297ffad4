"""`gieok bench locomo --compare DIR`: two variants of the same conversations in one run, and their ratio.

Variant A is `--data`, variant B the file of the same name in `--compare` (e.g. `locomo-dev/30.json` against
`locomo-ko-dev/ko/30.json` for Korean memory vs English memory, or against `locomo-ko-dev/xq/30.json` for Korean
questions over English memory; with `b_questions="question_en"`, against `ko/30.json`'s original English
questions: an agent asking in English over Korean memory). Both are scored with the same metric
(`gieok.bench.locomo`), and every figure is printed for A, for B and as B/A, so a language gap is one command.

When the two variants hold the same turns (only the questions differ, as in the cross-lingual set), the
conversation is ingested once and both question sets are asked against that one memory: the memory is then
identical by construction and the run takes half the time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from gieok.bench.locomo import (
    Conversation,
    Score,
    beside,
    databases,
    format_report,
    load_conversation,
    run_conversation,
    score_dict,
    workdir_for,
)


def _files(data: Path) -> list[Path]:
    return sorted(data.glob("*.json")) if data.is_dir() else [data]


def pair_files(a: Path, b: Path) -> list[tuple[Path, Path]]:
    """Conversations of `a` with their counterpart of the same file name in `b` (a folder, or one file)."""
    fa = _files(a)
    if not fa:
        raise FileNotFoundError(f"no *.json conversation files in {a}")
    if b.is_file():
        if len(fa) != 1:
            raise ValueError(f"--compare {b} is one file but --data {a} holds {len(fa)}: give two files or "
                             "two folders")
        return [(fa[0], b)]
    pairs = [(p, b / p.name) for p in fa if (b / p.name).exists()]
    if not pairs:
        raise FileNotFoundError(f"none of {', '.join(p.name for p in fa)} is in {b}: the variants are paired "
                                "by file name")
    return pairs


def _same_turns(x: Conversation, y: Conversation) -> bool:
    return [(t.dia_id, t.speaker, t.text, t.created_at) for t in x.turns] == \
        [(t.dia_id, t.speaker, t.text, t.created_at) for t in y.turns]


async def run_compare(a: Path, b: Path, *, ks: tuple[int, ...] = (5, 10, 20), recipe: str = "hybrid",
                      b_questions: str = "question", echo: Callable[[str], Any] | None = None,
                      stores: Path | None = None, backend: str = "sqlite",
                      pg_url: str | None = None, beside_path: Path | None = None) -> dict[str, Any]:
    """Score both variants; `{"a": score, "b": score, "ratio": b/a per figure, "pairs": [...]}`. `b_questions`:
    the field B's questions are read from (`question_en`: English questions over the Korean memory).
    `beside_path`: a conversation stored in both variants' memories beside the one asked
    (`gieok.bench.locomo.beside`)."""
    t0 = time.perf_counter()
    ks = tuple(sorted(set(ks)))
    sa, sb = Score(ks), Score(ks)
    skipped_a = skipped_b = 0
    pairs = pair_files(a, b)
    keep = stores is not None
    with workdir_for(stores, "gieok-locomo-cmp-") as workdir, databases(backend, pg_url, echo) as database:
        other = load_conversation(beside_path) if beside_path is not None else None
        for pa, pb in pairs:
            ca, cb = load_conversation(pa), load_conversation(pb, question_key=b_questions)
            if other is not None:
                ca, cb = beside(ca, other), beside(cb, other)
            skipped_a += ca.skipped
            skipped_b += cb.skipped
            t1 = time.perf_counter()
            if _same_turns(ca, cb):
                reused = await run_conversation(ca, sa, recipe=recipe, workdir=workdir, also=[(cb, sb)], reuse=keep,
                                                database=database)
                how = "one memory, both question sets" + (", reused" if reused else "")
            else:
                cb.name = f"{cb.name}-b"  # its own store file
                reused_a = await run_conversation(ca, sa, recipe=recipe, workdir=workdir, reuse=keep,
                                                  database=database)
                reused_b = await run_conversation(cb, sb, recipe=recipe, workdir=workdir, reuse=keep,
                                                  database=database)
                how = "two memories" + (", reused" if reused_a and reused_b else "")
            if echo:
                echo(f"{pa.name} vs {pb}: {len(ca.questions)} / {len(cb.questions)} questions, {how} "
                     f"({time.perf_counter() - t1:.0f} s)")
    wall = time.perf_counter() - t0
    ra = score_dict(sa, questions_skipped=skipped_a, wall_s=wall, recipe=recipe)
    rb = score_dict(sb, questions_skipped=skipped_b, wall_s=wall, recipe=recipe)
    b_path = str(b) if b_questions == "question" else f"{b} ({b_questions})"
    return {"a": ra, "b": rb, "ratio": ratios(ra, rb), "a_path": str(a), "b_path": b_path,
            "beside": str(beside_path) if beside_path is not None else None,
            "pairs": [[str(x), str(y)] for x, y in pairs]}


def _ratio(x: float, y: float) -> float | None:
    return round(y / x, 3) if x else None


def ratios(ra: dict[str, Any], rb: dict[str, Any]) -> dict[str, Any]:
    """B/A for every recall/hit figure, overall, without category 5 and per category."""
    def block(x: dict[str, Any], y: dict[str, Any]) -> dict[str, Any]:
        return {k: _ratio(v, y[k]) for k, v in x.items()
                if (k.startswith("recall@") or k.startswith("hit@")) and k in y}
    out = block(ra, rb)
    out["without_category_5"] = block(ra["without_category_5"], rb["without_category_5"])
    out["per_category"] = {c: block(v, rb["per_category"][c]) for c, v in ra["per_category"].items()
                           if c in rb["per_category"]}
    return out


def format_compare(res: dict[str, Any], ks: Iterable[int]) -> list[str]:
    ks = sorted(set(ks))
    lines = [f"A = {res['a_path']}"] + ["  " + s for s in format_report(res["a"], ks)]
    lines += [f"B = {res['b_path']}"] + ["  " + s for s in format_report(res["b"], ks)]
    if res.get("beside"):
        lines.insert(0, f"every memory also holds {res['beside']} (its questions not asked)")
    r = res["ratio"]

    def fmt(v: float | None) -> str:
        return "n/a" if v is None else f"{v:.3f}"
    lines.append("B/A:")
    for label, blk in (("all", r), ("no cat 5", r["without_category_5"])):
        lines.append(f"  {label:>8}: " + "  ".join(f"recall@{k} {fmt(blk.get(f'recall@{k}'))}" for k in ks)
                     + "  |  " + "  ".join(f"hit@{k} {fmt(blk.get(f'hit@{k}'))}" for k in ks))
    k10 = 10 if 10 in ks else max(ks)
    lines.append(f"  recall@{k10} per category: " + "  ".join(
        f"{c}: {fmt(v.get(f'recall@{k10}'))}" for c, v in r["per_category"].items()))
    return lines

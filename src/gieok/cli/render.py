"""How commands print for people: one rich console on stdout (colour only where the terminal supports it,
plain text in pipes and files), memories as two-line entries, key/value and row tables. `--json` output does
not come through here: machines get `gieok.cli.app.print_json`."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from gieok.core.models import Hit, Memory

# soft_wrap: a long memory stays one line in a pipe instead of being cut at 80 columns; highlight off so
# numbers and ids inside memories are not coloured as if they were code.
console = Console(soft_wrap=True, highlight=False)
err_console = Console(stderr=True, soft_wrap=True, highlight=False)


def when(dt: datetime | None) -> str:
    """A stored time (UTC) as the person reading it keeps time: in the machine's local zone (TZ), which is UTC
    where none is set, as on a server. `--json` keeps UTC."""
    return dt.astimezone().strftime("%Y-%m-%d %H:%M") if dt else "-"


def one_line(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def flags(m: Memory) -> str:
    out = []
    if m.is_pinned:
        out.append("pinned")
    if not m.is_active:
        out.append("archived")
    if m.deleted_at is not None:
        out.append("forgotten")
    return " ".join(f"[{f}]" for f in out)


def print_memory_line(m: Memory, score: float | None = None) -> None:
    """`score  when  role  id  [flags]` on one line, the content (shortened) indented below it."""
    who = " · ".join(x for x in (m.agent_platform, m.agent_model) if x)
    head = (f"[bold cyan]{score:.3f}[/]  " if score is not None else "") + \
        f"[green]{when(m.created_at)}[/]  {m.role:<9} [dim]{m.id}[/]"
    if who:
        head += f"  [magenta]{escape(who)}[/]"
    if flags(m):
        head += f"  [yellow]{escape(flags(m))}[/]"
    console.print(head)
    console.print("       " + escape(one_line(m.content)))


def print_hits(hits: Sequence[Hit], *, show_score: bool = True) -> None:
    for h in hits:
        print_memory_line(h.memory, h.score if show_score else None)
        if h.repeats:
            console.print(f"       [dim]said {len(h.repeats) + 1} times, first {when(h.said_between()[0])}[/]")
        if h.stale:
            console.print(f"       [yellow]possibly stale:[/] {escape(h.stale)}")
        if h.fixed_by:
            fix = " ".join(str(h.fixed_by["content"]).split())[:200]
            console.print(f"       [green]answered then:[/] {escape(fix)}")


def print_notes(notes: Iterable[str]) -> None:
    for note in notes:
        console.print(f"[yellow]note:[/] {escape(note)}")


def header(text: str) -> None:
    console.print(f"[bold]{escape(text)}[/]")


def kv_table(rows: Iterable[tuple[str, Any]], title: str | None = None) -> Table:
    t = Table(title=title, show_header=False, box=None, title_justify="left", title_style="bold", pad_edge=False)
    t.add_column(style="bold", justify="right")
    t.add_column(overflow="fold")
    for k, v in rows:
        t.add_row(escape(k), escape("-" if v is None or v == "" else str(v)))
    return t


def rows_table(columns: Sequence[str], rows: Iterable[Sequence[Any]], title: str | None = None) -> Table:
    t = Table(title=title, title_justify="left", title_style="bold", box=None, pad_edge=False,
              header_style="bold dim")
    for c in columns:
        t.add_column(c, overflow="fold")
    for r in rows:
        t.add_row(*(escape("-" if v is None or v == "" else str(v)) for v in r))
    return t

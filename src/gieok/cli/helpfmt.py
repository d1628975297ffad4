"""Help text for people. Typer's rich help keeps the line breaks of a docstring (so `--help` broke sentences
where the source wrapped them) and labels every flag `<bool>` although a flag takes no value. The root group
tidies the whole command tree once, before it parses anything: paragraphs become one line each (the terminal
wraps them) and flags show no type."""

from __future__ import annotations

import inspect
from typing import Any

from typer.core import TyperGroup, TyperOption


def reflow(text: str) -> str:
    """Each paragraph (blank-line separated) on one line; `\\b` paragraphs (click's "keep as is") stay."""
    paras = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(p if p.startswith("\b") else " ".join(p.split()) for p in paras)


def tidy(cmd: Any) -> None:
    """Reflow `cmd`'s help and drop the type label of its flags, then do the same below it."""
    if cmd.help:
        cmd.help = reflow(cmd.help)
    for p in cmd.params:
        if isinstance(p, TyperOption) and p.metavar is None and (p.is_flag or p.count):
            p.metavar = ""
    # --help is made lazily, per command: label it when it is made.
    made = cmd.get_help_option

    def help_option(ctx: Any) -> Any:
        opt = made(ctx)
        if opt is not None and opt.metavar is None:
            opt.metavar = ""
        return opt
    cmd.get_help_option = help_option
    for sub in getattr(cmd, "commands", {}).values():
        tidy(sub)


class TidyGroup(TyperGroup):
    """The root `gieok` group: tidies its tree's help (see the module docstring), then runs as usual."""

    _tidied = False

    def main(self, *args: Any, **kwargs: Any) -> Any:
        if not self._tidied:
            tidy(self)
            self._tidied = True
        return super().main(*args, **kwargs)

"""Help and errors for people. Typer's rich help keeps the line breaks of a docstring (so `--help` broke
sentences where the source wrapped them) and labels every flag `<bool>` although a flag takes no value. The root
group tidies the whole command tree once, before it parses anything: paragraphs become one line each (the
terminal wraps them) and flags show no type. Typer (0.29) converts option values with pydantic, whose wording
then reached the person typing ("Input should be a valid integer, unable to parse string as an integer" for
`--limit zero`): each command's parsing says instead what was wrong with the value and what to give."""

from __future__ import annotations

import inspect
from typing import Any

from pydantic import ValidationError
from typer import BadParameter
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
    cmd.parse_args = _plain_errors(cmd.parse_args)
    for sub in getattr(cmd, "commands", {}).values():
        tidy(sub)


# What a value failed, by pydantic's error type, in words: {input} is what was typed, the rest the constraint.
_PLAIN = {
    "int_parsing": "{input!r} is not a whole number: give one such as 10",
    "float_parsing": "{input!r} is not a number: give one such as 0.5",
    "bool_parsing": "{input!r} is not true or false: give true or false",
    "greater_than_equal": "{input} is too small: give {ge} or more",
    "greater_than": "{input} is too small: give more than {gt}",
    "less_than_equal": "{input} is too large: give {le} or less",
    "less_than": "{input} is too large: give less than {lt}",
}


def plain_message(exc: ValidationError) -> str | None:
    """`exc`'s first error in words, or None for an error type without wording here (its own message stays)."""
    err = exc.errors()[0]
    say = _PLAIN.get(err["type"])
    return None if say is None else say.format(input=err.get("input"), **(err.get("ctx") or {}))


def _plain_errors(parse: Any) -> Any:
    def parse_args(ctx: Any, args: list[str]) -> list[str]:
        try:
            return parse(ctx, args)  # type: ignore[no-any-return]
        except BadParameter as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError) and (said := plain_message(cause)):
                raise BadParameter(said, ctx=exc.ctx, param=exc.param, param_hint=exc.param_hint) from cause
            raise
    return parse_args


class TidyGroup(TyperGroup):
    """The root `gieok` group: tidies its tree's help (see the module docstring), then runs as usual."""

    _tidied = False

    def main(self, *args: Any, **kwargs: Any) -> Any:
        if not self._tidied:
            tidy(self)
            self._tidied = True
        return super().main(*args, **kwargs)

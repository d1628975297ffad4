"""Tool arguments the MCP SDK's schema validation refused, said the way gieok says every bad input: the field, what
is wrong with it, how to fix it. The SDK's own text is pydantic's dump ("1 validation error for
manage_knowledgeArguments … [type=literal_error, input_value=…] For further information visit …")."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

# Where a bound's context key says which way it goes.
_BOUNDS = {"greater_than_equal": ("ge", "at least"), "greater_than": ("gt", "more than"),
           "less_than_equal": ("le", "at most"), "less_than": ("lt", "less than")}
# What a type error wants, by the start of pydantic's error type.
_KINDS = {"int": "a whole number", "float": "a number", "bool": "true or false", "string": "text",
          "list": "a list", "dict": "an object", "datetime": "a date and time (ISO 8601)"}
# At most this many fields named in one message: a call with everything wrong needs the first few.
_MAX_FIELDS = 5


def argument_errors(tool: str, exc: ValidationError) -> str:
    """One line naming each refused argument of `tool` and what it must be."""
    said = [f"{_field(e)}: {_what(e)}" for e in exc.errors(include_url=False)[:_MAX_FIELDS]]
    return f"{tool}: " + "; ".join(said)


def _field(e: Any) -> str:
    return ".".join(str(p) for p in e.get("loc", ())) or "arguments"


def _what(e: Any) -> str:
    kind, ctx, got = str(e.get("type", "")), e.get("ctx") or {}, e.get("input")
    if kind == "missing":
        return "missing (it is required)"
    if kind == "extra_forbidden":
        return "is not an argument of this tool; leave it out"
    if kind == "literal_error":
        return f"{got!r} is not one of {ctx.get('expected', 'the allowed values')}; use one of them"
    if kind in _BOUNDS:
        key, words = _BOUNDS[kind]
        return f"{got!r} is out of range; it must be {words} {ctx.get(key)}"
    for prefix, wanted in _KINDS.items():
        if kind.startswith(prefix + "_"):
            return f"{got!r} is not {wanted}; give {wanted}"
    # Anything else: pydantic's one-line reason, without the dump around it.
    return str(e.get("msg", "is not valid"))

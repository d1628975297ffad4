"""Redaction of meta, a JSON-like value: every string in it as `gieok.core.redact.redact` does, and the whole
value of a secret-like key."""

from __future__ import annotations

from gieok.core.redact import placeholder, redact
from gieok.core.secret_words import is_placeholder, is_secret_name

__all__ = ["redact_json"]


def redact_json(value: object) -> tuple[object, list[str]]:
    """Redact every string inside a JSON-like value (meta): strings as `redact` does, and the whole value of a
    key whose name is secret-like (`{"api_key": "abc"}`: a bare value carries no marker of its own). Returns
    the new value and the kinds found."""
    kinds: list[str] = []

    def walk(v: object) -> object:
        if isinstance(v, str):
            out, found = redact(v)
            kinds.extend(r.kind for r in found)
            return out
        if isinstance(v, dict):
            res: dict[object, object] = {}
            for k, item in v.items():
                if isinstance(k, str) and is_secret_name(k) and isinstance(item, str | int | float) \
                        and not isinstance(item, bool) and not is_placeholder(str(item)):
                    res[k] = placeholder("env_secret")
                    kinds.append("env_secret")
                else:
                    res[k] = walk(item)
            return res
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v

    return walk(value), kinds

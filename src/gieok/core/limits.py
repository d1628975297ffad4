"""The limits every input is held to, and the checks that name the field when one is broken.

Content has its own byte limit (GIEOK_MAX_CONTENT_BYTES); everything else a caller can send is bounded here,
so a careless or hostile client gets a clear 400 / tool error instead of a 500, a stall or a row that one
backend stores and the other refuses:
- text must be valid Unicode: a lone surrogate (JSON allows `"\\ud800"`) cannot be encoded as UTF-8;
- NUL is removed from the captured texts (content, title: transcripts carry it verbatim, and PostgreSQL
  cannot store it) and refused everywhere else, the same way on both backends;
- lengths, counts and JSON depth are capped well above what real clients send.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from gieok.core.errors import InvalidInput

MAX_TITLE_CHARS = 500
MAX_LABEL_CHARS = 200          # platform, model, subagent role/model, project, session and user ids
MAX_TAGS = 50
MAX_TAG_CHARS = 100
MAX_QUERY_CHARS = 4000         # the embedder reads ~512 tokens; SQLite refuses LIKE patterns over 50,000 bytes
MAX_META_BYTES = 16 * 1024
MAX_META_DEPTH = 8
MAX_ID_CHARS = 200


def _has_surrogate(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def check_str(field: str, value: Any, *, max_chars: int, strip_nul: bool = False,
              allow_controls: bool = True) -> str:
    """`value` as a string within `max_chars`, valid Unicode, and NUL-free (removed with `strip_nul`, else
    refused). Control characters other than tab/newline are refused unless `allow_controls`."""
    if not isinstance(value, str):
        raise InvalidInput(field, f"must be a string, not {type(value).__name__}")
    if _has_surrogate(value):
        raise InvalidInput(field, "is not valid Unicode (it holds a lone surrogate such as \\ud800): "
                                  "send UTF-8 text")
    if "\x00" in value:
        if not strip_nul:
            raise InvalidInput(field, "contains a NUL character (\\u0000): remove it")
        value = value.replace("\x00", "")
    if not allow_controls and any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise InvalidInput(field, "must not contain control characters (newlines, tabs …)")
    if len(value) > max_chars:
        raise InvalidInput(field, f"is {len(value)} characters, over the {max_chars}-character limit")
    return value


def check_label(field: str, value: Any, max_chars: int = MAX_LABEL_CHARS) -> str:
    """An identity label or id: one line, no control characters."""
    return check_str(field, value, max_chars=max_chars, allow_controls=False)


def check_tags(field: str, value: Any) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list | tuple):
        raise InvalidInput(field, f"must be a list of strings, not {type(value).__name__}")
    if len(value) > MAX_TAGS:
        raise InvalidInput(field, f"has {len(value)} tags, over the limit of {MAX_TAGS}")
    return [check_label(f"{field}[{i}]", t, MAX_TAG_CHARS) for i, t in enumerate(value)]


def _walk(field: str, value: Any, depth: int) -> None:
    if depth > MAX_META_DEPTH:
        raise InvalidInput(field, f"is nested deeper than {MAX_META_DEPTH} levels")
    if isinstance(value, str):
        check_str(field, value, max_chars=MAX_META_BYTES)
    elif isinstance(value, Mapping):
        for k, v in value.items():
            if not isinstance(k, str):
                raise InvalidInput(field, "keys must be strings")
            check_str(field, k, max_chars=200)   # a bad key is named by its object: it cannot be quoted
            _walk(f"{field}.{k[:40]}", v, depth + 1)
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            _walk(f"{field}[{i}]", v, depth + 1)
    elif isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise InvalidInput(field, "must not hold NaN or infinity (not JSON)")
    elif not (value is None or isinstance(value, bool | int)):
        raise InvalidInput(field, f"holds a {type(value).__name__}, which is not JSON")


def check_meta(field: str, value: Any) -> dict[str, Any]:
    """A JSON object of at most MAX_META_BYTES, MAX_META_DEPTH deep, strings valid and NUL-free."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidInput(field, f"must be a JSON object, not {type(value).__name__}")
    _walk(field, value, 1)
    size = len(json.dumps(value, ensure_ascii=False).encode("utf-8"))
    if size > MAX_META_BYTES:
        raise InvalidInput(field, f"is {size} bytes as JSON, over the {MAX_META_BYTES}-byte limit")
    return dict(value)


def check_query(value: str | None, field: str = "query") -> str:
    """A search query: NULs dropped (queries are never stored), valid Unicode, at most MAX_QUERY_CHARS."""
    if value is None:
        return ""
    q = check_str(field, value, max_chars=10 * MAX_QUERY_CHARS, strip_nul=True).strip()
    if len(q) > MAX_QUERY_CHARS:
        raise InvalidInput(field, f"is {len(q)} characters, over the {MAX_QUERY_CHARS}-character limit: "
                                  "search for the few words that matter")
    return q

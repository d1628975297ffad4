"""`loads` / `dumps` for the hook's path to a running server, on `_json` (the C accelerator `json` itself uses)
without importing `json`.

Why: `import json` imports `re` and compiles five regular expressions, measured at ~0.7 of a bare interpreter
start on this kind of machine (CPU time, `gieok bench hook`), and the hook's budget with a server is twice that
start. The C scanner and encoder are what `json.loads` / `json.dumps` run anyway; this module only supplies the
context they read (strict parsing, `NaN`/`Infinity` accepted as `json` accepts them, non-ASCII kept) and the
whitespace handling around a document. Errors are `ValueError`s as with `json`.
"""

from __future__ import annotations

from _json import encode_basestring as _encode_str
from _json import make_encoder as _make_encoder
from _json import make_scanner as _make_scanner

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_WS = " \t\n\r"


def _constant(name: str) -> float:
    return {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}[name]


class _Context:
    """The attributes the C scanner reads from its decoder (as `json.JSONDecoder()` sets them)."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = staticmethod(_constant)


def _not_serializable(o: object) -> Any:
    raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")


_scan = _make_scanner(_Context())  # type: ignore[arg-type]  # reads the attributes, as of JSONDecoder
_encode = _make_encoder({}, _not_serializable, _encode_str, None, ": ", ", ", False, False, True)


def loads(s: str | bytes) -> Any:
    """`json.loads(s)` for a UTF-8 document."""
    if isinstance(s, (bytes, bytearray)):
        try:
            s = s.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"not UTF-8: {exc}") from None
    if s.startswith("\ufeff"):
        raise ValueError("Unexpected UTF-8 BOM (decode using utf-8-sig)")
    n = len(s)
    i = 0
    while i < n and s[i] in _WS:
        i += 1
    try:
        obj, end = _scan(s, i)
    except StopIteration:
        raise ValueError(f"Expecting value at character {i}") from None
    while end < n and s[end] in _WS:
        end += 1
    if end != n:
        raise ValueError(f"Extra data at character {end}")
    return obj


def dumps(obj: Any) -> str:
    """`json.dumps(obj, ensure_ascii=False)`."""
    return "".join(_encode(obj, 0))

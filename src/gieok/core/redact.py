"""Secret redaction on the hot path: every captured message passes here before it is stored, embedded or sent.

`redact(text)` returns the redacted text and the `Redaction`s it made, as spans of the *original* text. Each
secret becomes `[REDACTED:<kind>]`. Overlapping findings are merged into one span (a partial redaction would
leak the rest) and the strongest kind names it (`KINDS` is strongest first), so `sk-ant-…` is an anthropic_key
and `OPENAI_API_KEY=sk-…` an openai_key.

The detectors, one a kind, are catalogued in `gieok.core.secret_patterns`; the names and values they judge by
in `gieok.core.secret_words`; meta (a JSON value) goes through `gieok.core.redact_json`.

Cost: a detector's regex is only *matched* at the places where its literal marker occurs (found with
`str.find`), never searched across the text, so a message with no marker costs a few substring checks.
`redact` is idempotent: a placeholder is never itself a secret.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gieok.core.secret_patterns import GATE_CHARS, KEY_VALUES, KINDS, TOKENS
from gieok.core.secret_words import NAME_STEMS, is_secret_name

__all__ = ["Redaction", "placeholder", "redact"]


@dataclass(frozen=True, slots=True)
class Redaction:
    """One removed secret: its kind and its `[start, end)` span in the original text."""

    kind: str
    start: int
    end: int


def placeholder(kind: str) -> str:
    return f"[REDACTED:{kind}]"


_RANK = {kind: i for i, kind in enumerate(KINDS)}

_NAME_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789_.-"
_NAME_LEAD = "0123456789.-"  # may sit inside a name but not start one (`--password`, `.env.token`)
_SCHEME_LEAD = "0123456789+.-"  # likewise for a URL scheme
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _lower(text: str) -> str:
    # Hits in the lower-cased copy index the original, so its length must not change; a few letters (`İ`)
    # lower to two characters, and then only ASCII is folded.
    low = text.lower()
    return low if len(low) == len(text) else text.translate(_ASCII_LOWER)


def _run_start(hay: str, end: int, chars: str, lead: str, limit: int = 80) -> int:
    """Where the run of `chars` that ends at `end` starts, skipping any `lead` characters it begins with."""
    head = hay[max(0, end - limit):end]
    start = end - (len(head) - len(head.rstrip(chars)))
    run = hay[start:end]
    return start + len(run) - len(run.lstrip(lead))


# The rest of a name after its stem, then a separator (`=`, `:=`, `?=`, `:`, `=>`), maybe after a closing quote.
_NAME_REST_AND_SEP = re.compile(r"[a-z0-9_.\-]*(?=[\"']?[ \t]*[:=?])")


def _name_starts(text: str, lowered: str) -> list[int]:
    """Starts of secret-like names followed by a separator: the only places key-value patterns are tried."""
    seen: set[int] = set()  # name ends: several stems (`secret_key`) find the same name
    starts: list[int] = []
    for stem in NAME_STEMS:
        hit = lowered.find(stem)
        while hit != -1:
            rest = _NAME_REST_AND_SEP.match(lowered, hit)
            if rest is None:  # "the key point", "token count": prose or code, not an assignment
                hit = lowered.find(stem, hit + len(stem))
                continue
            end = rest.end()
            if end not in seen:
                seen.add(end)
                start = _run_start(lowered, hit, _NAME_CHARS, _NAME_LEAD)
                if is_secret_name(text[start:end]):
                    starts.append(start)
            hit = lowered.find(stem, end)
    return sorted(starts)


def _find(text: str) -> list[tuple[int, int, str]]:
    found: list[tuple[int, int, str]] = []
    lowered: str | None = None
    present = {c for c in GATE_CHARS if c in text}

    for tok in TOKENS:
        if tok.gate and present.isdisjoint(tok.gate):
            continue
        if tok.lower:
            if lowered is None:
                lowered = _lower(text)
            hay = lowered
        else:
            hay = text
        for marker in tok.markers:
            hit = hay.find(marker)
            covered = 0  # a marker inside this detector's previous match is part of it
            while hit != -1:
                start = _run_start(hay, hit, tok.back, _SCHEME_LEAD) if tok.back else hit
                if start >= covered and (m := tok.pattern.match(text, start)) is not None:
                    covered = m.end()
                    if (span := tok.span(m)) is not None and span[0] < span[1]:
                        found.append((span[0], span[1], tok.kind))
                hit = hay.find(marker, hit + 1)

    if ":" not in present and "=" not in present:
        return found
    if lowered is None:
        lowered = _lower(text)
    starts = _name_starts(text, lowered)
    for kv in KEY_VALUES:
        if not starts or present.isdisjoint(kv.gate):
            continue
        tried: set[int] = set()
        for name_start in starts:
            if kv.line:
                anchor = text.rfind("\n", 0, name_start) + 1
                if text[anchor:name_start].strip(" \t-"):
                    continue  # not the first word of its line
            elif kv.before:
                anchor = name_start - 1
                if anchor < 0 or text[anchor] not in kv.before:
                    continue
            else:
                anchor = name_start
            if anchor in tried:
                continue
            tried.add(anchor)
            m = kv.pattern.match(text, anchor)
            if m is not None and (span := kv.span(m)) is not None and span[0] < span[1]:
                found.append((span[0], span[1], kv.kind))
    return found


def _merge(found: list[tuple[int, int, str]]) -> list[Redaction]:
    # Overlaps become their union (a partial redaction would leak the rest of the secret), named by the
    # strongest kind: `API_KEY=sk-…` is one openai_key span, not an env_secret.
    found.sort()
    merged: list[Redaction] = []
    for start, end, kind in found:
        if merged and start < merged[-1].end:
            last = merged[-1]
            best = kind if _RANK[kind] < _RANK[last.kind] else last.kind
            merged[-1] = Redaction(best, last.start, max(last.end, end))
        else:
            merged.append(Redaction(kind, start, end))
    return merged


def redact(text: str) -> tuple[str, list[Redaction]]:
    """Replace every secret in `text` with `[REDACTED:<kind>]`; return the new text and the original spans."""
    found = _find(text)
    if not found:
        return text, []
    spans = _merge(found)
    parts: list[str] = []
    pos = 0
    for r in spans:
        parts.append(text[pos:r.start])
        parts.append(placeholder(r.kind))
        pos = r.end
    parts.append(text[pos:])
    return "".join(parts), spans


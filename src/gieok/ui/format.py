"""Jinja filters: times people read at a glance, labels, and query matches highlighted in a memory's text
(Korean words match with their particles attached: "회의" marks "회의를"; a Korean query's English translations
mark the English rows that hold them)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from jinja2 import Environment
from markupsafe import Markup, escape

from gieok.core.dates import utcnow
from gieok.retrieval.shared_words import reason_words

_WORD = re.compile(r"[\w\-.]+", re.UNICODE)
# Korean particles a query word may carry that its occurrences in text do not (and the other way round).
_KO_PARTICLES = ("에서", "으로", "에게", "은", "는", "이", "가", "을", "를", "에", "의", "도", "로", "와", "과")


def when(dt: datetime | None) -> str:
    return dt.strftime("%Y-%m-%d %H:%M") if dt else "—"


def ago(dt: datetime | None, now: datetime | None = None) -> str:
    if dt is None:
        return "never"
    s = ((now or utcnow()) - dt).total_seconds()
    if s < 0:
        return "in " + ago(now or utcnow(), dt).removesuffix(" ago")
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if s >= size:
            return f"{int(s // size)} {unit} ago"
    return "just now"


def query_words(query: str) -> list[str]:
    out: set[str] = set()
    for w in _WORD.findall(query.lower()):
        if len(w) < 2:
            continue
        out.add(w)
        for p in _KO_PARTICLES:
            if w.endswith(p) and len(w) - len(p) >= 2:
                out.add(w[: -len(p)])
    return sorted(out, key=len, reverse=True)


def _piece(word: str, *, whole: bool = False) -> str:
    """A word's pattern: a Latin word from the start of a word only ("cat" marks cats, not education), and with
    `whole` to its end too."""
    if not (word[:1].isascii() and word[:1].isalnum()):
        return re.escape(word)
    return r"(?<![a-z0-9])" + re.escape(word) + (r"(?![a-z0-9])" if whole else "")


def highlight(text: str, query: str | None, limit: int | None = None, also: Sequence[str] = ()) -> Markup:
    """`text` escaped, with each occurrence of a query word, and of the words `also` names (a result's
    translations of them, gieok.retrieval.shared_words.reason_words), in <mark>; cut to `limit` characters
    around the first match when given."""
    # The result's words are as its text writes them: whole words; the query's may begin longer ones (deploy,
    # deploying).
    own = set(query_words(query or ""))
    named = {w.lower() for w in also if len(w) >= 2} - own
    words = sorted(own | named, key=len, reverse=True)
    pattern = re.compile("|".join(_piece(w, whole=w in named) for w in words), re.IGNORECASE) if words else None
    if limit is not None and len(text) > limit:
        start = 0
        if pattern is not None:
            m = pattern.search(text)
            if m and m.start() > limit // 3:
                start = m.start() - limit // 3
        text = ("…" if start else "") + text[start:start + limit] + ("…" if start + limit < len(text) else "")
    if pattern is None:
        return escape(text)
    out, last = [], 0
    for m in pattern.finditer(text):
        out.append(escape(text[last:m.start()]))
        out.append(Markup("<mark>%s</mark>") % text[m.start():m.end()])
        last = m.end()
    out.append(escape(text[last:]))
    return Markup("").join(out)


def qs(params: dict[str, Any], **changes: Any) -> str:
    """The query string of `params` with `changes` applied (None removes a key); empty values dropped."""
    merged = {**params, **changes}
    return urlencode({k: v for k, v in merged.items() if v not in (None, "", False)})


_HANGUL = re.compile(r"[\uac00-\ud7a3]")


def hangul(text: str) -> bool:
    """Mostly Korean? Marks the text lang="ko" so Korean fonts and line breaking apply."""
    return len(_HANGUL.findall(text[:400])) >= 4


def pct(x: float) -> str:
    return f"{max(0.0, min(1.0, x)) * 100:.0f}%"


def install(env: Environment) -> None:
    env.filters.update(when=when, ago=ago, highlight=highlight, pct=pct, hangul=hangul, reason_words=reason_words)
    env.globals.update(qs=qs)

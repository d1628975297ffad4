"""What a consolidated summary is made of, offline: its words, its most central sentences, its title and the
project it belongs to.

Consolidation (`gieok.librarian.consolidate`) writes summaries with these; forgetting
(`gieok.memory.forgetting`) rebuilds them when one of their sources is erased, so they live below both.
"""

from __future__ import annotations

import math
import re
from collections import Counter

from gieok.core.models import Memory
from gieok.core.tags import normalize_tag
from gieok.core.text import STOPWORDS, index_tokens

__all__ = ["MAX_SENTENCE_CHARS", "extractive_summary", "project_key", "summary_title", "summary_words", "top_tags"]

MAX_SENTENCE_CHARS = 300
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+|\n+")
_STOP = frozenset(STOPWORDS) | frozenset(index_tokens(" ".join(STOPWORDS)))


def project_key(m: Memory) -> str:
    """The project a row belongs to: its p_tag, else its project hint, else '' (no project)."""
    if m.p_tags:
        return m.p_tags[0]
    hint = re.split(r"[/\\]", m.project.strip().rstrip("/\\"))[-1] if m.project.strip() else ""
    return normalize_tag(hint)


def summary_words(m: Memory) -> list[str]:
    """A row's content words (no stopwords, no single characters) plus its d_tags as `#tag`."""
    toks = [t for t in index_tokens(m.content) if t not in _STOP and len(t) > 1]
    return toks + [f"#{t}" for t in m.d_tags]


def _sentences(m: Memory) -> list[str]:
    out = []
    for s in _SENTENCE.split(m.content):
        s = " ".join(s.split())
        if len(s) > MAX_SENTENCE_CHARS:
            s = s[:MAX_SENTENCE_CHARS].rstrip() + "…"
        if s:
            out.append(s)
    return out


def extractive_summary(rows: list[Memory], max_statements: int) -> list[str]:
    """The most central sentences of `rows`, as "speaker: sentence", in the order they were said."""
    row_words = [set(summary_words(m)) for m in rows]
    df = Counter(t for ws in row_words for t in ws)
    scored: list[tuple[float, int, int, str, set[str]]] = []
    for ri, m in enumerate(rows):
        for si, sentence in enumerate(_sentences(m)):
            toks = {t for t in index_tokens(sentence) if t not in _STOP and len(t) > 1}
            if len(toks) < 2:
                continue
            # Shared words count by how many other rows share them; a sentence only its own row uses scores 0.
            score = sum(df[t] - 1 for t in toks) / math.sqrt(len(toks))
            scored.append((score, ri, si, f"{m.role}: {sentence}", toks))
    scored.sort(key=lambda t: (-t[0], t[1], t[2]))
    chosen: list[tuple[int, int, str]] = []
    kept: list[set[str]] = []
    for _score, ri, si, text, toks in scored:
        if any(len(toks & k) / len(toks | k) > 0.6 for k in kept):
            continue  # the same thing said twice is said once
        chosen.append((ri, si, text))
        kept.append(toks)
        if len(chosen) == max_statements:
            break
    return [text for _, _, text in sorted(chosen)]


def top_tags(rows: list[Memory], k: int) -> list[str]:
    return [t for t, _ in Counter(t for m in rows for t in m.d_tags).most_common(k)]


def summary_title(rows: list[Memory], project: str) -> str:
    top = top_tags(rows, 3)
    head = ", ".join(top) if top else " ".join(rows[0].content.split()[:8])
    return (f"{project}: {head}" if project else head)[:120]

"""The short forms developers type and the long ones their agents write, as one word for keyword search.

A person asks "what should my PR include?" or "PR 올릴 때 뭐 붙여야 해?"; the agent's memory says "small pull
requests with a screenshot for every UI change". Neither the full text (no shared word) nor the small
embedding model (cosine 0.81, under unrelated notes) joined them: the row was not in the top three, and the
Korean question found nothing at all. A query term that is one of these short forms also searches for its long
form, and a long form in the query also for its short one, as the query's own words (they mean the same).

Only short forms whose expansion is what developers mean in nearly every use are listed, and only where the
long form's stem is not another common word's: "dev" (developer / development) and "ts" (TypeScript /
timestamp) are ambiguous; "prod", "perf" and "deps" stem to product, perform and depend, "authorization" to
author, and "end-to-end" loses its "to" and keeps only "end". Korean spellings of these (풀 리퀘스트, 디비) are
the dev glossary's (gieok.retrieval.dev_glossary).
"""

from __future__ import annotations

from functools import cache

from gieok.core.text import query_terms

SHORT_FORMS: dict[str, tuple[str, ...]] = {
    "pr": ("pull request",), "prs": ("pull requests",),
    "mr": ("merge request",), "mrs": ("merge requests",),
    "db": ("database",), "dbs": ("databases",),
    "ci": ("continuous integration",),
    "k8s": ("kubernetes",),
    "repo": ("repository",), "repos": ("repositories",),
    "env": ("environment",), "envs": ("environments",),
    "config": ("configuration",), "configs": ("configurations",),
    "auth": ("authentication",),
    "docs": ("documentation",),
    "infra": ("infrastructure",),
    "impl": ("implementation",),
    "ui": ("user interface",),
    "tz": ("timezone", "time zone"),
    "js": ("javascript",),
    "lb": ("load balancer",),
}


def _phrase(text: str) -> tuple[str, ...]:
    """A text's full-text tokens in order, as the query's own words are made ("pull requests" → pull, request)."""
    return tuple(t for term in query_terms(text) for t in term)


@cache
def _tables() -> tuple[dict[tuple[str, ...], tuple[tuple[str, ...], ...]], dict[tuple[str, ...], tuple[str, ...]]]:
    """(short form's tokens → its long forms' tokens, long form's tokens → its short form's tokens)."""
    longs: dict[tuple[str, ...], tuple[tuple[str, ...], ...]] = {}
    shorts: dict[tuple[str, ...], tuple[str, ...]] = {}
    for short, expansions in SHORT_FORMS.items():
        s = _phrase(short)
        longs[s] = tuple(_phrase(e) for e in expansions)
        for e in expansions:
            shorts.setdefault(_phrase(e), s)
    return longs, shorts


def expanded_terms(terms: list[list[str]]) -> list[list[str]]:
    """The terms a query's short and long forms add to `terms` (`query_terms`' phrases), none of them already
    there: "PR" adds the phrase "pull request", "pull requests" (two one-word terms) adds "pr"."""
    longs, shorts = _tables()
    have = {tuple(t) for t in terms}
    out: list[list[str]] = []

    def add(phrase: tuple[str, ...]) -> None:
        if phrase not in have:
            have.add(phrase)
            out.append(list(phrase))

    for t in terms:
        for long in longs.get(tuple(t), ()):
            add(long)
    words = [t[0] for t in terms if len(t) == 1]
    for long, short in shorts.items():
        n = len(long)
        if any(tuple(words[i:i + n]) == long for i in range(len(words) - n + 1)):
            add(short)
    return out

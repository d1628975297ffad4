"""SearchFilters → a SQL WHERE fragment. Shared by the SQL backends; `ph` is the placeholder style
(`?` for SQLite, `%s` for psycopg) and `tags_sql` renders "this tag list column contains X"."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gieok.core.models import SearchFilters
from gieok.core.principal import Principal
from gieok.store.code_refs import anchor_conditions


def visible_terms(viewer: Principal, ph: str, alias: str = "m") -> list[tuple[str, list[Any]]]:
    """Rows `viewer` may see (ARCHITECTURE §13), as the terms of an OR: its own, `public` rows, and `team` rows
    of its teams."""
    a = alias + "."
    terms: list[tuple[str, list[Any]]] = [(f"{a}user_id = {ph}", [viewer.user_id]),
                                          (f"{a}privacy_scope = 'public'", [])]
    if viewer.teams:
        terms.append((f"({a}privacy_scope = 'team' AND {a}team IN ({', '.join([ph] * len(viewer.teams))}))",
                      list(viewer.teams)))
    return terms


def visible_clause(viewer: Principal, ph: str, alias: str = "m") -> tuple[str, list[Any]]:
    """`visible_terms` as one condition. The owner test comes first and reads `{alias}.user_id = {ph}`, which
    the backends' planner hints look for."""
    terms = visible_terms(viewer, ph, alias)
    return "(" + " OR ".join(t for t, _ in terms) + ")", [p for _, ps in terms for p in ps]


def exists_any_sql(where: str, terms: list[tuple[str, list[Any]]]) -> tuple[str, list[Any]]:
    """Whether a `memory m` row passes `where` and any of `terms`, one EXISTS per term: each is one lookup of an
    index the term and `where` fit, where the terms' OR in one WHERE read every row `where` alone selects (SQLite
    scanned all 50,000 archived rows of a 100,000-row store, 26 ms, for a viewer with none to see)."""
    sql = " OR ".join(f"EXISTS (SELECT 1 FROM memory m WHERE {where} AND {t})" for t, _ in terms)
    return f"SELECT {sql}", [p for _, ps in terms for p in ps]


def owner_clause(f: SearchFilters, ph: str, alias: str = "m") -> tuple[str, list[Any]]:
    """Whose rows are candidates: the viewer's visible rows, or (no viewer) `f.user_id`'s own."""
    if f.viewer is not None:
        return visible_clause(f.viewer, ph, alias)
    return f"{alias}.user_id = {ph}", [f.user_id]


def where_clause(f: SearchFilters, ph: str, tags_sql: Callable[[str, str], str],
                 ts: Callable[[Any], Any], alias: str = "m", *, deleted: bool | None = False) -> tuple[str, list[Any]]:
    """`deleted`: False (the default) keeps forgotten rows out, True keeps only them, None keeps both."""
    a = alias + "."
    owner, params = owner_clause(f, ph, alias)
    parts = [owner]
    if deleted is not None:
        parts.append(f"{a}deleted_at IS {'NOT ' if deleted else ''}NULL")
    for col, value in (("agent_platform", f.agent_platform), ("agent_model", f.agent_model),
                       ("subagent_role", f.subagent_role), ("session_id", f.session_id),
                       ("project", f.project)):
        if value:
            parts.append(f"{a}{col} = {ph}")
            params.append(value)
    if f.is_subagent is not None:
        parts.append(f"{a}is_subagent = {ph}")
        params.append(f.is_subagent)
    for col, values in (("role", f.roles), ("kind", f.kinds)):
        if values:
            parts.append(f"{a}{col} IN ({', '.join([ph] * len(values))})")
            params.extend(values)
    if f.p_tag:
        # Before the librarian has tagged a row, its project hint stands in for the p_tag (seed 1-A).
        parts.append(f"({tags_sql(a + 'p_tags', ph)} OR {a}project = {ph})")
        params.extend([f.p_tag, f.p_tag])
    for tag in f.tags:
        parts.append(f"({tags_sql(a + 'd_tags', ph)} OR {tags_sql(a + 'p_tags', ph)})")
        params.extend([tag, tag])
    if f.since is not None:
        parts.append(f"{a}created_at >= {ph}")
        params.append(ts(f.since))
    if f.until is not None:
        parts.append(f"{a}created_at < {ph}")
        params.append(ts(f.until))
    if not f.include_archived:
        parts.append(f"{a}is_active = {ph}")
        params.append(True)
    if f.pinned_only:
        parts.append(f"{a}is_pinned = {ph}")
        params.append(True)
    if f.file or f.repo or f.stale:
        more, more_params = anchor_conditions(f, ph, alias)
        parts += more
        params += more_params
    return " AND ".join(parts), params

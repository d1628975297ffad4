"""Project tags: canonical tags with their aliases and usage; merge one into another (admins: it rewrites the
tag on everyone's memories)."""

from __future__ import annotations

from starlette.responses import Response

from gieok.librarian.maintenance import merge_tags
from gieok.ui.app import Refused, View


async def tags(view: View) -> Response:
    all_tags = await view.svc.store.list_project_tags()
    aliases: dict[str, list[str]] = {}
    for t in all_tags:
        if t.alias_of:
            aliases.setdefault(t.alias_of, []).append(t.name)
    canonical = [t for t in all_tags if not t.alias_of]
    return view.render("tags.html", canonical=canonical, aliases=aliases,
                       names=sorted(t.name for t in all_tags))


async def merge(view: View) -> Response:
    if not view.principal.is_admin:
        raise Refused(f"Merging tags rewrites everyone's memories, so it is for admins; your role is "
                      f"{view.principal.role}.")
    alias, canonical = view.form.get("alias", ""), view.form.get("canonical", "")
    res = await merge_tags(view.svc.store, alias, canonical)
    await view.audit("tags.merge", detail=f"{res['alias']} → {res['canonical']} ({res['rows_rewritten']} rows)")
    return view.redirect("/ui/tags", "merged")

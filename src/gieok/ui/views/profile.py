"""The user's profile: core and sub facts, each with the memories it came from; edit or remove a fact."""

from __future__ import annotations

from typing import Literal, cast

from starlette.responses import Response

from gieok.core.errors import InvalidInput
from gieok.ui.app import View

Section = Literal["core_profile", "sub_profile"]


def _section(value: str) -> Section:
    if value not in ("core_profile", "sub_profile"):
        raise InvalidInput("section", f"{value!r} is not core_profile or sub_profile")
    return cast(Section, value)


async def profile(view: View) -> Response:
    prof = await view.svc.profile(view.user_id)
    ids = sorted({s for f in (*prof.core_profile, *prof.sub_profile) for s in f.get("sources", [])})
    sources = {m.id: m for m in await view.svc.store.get_memories(ids, viewer=view.principal)}
    return view.render("profile.html", prof=prof, sources=sources,
                       sections=[("core_profile", "Core", "The few facts that always matter.", prof.core_profile),
                                 ("sub_profile", "More about you", "Other facts worth remembering.",
                                  prof.sub_profile)])


async def save_fact(view: View) -> Response:
    section = _section(view.form.get("section", ""))
    key = view.form.get("key", "").strip() or None
    content = view.form.get("value", "")
    action = "update" if view.form.get("original_key") else "add"
    if action == "update" and key != view.form.get("original_key"):
        await view.svc.profile_edit(view.user_id, section, "remove", None, key=view.form["original_key"])
        action = "add"
    await view.svc.profile_edit(view.user_id, section, action, content, key=key)
    await view.audit("profile.save", detail=f"{section} {key or 'note'}")
    return view.redirect("/ui/profile", "fact_saved")


async def remove_fact(view: View) -> Response:
    section = _section(view.form.get("section", ""))
    key, value = view.form.get("key", ""), view.form.get("value", "")
    prof = await view.svc.profile(view.user_id)
    facts = getattr(prof, section)
    # Remove exactly the fact shown (same key and value), not every fact whose text contains it.
    keep = [f for f in facts if not (f.get("key") == key and f.get("value") == value)]
    if len(keep) == len(facts):
        raise InvalidInput("fact", "that fact is no longer in your profile: reload the page")
    facts[:] = keep
    await view.svc.store.save_user(prof)
    await view.audit("profile.remove", detail=f"{section} {key}")
    return view.redirect("/ui/profile", "fact_removed")

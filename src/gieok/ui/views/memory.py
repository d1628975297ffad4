"""One memory: everything known about it, its neighbours, and the changes a person may make — edit, pin, share,
forget (soft), erase (hard), restore. Forget, erase and sharing go through a confirmation page; every change is
audited. Reading goes through the caller's scope inside the store's query: a memory of another user that is not
shared with the caller is "not found", exactly like one that does not exist; one shared with them is read-only."""

from __future__ import annotations

from starlette.responses import Response

from gieok.core.dates import utcnow
from gieok.core.errors import InvalidInput, NotFound
from gieok.core.models import FEEDBACK_EVENTS, KINDS, PRIVACY, Memory
from gieok.ui.app import Refused, View
from gieok.ui.forms import importance

CONFIRM = {
    "forget": ("Forget this memory?", "It disappears from search, context and the timeline at once; it stays in "
               "the database (see Forgotten on the timeline) and can be restored.", "Forget"),
    "erase": ("Erase this memory for good?", "It is deleted from every table and index, its links and feedback "
              "with it, and facts that came only from it leave your profile. This cannot be undone.", "Erase"),
    "scope": ("Change who may read this memory?", "Sharing decides who else may read it; it stays yours to change.",
              "Change scope"),
}


async def visible(view: View, memory_id: str, *, include_deleted: bool = False) -> Memory:
    m = await view.svc.store.get_memory(memory_id, include_deleted=include_deleted, viewer=view.principal)
    if m is None or (m.deleted_at is not None and m.user_id != view.user_id):
        raise NotFound(f"no memory {memory_id!r} here: it may have been erased, or it is not yours to see")
    return m


async def mine(view: View, memory_id: str, *, include_deleted: bool = False) -> Memory:
    """A memory the caller may change: visible and its own (sharing never hands over ownership)."""
    m = await visible(view, memory_id, include_deleted=include_deleted)
    if m.user_id != view.user_id:
        raise Refused(f"This memory belongs to {m.user_id} and is shared with you read-only; only its owner can "
                      "change it.")
    return m


def _path(m: Memory) -> str:
    return f"/ui/m/{m.id}"


async def detail(view: View) -> Response:
    m = await visible(view, view.request.path_params["id"], include_deleted=True)
    if m.user_id != view.user_id and view.svc.settings.audit_reads:
        await view.audit("memory.read", m, detail="read shared")
    links = await view.svc.store.list_links(m.id, viewer=view.principal)
    others = {x.id: x for x in await view.svc.store.get_memories(
        sorted({ln.dst if ln.src == m.id else ln.src for ln in links}), viewer=view.principal)}
    neighbours = []
    for ln in links:
        out = ln.src == m.id
        other = others.get(ln.dst if out else ln.src)
        if other is not None:
            neighbours.append({"relation": ln.relation, "outgoing": out, "memory": other})
    feedback = await view.svc.store.list_feedback(m.id) if m.user_id == view.user_id else []
    return view.render("memory.html", m=m, neighbours=neighbours, feedback=feedback[-20:], kinds=KINDS,
                       scopes=PRIVACY, events=FEEDBACK_EVENTS, now=utcnow(), own=m.user_id == view.user_id,
                       editing=view.request.query_params.get("edit") == "1")


def _scope_args(values: dict[str, str], teams: tuple[str, ...]) -> tuple[str, str]:
    scope, team = values.get("scope", ""), values.get("team", "")
    if scope not in PRIVACY:
        raise InvalidInput("scope", f"{scope!r} is not one of {', '.join(PRIVACY)}")
    if scope == "team" and not team:
        if not teams:
            raise InvalidInput("team", "you are in no team yet: an admin adds you with `gieok teams add`")
        team = teams[0]
    return scope, team if scope == "team" else ""


async def confirm(view: View) -> Response:
    action = view.request.path_params["action"]
    if action not in CONFIRM:
        raise NotFound(f"nothing to confirm called {action!r}")
    m = await mine(view, view.request.path_params["id"], include_deleted=action == "erase")
    scope, team = ("", "")
    if action == "scope":
        scope, team = _scope_args(dict(view.request.query_params), view.principal.teams)
    title, text, button = CONFIRM[action]
    return view.render("confirm.html", m=m, action=action, title=title, text=text, button=button, scope=scope,
                       team=team)


async def edit(view: View) -> Response:
    m = await mine(view, view.request.path_params["id"])
    f = view.form
    content = f.get("content", "").strip()
    if not content:
        raise InvalidInput("content", "a memory cannot be empty: write something, or forget it instead")
    tags = [t.strip() for t in f.get("tags", "").split(",") if t.strip()]
    kind = f.get("kind") or m.kind
    imp = importance(f.get("importance", str(m.importance)))
    new_content = content if content != m.content else None
    title = f.get("title", "").strip()
    new_title = title if title != m.title else None
    await view.svc.update(m.id, view.user_id, content=new_content, title=new_title, importance=imp, kind=kind,
                          tags=tags, viewer=view.principal)
    changed = {"content": new_content is not None, "title": new_title is not None, "importance": imp != m.importance,
               "kind": kind != m.kind, "tags": tags != m.d_tags}
    await view.audit("memory.edit", m, detail="changed " + ",".join(k for k, v in changed.items() if v))
    return view.redirect(_path(m), "saved")


async def pin(view: View) -> Response:
    m = await mine(view, view.request.path_params["id"])
    pinned = view.form.get("pinned") == "1"
    await view.svc.set_pinned(m.id, view.user_id, pinned, viewer=view.principal)
    await view.audit("memory.pin" if pinned else "memory.unpin", m)
    return view.redirect(_path(m), "pinned" if pinned else "unpinned")


async def scope(view: View) -> Response:
    m = await mine(view, view.request.path_params["id"])
    new, team = _scope_args(view.form, view.principal.teams)
    await view.svc.update(m.id, view.user_id, privacy_scope=new, team=team, viewer=view.principal)
    await view.audit("memory.share", m, detail=f"{m.privacy_scope}{'/' + m.team if m.team else ''} → "
                                               f"{new}{'/' + team if team else ''}")
    return view.redirect(_path(m), "scope")


async def forget(view: View) -> Response:
    m = await mine(view, view.request.path_params["id"])
    await view.svc.forget(m.id, view.user_id, viewer=view.principal)
    await view.audit("memory.forget", m)
    return view.redirect("/ui/", "forgotten")


async def erase(view: View) -> Response:
    m = await mine(view, view.request.path_params["id"], include_deleted=True)
    if m.deleted_at is not None:
        # MemoryService.forget finds live rows only; bring the row back for the instant the erasure takes, so
        # the erasure also reaches its summaries and profile facts.
        await view.svc.store.update_memory(m.id, {"deleted_at": None})
    await view.svc.forget(m.id, view.user_id, hard=True, viewer=view.principal)
    await view.audit("memory.erase", m)
    return view.redirect("/ui/", "erased")


async def restore(view: View) -> Response:
    m = await mine(view, view.request.path_params["id"], include_deleted=True)
    await view.svc.store.update_memory(m.id, {"deleted_at": None})
    await view.audit("memory.restore", m)
    return view.redirect(_path(m), "restored")


async def feedback(view: View) -> Response:
    m = await visible(view, view.request.path_params["id"])
    event = view.form.get("event", "")
    await view.svc.feedback(m.id, view.user_id, event, viewer=view.principal)
    await view.audit("memory.feedback", m, detail=event)
    return view.redirect(_path(m), "feedback")

"""One memory: everything known about it, its neighbours, and the changes a person may make — edit, pin, scope,
forget (soft), erase (hard), restore. Forget, erase and widening the scope go through a confirmation page; every
change is audited. A memory of another user is "not found", exactly like one that does not exist."""

from __future__ import annotations

from starlette.responses import Response

from gieok.core.dates import utcnow
from gieok.core.errors import InvalidInput, NotFound
from gieok.core.models import FEEDBACK_EVENTS, KINDS, PRIVACY, Memory
from gieok.ui.app import View
from gieok.ui.forms import importance

CONFIRM = {
    "forget": ("Forget this memory?", "It disappears from search, context and the timeline at once; it stays in "
               "the database (see Forgotten on the timeline) and can be restored.", "Forget"),
    "erase": ("Erase this memory for good?", "It is deleted from every table and index, its links and feedback "
              "with it, and facts that came only from it leave your profile. This cannot be undone.", "Erase"),
    "scope": ("Share this memory more widely?", "Changing the scope decides who else may read it.", "Change scope"),
}


async def owned(view: View, memory_id: str, *, include_deleted: bool = False) -> Memory:
    m = await view.svc.store.get_memory(memory_id, include_deleted=include_deleted)
    if m is None or m.user_id != view.user_id:
        raise NotFound(f"no memory {memory_id!r} here: it may have been erased, or it is not yours to see")
    return m


def _path(m: Memory | str) -> str:
    return f"/ui/m/{m if isinstance(m, str) else m.id}"


async def detail(view: View) -> Response:
    m = await owned(view, view.request.path_params["id"], include_deleted=True)
    links = await view.svc.store.list_links(m.id)
    others = {x.id: x for x in await view.svc.store.get_memories(
        sorted({ln.dst if ln.src == m.id else ln.src for ln in links}))}
    neighbours = []
    for ln in links:
        out = ln.src == m.id
        other = others.get(ln.dst if out else ln.src)
        if other is not None and other.user_id == view.user_id:
            neighbours.append({"relation": ln.relation, "outgoing": out, "memory": other})
    feedback = await view.svc.store.list_feedback(m.id)
    return view.render("memory.html", m=m, neighbours=neighbours, feedback=feedback[-20:], kinds=KINDS,
                       scopes=PRIVACY, events=FEEDBACK_EVENTS, now=utcnow(),
                       editing=view.request.query_params.get("edit") == "1")


async def confirm(view: View) -> Response:
    action = view.request.path_params["action"]
    if action not in CONFIRM:
        raise NotFound(f"nothing to confirm called {action!r}")
    m = await owned(view, view.request.path_params["id"])
    scope = view.request.query_params.get("scope", "")
    if action == "scope" and scope not in PRIVACY:
        raise InvalidInput("scope", f"{scope!r} is not one of {', '.join(PRIVACY)}")
    title, text, button = CONFIRM[action]
    return view.render("confirm.html", m=m, action=action, title=title, text=text, button=button, scope=scope)


async def edit(view: View) -> Response:
    m = await owned(view, view.request.path_params["id"])
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
                          tags=tags)
    changed = {"content": new_content is not None, "title": new_title is not None, "importance": imp != m.importance,
               "kind": kind != m.kind, "tags": tags != m.d_tags}
    await view.audit("memory.edit", m.id, fields=[k for k, v in changed.items() if v])
    return view.redirect(_path(m), "saved")


async def pin(view: View) -> Response:
    m = await owned(view, view.request.path_params["id"])
    pinned = view.form.get("pinned") == "1"
    await view.svc.set_pinned(m.id, view.user_id, pinned)
    await view.audit("memory.pin" if pinned else "memory.unpin", m.id)
    return view.redirect(_path(m), "pinned" if pinned else "unpinned")


async def scope(view: View) -> Response:
    m = await owned(view, view.request.path_params["id"])
    new = view.form.get("scope", "")
    if new not in PRIVACY:
        raise InvalidInput("scope", f"{new!r} is not one of {', '.join(PRIVACY)}")
    await view.svc.store.update_memory(m.id, {"privacy_scope": new})
    await view.audit("memory.scope", m.id, before=m.privacy_scope, after=new)
    return view.redirect(_path(m), "scope")


async def forget(view: View) -> Response:
    m = await owned(view, view.request.path_params["id"])
    await view.svc.forget(m.id, view.user_id)
    await view.audit("memory.forget", m.id)
    return view.redirect("/ui/", "forgotten")


async def erase(view: View) -> Response:
    m = await owned(view, view.request.path_params["id"], include_deleted=True)
    if m.deleted_at is not None:
        # MemoryService.forget finds live rows only; bring the row back for the instant the erasure takes, so
        # the erasure also reaches its summaries and profile facts.
        await view.svc.store.update_memory(m.id, {"deleted_at": None})
    await view.svc.forget(m.id, view.user_id, hard=True)
    await view.audit("memory.erase", m.id)
    return view.redirect("/ui/", "erased")


async def restore(view: View) -> Response:
    m = await owned(view, view.request.path_params["id"], include_deleted=True)
    await view.svc.store.update_memory(m.id, {"deleted_at": None})
    await view.audit("memory.restore", m.id)
    return view.redirect(_path(m), "restored")


async def feedback(view: View) -> Response:
    m = await owned(view, view.request.path_params["id"])
    event = view.form.get("event", "")
    await view.svc.feedback(m.id, view.user_id, event)
    await view.audit("memory.feedback", m.id, event=event)
    return view.redirect(_path(m), "feedback")

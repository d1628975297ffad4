"""`manage_knowledge`: add, update, forget, pin or unpin a memory, or edit a fact of the user's profile."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from pydantic import Field

from gieok.core.errors import InvalidInput
from gieok.mcp.caller import caller
from gieok.mcp.deps import explicit_message, service, tool_errors


@tool_errors
async def manage_knowledge(
    ctx: Context,
    action: Annotated[Literal["add", "update", "remove", "pin", "unpin"], Field(description="What to do.")],
    target: Annotated[Literal["memory", "sub_profile", "core_profile"],
                      Field(description="A memory, or a fact of the user's profile.")] = "memory",
    content: Annotated[str | None, Field(description="Text to remember (add/update), or the profile fact "
                                                     "to remove.")] = None,
    id: Annotated[str | None, Field(description="Memory id (update/remove/pin/unpin).")] = None,
    importance: Annotated[float | None, Field(ge=0, le=1, description="0..1")] = None,
    kind: Annotated[str | None, Field(description="working | episodic | semantic | procedural")] = None,
    tags: Annotated[list[str] | None, Field(description="Topic tags.")] = None,
    title: Annotated[str | None, Field(description="Short title.")] = None,
    key: Annotated[str | None, Field(description="Profile fact key (name, role, preference, …).")] = None,
    hard: Annotated[bool, Field(description="remove: erase everywhere instead of a soft forget.")] = False,
    privacy_scope: Annotated[Literal["private", "team", "public"] | None,
                             Field(description="add/update: who may read it — private (default), team, "
                                               "public. Updating it shares (or unshares) your memory.")] = None,
    team: Annotated[str | None, Field(description="The team to share with (privacy_scope=team).")] = None,
    files: Annotated[list[str] | None, Field(description="add: files the memory is about ('billing/retry.py', "
                                                         "'src/app.ts:10-20', 'x.py::func'); it is flagged "
                                                         "possibly stale when they change.")] = None,
    repo: Annotated[str | None, Field(description="add: the repository directory `files` are relative to "
                                                  "(default: the server's working directory).")] = None,
) -> dict[str, Any]:
    """Store, change or forget knowledge. action=add on target=memory stores an explicit memory: pinned
    (never archived), tagged and embedded at once; the answer says {stored, tagged, embedded}. Memories are
    private unless privacy_scope says team (with team) or public; only a memory's owner changes it."""
    svc = service(ctx)
    c = await caller(ctx, svc, f"manage_knowledge:{action}:{target}")
    c.require_write()
    ident, viewer = c.ident, c.principal
    if target != "memory":
        if action not in ("add", "update", "remove"):
            raise InvalidInput("action", f"{action!r} does not apply to a profile: use add, update or remove")
        prof = await svc.profile_edit(ident.user_id, target, action, content, key)
        c.audit(detail=f"profile {target} {action}")
        return {"target": target, "core_profile": prof.core_profile, "sub_profile": prof.sub_profile}
    if action == "add":
        if not content:
            raise InvalidInput("content", "is required for action=add")
        scope = svc.check_scope(viewer, privacy_scope, team)
        res = await svc.remember(explicit_message(ident, content, kind=kind, importance=importance, tags=tags,
                                                  title=title, scope=scope), files=files, repo=repo)
        c.audit(memory_ids=[res.id], detail=f"scope={scope[0] if scope else 'private'}")
        return res.to_dict()
    if not id:
        raise InvalidInput("id", f"is required for action={action}")
    if action == "update":
        m = await svc.update(id, ident.user_id, content=content, importance=importance, kind=kind, tags=tags,
                             title=title, privacy_scope=privacy_scope, team=team, viewer=viewer)
        c.audit(memory_ids=[m.id], detail=f"share scope={m.privacy_scope}" if privacy_scope or team else "")
        return {"id": m.id, "updated": True, "tagged": m.tag_status, "embedded": m.embed_status,
                "privacy_scope": m.privacy_scope, **({"team": m.team} if m.team else {})}
    if action == "remove":
        out = await svc.forget(id, ident.user_id, hard=hard, viewer=viewer)
        c.audit(memory_ids=[id], detail=f"forget {'hard' if hard else 'soft'}")
        return out
    m = await svc.set_pinned(id, ident.user_id, action == "pin", viewer=viewer)
    c.audit(memory_ids=[m.id])
    return {"id": m.id, "is_pinned": m.is_pinned}

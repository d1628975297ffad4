"""Admin (role admin): people, teams, API keys (a new key's secret is shown once), and the audit log with
filters. Every act goes through the team server's `Admin` (gieok.auth.admin), which audits it at once."""

from __future__ import annotations

from datetime import timedelta

from starlette.responses import Response

from gieok.auth.admin import Admin
from gieok.core.dates import utcnow
from gieok.core.errors import InvalidInput
from gieok.core.principal import ROLE_NAMES
from gieok.ui.app import View
from gieok.ui.forms import day

AUDIT_SHOWN = 200


def _admin(view: View) -> Admin:
    return Admin(view.svc.store, view.principal)


async def people(view: View) -> Response:
    store = view.svc.store
    teams = await store.list_teams()
    keys = await store.list_api_keys()
    users = sorted(set(await store.list_user_ids()) | {k.user_id for k in keys}
                   | {u for t in teams for u in t.members})
    member_of = {u: [t.name for t in teams if u in t.members] for u in users}
    live_keys = {u: sum(1 for k in keys if k.user_id == u and k.revoked_at is None) for u in users}
    return view.render("admin.html", tab="people", users=users, member_of=member_of, live_keys=live_keys,
                       teams=teams)


async def team_create(view: View) -> Response:
    name = view.form.get("team", "").strip()
    if not name:
        raise InvalidInput("team", "give the team a name, e.g. eng")
    await _admin(view).create_team(name, view.form.get("description", "").strip())
    return view.redirect("/ui/admin", "team_saved")


async def team_add(view: View) -> Response:
    team, user = view.form.get("team", "").strip(), view.form.get("user", "").strip()
    if not team or not user:
        raise InvalidInput("user", "say which user joins which team")
    await _admin(view).add_member(team, user)
    return view.redirect("/ui/admin", "team_saved")


async def team_remove(view: View) -> Response:
    await _admin(view).remove_member(view.form.get("team", ""), view.form.get("user", ""))
    return view.redirect("/ui/admin", "team_saved")


async def keys(view: View, created: object = None) -> Response:
    recs = sorted(await view.svc.store.list_api_keys(), key=lambda k: k.created_at or utcnow(), reverse=True)
    teams = [t.name for t in await view.svc.store.list_teams()]
    return view.render("admin.html", tab="keys", keys=recs, roles=ROLE_NAMES, team_names=teams, created=created,
                       now=utcnow())


async def key_create(view: View) -> Response:
    f = view.form
    teams = [t.strip() for t in f.get("teams", "").split(",") if t.strip()]
    created = await _admin(view).create_key(f.get("user", ""), role=f.get("role", "editor"), teams=teams,
                                            expires=f.get("expires") or None, name=f.get("name", "").strip())
    # The secret exists only in this response: it is never stored, and never shown again.
    response = await keys(view, created=created)
    response.headers["Cache-Control"] = "no-store"
    return response


async def key_revoke(view: View) -> Response:
    await _admin(view).revoke_key(view.form.get("key_id", ""))
    return view.redirect("/ui/admin/keys", "key_revoked")


async def audit_log(view: View) -> Response:
    q = view.request.query_params
    values = {k: q.get(k, "").strip() for k in ("user", "since", "action", "outcome")}
    since = day("since", values["since"]) if values["since"] else utcnow() - timedelta(days=7)
    rows = await view.svc.store.list_audit(user_id=values["user"] or None, since=since, limit=5000)
    if values["action"]:
        rows = [r for r in rows if values["action"].lower() in r.action.lower()]
    if values["outcome"]:
        rows = [r for r in rows if r.outcome.startswith(values["outcome"])]
    shown = list(reversed(rows))[:AUDIT_SHOWN]
    return view.render("admin.html", tab="audit", entries=shown, total=len(rows), values=values,
                       since_shown=since.date().isoformat())

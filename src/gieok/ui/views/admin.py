"""Admin (role admin): users, teams, keys and the audit log. They are the team server's (issue 12); until it is
wired in, the page says so plainly instead of showing empty tables."""

from __future__ import annotations

from starlette.responses import Response

from gieok.ui.app import View


async def admin(view: View) -> Response:
    users = await view.svc.store.list_user_ids()
    return view.render("admin.html", users=users)

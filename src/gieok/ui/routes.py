"""The dashboard's URL map under /ui, as one Starlette app (its own static files and error pages)."""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from gieok.ui.app import Dashboard
from gieok.ui.views import admin, librarian, memory, profile, search, signin, tags, timeline


def dashboard_app(dash: Dashboard) -> Starlette:
    page = dash.page
    sign_in, sign_out, oidc_start, oidc_callback = signin.signin_endpoints(dash)

    async def to_root(_: Request) -> Response:
        return RedirectResponse("/ui/", status_code=308)

    async def not_found(request: Request, _exc: Any) -> Response:
        return dash.render(request, "error.html", status=404, title="Not found",
                           message="There is no page here. The timeline is at /ui/.")

    routes = [
        Route("/ui", to_root),
        Route("/ui/", page(timeline.timeline)),
        Route("/ui/search", page(search.search)),
        Route("/ui/m/{id}", page(memory.detail)),
        Route("/ui/m/{id}/confirm/{action}", page(memory.confirm)),
        *(Route(f"/ui/m/{{id}}/{name}", page(fn, write=True), methods=["POST"]) for name, fn in (
            ("edit", memory.edit), ("pin", memory.pin), ("scope", memory.scope), ("forget", memory.forget),
            ("erase", memory.erase), ("restore", memory.restore), ("feedback", memory.feedback))),
        Route("/ui/profile", page(profile.profile)),
        Route("/ui/profile/save", page(profile.save_fact, write=True), methods=["POST"]),
        Route("/ui/profile/remove", page(profile.remove_fact, write=True), methods=["POST"]),
        Route("/ui/tags", page(tags.tags)),
        Route("/ui/tags/merge", page(tags.merge, write=True), methods=["POST"]),
        Route("/ui/librarian", page(librarian.librarian)),
        Route("/ui/librarian/retry", page(librarian.retry, write=True), methods=["POST"]),
        Route("/ui/admin", page(admin.people, admin=True)),
        Route("/ui/admin/keys", page(admin.keys, admin=True)),
        Route("/ui/admin/audit", page(admin.audit_log, admin=True)),
        *(Route(f"/ui/admin/{name}", page(fn, write=True, admin=True), methods=["POST"]) for name, fn in (
            ("teams/create", admin.team_create), ("teams/add", admin.team_add), ("teams/remove", admin.team_remove),
            ("keys/create", admin.key_create), ("keys/revoke", admin.key_revoke))),
        Route("/ui/signin", sign_in, methods=["GET", "POST"]),  # type: ignore[arg-type]
        Route("/ui/signout", sign_out, methods=["POST"]),  # type: ignore[arg-type]
        Route("/ui/oidc/start", oidc_start),  # type: ignore[arg-type]
        Route("/ui/oidc/callback", oidc_callback),  # type: ignore[arg-type]
        Mount("/ui/static", StaticFiles(packages=[("gieok.ui", "static")]), name="static"),
    ]
    return Starlette(routes=routes, exception_handlers={404: not_found})

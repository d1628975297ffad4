"""The dashboard's request plumbing: each page handler is wrapped once (`Dashboard.page`) so that it runs only with
an open service, a principal, a valid CSRF token on every change and the role the change needs; our errors become
a page that names the field and says how to fix it, never a 500.
"""

from __future__ import annotations

import functools
import logging
import math
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar
from urllib.parse import urlencode

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from gieok import __version__
from gieok.auth.team import TeamAuth
from gieok.core.errors import AuthError, GieokError, InvalidInput, NotFound
from gieok.core.models import Memory
from gieok.core.principal import Principal
from gieok.core.settings import Settings
from gieok.memory.service import MemoryService
from gieok.ui import audit
from gieok.ui import format as fmt
from gieok.ui.oidc import OidcClient
from gieok.ui.principal import request_principal
from gieok.ui.session import CSRF_FIELD, CSRF_HEADER, Session, SessionCodec

log = logging.getLogger(__name__)

# Messages shown after a change, by code: a redirect carries the code, never free text from the request.
DONE = {
    "pinned": "Pinned. It will not be archived.", "unpinned": "Unpinned.", "saved": "Saved.",
    "forgotten": "Forgotten. It no longer appears in search or context.", "erased": "Erased everywhere.",
    "restored": "Restored.", "scope": "Scope changed.", "merged": "Tags merged.", "retried": "Queued for retry.",
    "fact_removed": "Fact removed.", "fact_saved": "Fact saved.", "signed_in": "Signed in.",
    "feedback": "Thanks — feedback recorded.", "team_saved": "Teams updated.", "key_revoked": "Key revoked.",
}


class ServiceSource(Protocol):
    """Where the running service is found (the MCP server's ServiceSlot): None while starting or stopping."""

    @property
    def service(self) -> MemoryService | None: ...


class Refused(Exception):
    """A request the principal may not make: 403 with the reason."""


@dataclass(slots=True)
class View:
    """What a page handler gets: the request, the open service, who is asking and their session."""

    request: Request
    svc: MemoryService
    principal: Principal
    session: Session
    dash: Dashboard
    form: dict[str, str] = field(default_factory=dict)

    @property
    def user_id(self) -> str:
        return self.principal.user_id

    def render(self, template: str, status: int = 200, **context: Any) -> HTMLResponse:
        return self.dash.render(self.request, template, status=status, principal=self.principal,
                                session=self.session, **context)

    def redirect(self, path: str, done: str | None = None, **params: str) -> RedirectResponse:
        q = {**params, **({"done": done} if done else {})}
        return RedirectResponse(path + (("&" if "?" in path else "?") + urlencode(q) if q else ""), status_code=303)

    @property
    def remote(self) -> str:
        return self.request.client.host if self.request.client else ""

    async def audit(self, action: str, memory: Memory | None = None, *, detail: str = "",
                    memory_ids: Iterable[str] = (), owners: Iterable[str] = ()) -> None:
        """Record a change (every write handler calls this once it is done)."""
        ids, who = list(memory_ids), list(owners)
        if memory is not None:
            ids.append(memory.id)
            who.append(memory.user_id)
        await audit.record(self.dash.team, self.principal, action, memory_ids=ids, owners=who, detail=detail,
                           remote=self.remote)
        self.dash.changed(self.principal.user_id)


Handler = Callable[[View], Awaitable[Response]]
T = TypeVar("T")


class Dashboard:
    def __init__(self, settings: Settings, slot: ServiceSource, team: TeamAuth, *, secret: str) -> None:
        self.settings = settings
        self.slot = slot
        self.team = team
        self.codec = SessionCodec(secret)
        self.oidc = OidcClient(settings, secret)
        self._cache: dict[tuple[str, str], tuple[float, object]] = {}
        self.env = Environment(loader=PackageLoader("gieok.ui", "templates"),
                               autoescape=select_autoescape(["html"]), trim_blocks=True, lstrip_blocks=True)
        self.env.globals.update(version=__version__, auth_on=team.enabled)
        fmt.install(self.env)

    # --- per-user summaries (the chart, the filter menus), kept a little while ---------------------------
    def cached(self, user_id: str, name: str, ttl_s: float) -> object | None:
        hit = self._cache.get((user_id, name))
        return hit[1] if hit and time.monotonic() - hit[0] < ttl_s else None

    def keep(self, user_id: str, name: str, value: T) -> T:
        self._cache[(user_id, name)] = (time.monotonic(), value)
        return value

    def changed(self, user_id: str) -> None:
        """After a change the person makes, their next page shows it at once."""
        for key in [k for k in self._cache if k[0] == user_id]:
            del self._cache[key]

    @property
    def auth_on(self) -> bool:
        return self.team.enabled

    def render(self, request: Request, template: str, *, status: int = 200, principal: Principal | None = None,
               session: Session | None = None, **context: Any) -> HTMLResponse:
        done = request.query_params.get("done")
        html = self.env.get_template(template).render(
            request=request, principal=principal, path=request.url.path, done=DONE.get(done or ""),
            csrf=self.codec.csrf_token(session) if session else "", csrf_field=CSRF_FIELD, **context)
        response = HTMLResponse(html, status_code=status)
        if session is not None and session.fresh:
            self.codec.write(request, response, session)
        return response

    def page(self, handler: Handler, *, write: bool = False,
             admin: bool = False) -> Callable[[Request], Awaitable[Response]]:
        @functools.wraps(handler)
        async def endpoint(request: Request) -> Response:
            svc = self.slot.service
            session = self.codec.read(request)
            if svc is None:
                return self.render(request, "error.html", status=503, title="Starting",
                                   message="The server is still starting. Reload in a moment.")
            principal = await request_principal(request, team=self.team, store=svc.store,
                                                local_user=svc.settings.user_id, credential=session.credential)
            remote = request.client.host if request.client else ""
            if principal is None:
                if self.auth_on:
                    nxt = request.url.path + (f"?{request.url.query}" if request.url.query else "")
                    return RedirectResponse("/ui/signin?" + urlencode({"next": nxt}), status_code=303)
                await audit.record(self.team, None, request.url.path, outcome="refused:403",
                                   detail="auth off: not loopback", remote=remote)
                return self.render(request, "error.html", status=403, title="This machine only",
                                   message="Auth is off, so the dashboard answers only on this machine "
                                           "(127.0.0.1). Open it there, or turn on auth to sign in from elsewhere.")
            view = View(request, svc, principal, session, self)
            if self.auth_on:
                wait = self.team.limiter.take(principal.key_id or principal.user_id)
                if wait > 0:
                    await audit.record(self.team, principal, request.url.path, outcome="refused:429",
                                       detail="rate limit", remote=remote)
                    response = view.render("error.html", status=429, title="Slow down",
                                           message=f"Too many requests for this key; try again in "
                                                   f"{math.ceil(wait)} s.")
                    response.headers["Retry-After"] = str(max(1, math.ceil(wait)))
                    return response
            try:
                if request.method == "POST":
                    form = await request.form()
                    view.form = {k: v for k, v in form.items() if isinstance(v, str)}
                    token = view.form.get(CSRF_FIELD) or request.headers.get(CSRF_HEADER)
                    if not self.codec.csrf_ok(session, token):
                        await audit.record(self.team, principal, request.url.path, outcome="refused:403",
                                           detail="csrf token missing or wrong", remote=remote)
                        return view.render("error.html", status=403, title="Form expired",
                                           message="This form's security token is missing or out of date. "
                                                   "Go back, reload the page and try again.")
                    if write and not principal.can_write:
                        raise Refused(f"Your role ({principal.role}) can read memories but not change them. "
                                      "Ask an admin for the editor role.")
                if admin and not principal.is_admin:
                    raise Refused(f"This page is for admins; your role is {principal.role}.")
                return await handler(view)
            except (Refused, AuthError) as exc:
                await audit.record(self.team, principal, request.url.path, outcome="denied", detail=str(exc)[:300],
                                   remote=remote)
                return view.render("error.html", status=403, title="Not allowed", message=str(exc))
            except NotFound as exc:
                return view.render("error.html", status=404, title="Not found", message=str(exc))
            except InvalidInput as exc:
                return view.render("error.html", status=400, title="Please fix this", message=str(exc))
            except GieokError as exc:
                log.warning("dashboard: %s", exc)
                return view.render("error.html", status=400, title="That did not work", message=str(exc))
        return endpoint

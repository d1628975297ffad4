"""Signing in and out. With auth on, the form takes an API key or a token (a JWT from your identity provider), the
team server's authenticator checks it, and the signed session cookie keeps it (HttpOnly, SameSite=Strict, Secure
off loopback). With auth off there is nothing to sign in to on loopback."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from gieok.core.errors import AuthError, GieokError, Unauthorized
from gieok.ui import audit
from gieok.ui.app import Dashboard
from gieok.ui.oidc import FLOW_COOKIE
from gieok.ui.session import CSRF_FIELD, SessionCodec


def _next(value: str | None) -> str:
    # Only a path inside the dashboard: an open redirect would let a link send a signed-in user anywhere.
    return value if value and value.startswith("/ui/") and not value.startswith("/ui//") else "/ui/"


def signin_endpoints(dash: Dashboard) -> tuple[object, object, object, object]:
    async def signin(request: Request) -> Response:
        session = dash.codec.read(request)
        nxt = _next(request.query_params.get("next"))
        if not dash.auth_on:
            return RedirectResponse("/ui/", status_code=303)
        if request.method == "GET":
            return dash.render(request, "signin.html", session=session, next=nxt, error=None,
                               oidc=dash.oidc.enabled)
        form = await request.form()
        token = form.get(CSRF_FIELD)
        credential = str(form.get("credential") or "").strip()
        nxt = _next(str(form.get("next") or ""))
        if not dash.codec.csrf_ok(session, token if isinstance(token, str) else None):
            return dash.render(request, "signin.html", status=403, session=session, next=nxt,
                               error="The sign-in form expired. Try again.", oidc=dash.oidc.enabled)
        remote = request.client.host if request.client else ""
        try:
            if not credential:
                raise Unauthorized("paste an API key or a token")
            principal = await dash.team.authenticate(credential)
        except AuthError as exc:
            await audit.record(dash.team, None, "signin", outcome="refused:401", detail=str(exc)[:300], remote=remote)
            return dash.render(request, "signin.html", status=401, session=session, next=nxt,
                               error=f"That key or token was not accepted ({exc}).", oidc=dash.oidc.enabled)
        # A new session id at sign-in, so a session id planted before sign-in is worth nothing after it.
        fresh = SessionCodec.new_session(credential)
        await audit.record(dash.team, principal, "signin", remote=remote)
        response = RedirectResponse(nxt + ("&" if "?" in nxt else "?") + "done=signed_in", status_code=303)
        dash.codec.write(request, response, fresh)
        return response

    async def signout(request: Request) -> Response:
        session = dash.codec.read(request)
        form = await request.form()
        token = form.get(CSRF_FIELD)
        if not dash.codec.csrf_ok(session, token if isinstance(token, str) else None):
            return dash.render(request, "error.html", status=403, session=session, title="Form expired",
                               message="Reload the page and sign out again.")
        response = RedirectResponse("/ui/signin" if dash.auth_on else "/ui/", status_code=303)
        dash.codec.clear(response)
        return response

    async def oidc_start(request: Request) -> Response:
        if not (dash.auth_on and dash.oidc.enabled):
            return RedirectResponse("/ui/signin", status_code=303)
        try:
            return await dash.oidc.start(request, _next(request.query_params.get("next")))
        except GieokError as exc:
            return dash.render(request, "signin.html", status=502, session=dash.codec.read(request), next="/ui/",
                               error=f"Cannot reach the identity provider: {exc}", oidc=True)

    async def oidc_callback(request: Request) -> Response:
        remote = request.client.host if request.client else ""
        session = dash.codec.read(request)
        try:
            tokens, flow = await dash.oidc.finish(request)
            principal, credential = None, ""
            refused: AuthError = Unauthorized("the identity provider returned no token")
            for token in tokens:   # the access token first (made for this server), then the ID token
                try:
                    principal, credential = await dash.team.authenticate(token), token
                    break
                except AuthError as exc:
                    refused = exc
            if principal is None:
                raise refused
        except (AuthError, GieokError) as exc:
            await audit.record(dash.team, None, "signin oidc", outcome="refused:401", detail=str(exc)[:300],
                               remote=remote)
            return dash.render(request, "signin.html", status=401, session=session, next="/ui/", oidc=True,
                               error=f"Signing in through your organisation did not work: {exc}")
        await audit.record(dash.team, principal, "signin oidc", remote=remote)
        fresh = SessionCodec.new_session(credential)
        nxt = _next(flow.get("next"))
        target = nxt + ("&" if "?" in nxt else "?") + "done=signed_in"
        # A page that moves on by itself, not a redirect: see gieok.ui.oidc on SameSite.
        response = dash.render(request, "continue.html", target=target)
        dash.codec.write(request, response, fresh)
        response.delete_cookie(FLOW_COOKIE, path="/ui/oidc")
        return response

    return signin, signout, oidc_start, oidc_callback

"""The dashboard's session cookie and CSRF tokens, signed with itsdangerous (the signing library Flask and
Starlette's own SessionMiddleware use).

The cookie carries a random session id and, with auth on, the API key or token the user signed in with; it is
HttpOnly (no script reads it), SameSite=Strict (no other site's page sends it) and Secure unless the client is on
loopback. The CSRF token of a session is its id signed under another salt: every form and every htmx request sends
it back, and a change without the token of the cookie's session is refused.
"""

from __future__ import annotations

import hmac
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from itsdangerous import BadSignature, URLSafeTimedSerializer
from starlette.requests import Request
from starlette.responses import Response

from gieok.ui.principal import is_loopback

COOKIE = "gieok_ui"
CSRF_FIELD = "csrf"
CSRF_HEADER = "x-csrf-token"
MAX_AGE_S = 12 * 3600


@dataclass(slots=True)
class Session:
    sid: str
    credential: str | None = None
    fresh: bool = False          # made for this request: the response must set the cookie


def load_secret(configured: str, home: Path) -> str:
    """GIEOK_UI_SECRET when set (several replicas must share one); otherwise a random secret kept in the data
    directory (0600), so sessions survive a restart."""
    if configured:
        return configured
    path = home / "ui-secret"
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        home.mkdir(parents=True, exist_ok=True)
        value = secrets.token_urlsafe(32)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(value)
        return value


class SessionCodec:
    def __init__(self, secret: str) -> None:
        self._cookie = URLSafeTimedSerializer(secret, salt="gieok-ui-session")
        self._csrf = URLSafeTimedSerializer(secret, salt="gieok-ui-csrf")

    def read(self, request: Request) -> Session:
        raw = request.cookies.get(COOKIE)
        if raw:
            try:
                data = self._cookie.loads(raw, max_age=MAX_AGE_S)
                if isinstance(data, dict) and isinstance(data.get("sid"), str):
                    cred = data.get("cred")
                    return Session(data["sid"], cred if isinstance(cred, str) else None)
            except BadSignature:
                pass   # tampered or expired: a new anonymous session
        return self.new_session()

    def write(self, request: Request, response: Response, session: Session) -> None:
        response.set_cookie(COOKIE, self._cookie.dumps({"sid": session.sid, "cred": session.credential}),
                            max_age=MAX_AGE_S, path="/ui", httponly=True, samesite="strict",
                            secure=request.url.scheme == "https" or not is_loopback(request))

    @staticmethod
    def new_session(credential: str | None = None) -> Session:
        return Session(secrets.token_urlsafe(18), credential, fresh=True)

    @staticmethod
    def clear(response: Response) -> None:
        response.delete_cookie(COOKIE, path="/ui")

    def csrf_token(self, session: Session) -> str:
        return self._csrf.dumps(session.sid)

    def csrf_ok(self, session: Session, token: str | None) -> bool:
        if not token or session.fresh:
            return False
        try:
            sid = self._csrf.loads(token, max_age=MAX_AGE_S)
        except BadSignature:
            return False
        return isinstance(sid, str) and hmac.compare_digest(sid, session.sid)

"""The dashboard over HTTP against the real service on every backend: pages, filters, changes with CSRF, roles,
scopes, cookies, and the errors a person sees. (The browser end to end is tests/test_dashboard_browser.py.)"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx2
import pytest

from gieok.core.dates import utcnow
from gieok.mcp.state import ServiceSlot
from gieok.memory.ingest import MessageIn
from gieok.memory.service import MemoryService
from gieok.ui.app import Dashboard
from gieok.ui.principal import CredentialVerifier
from gieok.ui.routes import dashboard_app
from gieok.ui.session import COOKIE
from tests.fakes.credentials import team_keys

CSRF = re.compile(r'name="csrf(?:" value|-token" content)="([^"]+)"')


async def add(svc: MemoryService, content: str, user: str = "alice", **kw: Any) -> str:
    mid, _ = await svc.ingest(MessageIn(content=content, user_id=user, **kw))
    return mid


def client(svc: MemoryService, tmp_path: Path, *, verifier: CredentialVerifier | None = None,
           host: str = "127.0.0.1") -> httpx2.AsyncClient:
    slot = ServiceSlot()
    slot.open(svc)
    app = dashboard_app(Dashboard(svc.settings, slot, secret="test-secret", verifier=verifier))
    return httpx2.AsyncClient(transport=httpx2.ASGITransport(app, client=(host, 50000)),
                              # Off loopback the cookie is Secure: the client must speak https to get it back.
                              base_url=f"{'http' if host.startswith('127.') else 'https'}://{host}:8765")


@pytest.fixture
async def ui(svc: MemoryService, tmp_path: Path) -> AsyncIterator[httpx2.AsyncClient]:
    async with client(svc, tmp_path) as c:
        yield c


async def csrf_of(c: httpx2.AsyncClient, path: str = "/ui/") -> str:
    r = await c.get(path)
    m = CSRF.search(r.text)
    assert m, f"no CSRF token on {path}"
    return m.group(1)


async def test_pages_render_with_korean_and_no_outside_resources(svc: MemoryService, ui: httpx2.AsyncClient) -> None:
    mid = await add(svc, "저는 매주 화요일에 결제 서비스를 배포해요", agent_platform="codex", agent_model="gpt-5.5")
    await add(svc, "We deploy billing on Tuesdays", agent_platform="claude-code", role="assistant")
    for path in ("/ui/", "/ui/search?q=배포", f"/ui/m/{mid}", "/ui/profile", "/ui/tags", "/ui/librarian",
                 "/ui/admin"):
        r = await ui.get(path)
        assert r.status_code == 200, (path, r.text[:300])
        # Nothing fetched from elsewhere: every script, stylesheet and image comes from /ui/static.
        assert not re.search(r'(src|href)="(https?:)?//', r.text), path
    home = (await ui.get("/ui/")).text
    assert "결제 서비스를 배포해요" in home and "codex · gpt-5.5" in home
    assert 'role="img"' in home and "<rect" in home   # the activity chart, drawn server-side
    found = (await ui.get("/ui/search", params={"q": "배포"})).text
    assert "<mark>배포</mark>해요" in found and "keyword match" in found and "relevance" in found
    static = await ui.get("/ui/static/htmx.min.js")
    assert static.status_code == 200 and "htmx" in static.text[:200]
    assert (await ui.get("/ui")).status_code == 308


async def test_empty_store_says_what_to_do(ui: httpx2.AsyncClient) -> None:
    home = (await ui.get("/ui/")).text
    assert "No memories yet." in home and "Nothing in the last 30 days." in home
    assert "Ask anything." in (await ui.get("/ui/search")).text
    assert "No core facts yet." in (await ui.get("/ui/profile")).text


async def test_timeline_filters_states_and_keyset_pages(svc: MemoryService, ui: httpx2.AsyncClient) -> None:
    now = utcnow()
    ids = [await add(svc, f"note number {i}", created_at=now - timedelta(minutes=i),
                     agent_platform="codex" if i % 2 else "cursor") for i in range(60)]
    first = (await ui.get("/ui/")).text
    assert "note number 0<" in first and "note number 49<" in first and "note number 50<" not in first
    older = re.search(r'href="(/ui/\?before=[^"]+)"', first)
    assert older
    second = (await ui.get(older.group(1).replace("&amp;", "&"))).text
    assert "note number 50<" in second and "note number 59<" in second and "note number 49<" not in second
    # htmx's "Older memories" asks for the rows alone, appended under the ones shown.
    more = await ui.get(older.group(1).replace("&amp;", "&"), headers={"HX-Request": "true", "HX-Target": "more"})
    assert "note number 50<" in more.text and "<html" not in more.text and "Activity" not in more.text
    codex = (await ui.get("/ui/", params={"platform": "codex"})).text
    assert "note number 1<" in codex and "note number 2<" not in codex
    await svc.forget(ids[3], "alice")
    assert "note number 3<" not in (await ui.get("/ui/")).text
    forgotten = (await ui.get("/ui/", params={"state": "forgotten"})).text
    assert "note number 3<" in forgotten and "note number 4<" not in forgotten
    bad = await ui.get("/ui/", params={"since": "last tuesday"})
    assert bad.status_code == 400 and "since" in bad.text and "YYYY-MM-DD" in bad.text
    assert (await ui.get("/ui/", params={"kind": "gossip"})).status_code == 400
    assert (await ui.get("/ui/", params={"before": "garbage"})).status_code == 400


async def test_changes_need_the_csrf_token_and_are_made(svc: MemoryService, ui: httpx2.AsyncClient,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    mid = await add(svc, "내일 오전에 팀 회의")
    refused = await ui.post(f"/ui/m/{mid}/pin", data={"pinned": "1"})
    assert refused.status_code == 403 and "security token" in refused.text
    assert not (await svc.get(mid, "alice")).is_pinned
    token = await csrf_of(ui)
    assert (await ui.post(f"/ui/m/{mid}/pin", data={"pinned": "1", "csrf": "forged"})).status_code == 403
    caplog.set_level("INFO", logger="gieok.audit")
    r = await ui.post(f"/ui/m/{mid}/pin", data={"pinned": "1", "csrf": token})
    assert r.status_code == 303 and r.headers["location"].endswith("done=pinned")
    assert (await svc.get(mid, "alice")).is_pinned
    assert any('"action": "memory.pin"' in rec.message and mid in rec.message for rec in caplog.records)
    r = await ui.post(f"/ui/m/{mid}/edit", data={"csrf": token, "content": "내일 오후에 팀 회의", "title": "회의",
                                                  "importance": "0.9", "kind": "semantic", "tags": "회의, 일정"})
    assert r.status_code == 303
    m = await svc.get(mid, "alice")
    assert (m.content, m.title, m.kind, m.importance, m.d_tags) == ("내일 오후에 팀 회의", "회의", "semantic", 0.9,
                                                                    ["회의", "일정"])
    bad = await ui.post(f"/ui/m/{mid}/edit", data={"csrf": token, "content": "x", "importance": "lots"})
    assert bad.status_code == 400 and "importance" in bad.text
    assert "Forget" in (await ui.get(f"/ui/m/{mid}/confirm/forget")).text
    assert (await ui.post(f"/ui/m/{mid}/scope", data={"csrf": token, "scope": "team"})).status_code == 303
    assert (await svc.get(mid, "alice")).privacy_scope == "team"
    assert (await ui.post(f"/ui/m/{mid}/forget", data={"csrf": token})).status_code == 303
    assert "내일 오후에 팀 회의" not in (await ui.get("/ui/search", params={"q": "회의"})).text
    assert (await ui.post(f"/ui/m/{mid}/restore", data={"csrf": token})).status_code == 303
    assert "오후에 팀 <mark>회의</mark>" in (await ui.get("/ui/search", params={"q": "회의"})).text
    assert (await ui.post(f"/ui/m/{mid}/erase", data={"csrf": token})).status_code == 303
    assert await svc.store.get_memory(mid, include_deleted=True) is None


async def test_profile_tags_and_librarian_pages_change_things(svc: MemoryService, ui: httpx2.AsyncClient) -> None:
    token = await csrf_of(ui)
    r = await ui.post("/ui/profile/save", data={"csrf": token, "section": "core_profile", "key": "home",
                                                "value": "서울에 살아요"})
    assert r.status_code == 303
    page = (await ui.get("/ui/profile")).text
    assert "서울에 살아요" in page and "you wrote this" in page
    r = await ui.post("/ui/profile/remove", data={"csrf": token, "section": "core_profile", "key": "home",
                                                  "value": "서울에 살아요"})
    assert r.status_code == 303 and (await svc.profile("alice")).core_profile == []
    assert (await ui.post("/ui/profile/save", data={"csrf": token, "section": "nope", "value": "x"})).status_code == 400

    from gieok.store.base import ProjectTag
    await svc.store.upsert_project_tag(ProjectTag("centragens", usage_count=3))
    await svc.store.upsert_project_tag(ProjectTag("센트라젠", usage_count=1))
    mid = await add(svc, "센트라젠 작업 회의", p_tags=["센트라젠"])
    r = await ui.post("/ui/tags/merge", data={"csrf": token, "alias": "센트라젠", "canonical": "centragens"})
    assert r.status_code == 303
    assert (await svc.get(mid, "alice")).p_tags == ["centragens"]
    assert "센트라젠" in (await ui.get("/ui/tags")).text

    await svc.store.fail_cold(mid, "embedding API said 503", permanent=True, max_attempts=3, now=utcnow())
    page = (await ui.get("/ui/librarian")).text
    assert "embedding API said 503" in page and "Retry" in page
    assert (await ui.post("/ui/librarian/retry", data={"csrf": token, "id": mid})).status_code == 303
    m = await svc.get(mid, "alice")
    assert (m.tag_status, m.embed_status, m.cold_attempts) == ("pending", "pending", 0)


async def test_auth_off_answers_only_loopback(svc: MemoryService, tmp_path: Path) -> None:
    async with client(svc, tmp_path, host="10.1.2.3") as c:
        r = await c.get("/ui/")
        assert r.status_code == 403 and "this machine" in r.text.lower()


async def test_signin_cookie_roles_and_scopes(svc: MemoryService, tmp_path: Path) -> None:
    mine = await add(svc, "alice의 비밀 메모: 회의 일정")
    bobs = await add(svc, "bob의 비밀 메모: 회의 장소", user="bob")
    async with client(svc, tmp_path, verifier=team_keys(), host="192.0.2.10") as c:
        r = await c.get("/ui/search?q=회의")
        assert r.status_code == 303 and r.headers["location"].startswith("/ui/signin?next=")
        page = await c.get("/ui/signin")
        token = CSRF.search(page.text).group(1)  # type: ignore[union-attr]
        bad = await c.post("/ui/signin", data={"csrf": token, "credential": "gk-nobody"})
        assert bad.status_code == 401 and "not accepted" in bad.text
        r = await c.post("/ui/signin", data={"csrf": token, "credential": "gk-alice-viewer", "next": "//evil.example"})
        assert r.status_code == 303 and r.headers["location"] == "/ui/?done=signed_in"
        cookie = r.headers["set-cookie"]
        assert f"{COOKIE}=" in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie
        assert "Secure" in cookie            # the client is not on loopback
        found = (await c.get("/ui/search", params={"q": "회의"})).text
        assert "alice의 비밀 메모" in found and "bob의 비밀 메모" not in found
        assert (await c.get(f"/ui/m/{bobs}")).status_code == 404
        assert "bob의" not in (await c.get("/ui/", params={"state": "all"})).text
        detail = (await c.get(f"/ui/m/{mine}")).text
        assert "Read-only: your role is viewer" in detail and "/pin" not in detail
        token = CSRF.search(detail).group(1)  # type: ignore[union-attr]
        refused = await c.post(f"/ui/m/{mine}/pin", data={"pinned": "1", "csrf": token})
        assert refused.status_code == 403 and "viewer" in refused.text
        assert not (await svc.get(mine, "alice")).is_pinned
        assert (await c.get("/ui/admin")).status_code == 403
        assert (await c.post("/ui/signout", data={"csrf": token})).status_code == 303


async def test_a_revoked_key_stops_working_at_once(svc: MemoryService, tmp_path: Path) -> None:
    keys = team_keys()
    async with client(svc, tmp_path, verifier=keys) as c:
        token = CSRF.search((await c.get("/ui/signin")).text).group(1)  # type: ignore[union-attr]
        await c.post("/ui/signin", data={"csrf": token, "credential": "gk-bob-editor"})
        assert (await c.get("/ui/")).status_code == 200
        keys.revoked.add("gk-bob-editor")
        assert (await c.get("/ui/")).status_code == 303

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

from gieok.auth.admin import Admin
from gieok.auth.team import TeamAuth
from gieok.core.dates import utcnow
from gieok.core.principal import Principal
from gieok.mcp.state import ServiceSlot
from gieok.memory.ingest import MessageIn
from gieok.memory.service import MemoryService
from gieok.retrieval.shared_words import reason_words
from gieok.ui.app import Dashboard
from gieok.ui.format import highlight
from gieok.ui.routes import dashboard_app
from gieok.ui.session import COOKIE
from tests.conftest import e5_service

CSRF = re.compile(r'name="csrf(?:" value|-token" content)="([^"]+)"')


async def add(svc: MemoryService, content: str, user: str = "alice", **kw: Any) -> str:
    mid, _ = await svc.ingest(MessageIn(content=content, user_id=user, **kw))
    return mid


def client(svc: MemoryService, *, auth: str = "none", host: str = "127.0.0.1") -> httpx2.AsyncClient:
    """The dashboard app on the real service, with the team server's real authenticator and audit log."""
    slot = ServiceSlot()
    slot.open(svc)
    team = TeamAuth(svc.settings.model_copy(update={"auth": auth}))
    team.open(svc.store)
    app = dashboard_app(Dashboard(svc.settings, slot, team, secret="test-secret"))
    return httpx2.AsyncClient(transport=httpx2.ASGITransport(app, client=(host, 50000)),
                              # Off loopback the cookie is Secure: the client must speak https to get it back.
                              base_url=f"{'http' if host.startswith('127.') else 'https'}://{host}:8765")


@pytest.fixture
async def ui(svc: MemoryService) -> AsyncIterator[httpx2.AsyncClient]:
    async with client(svc) as c:
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


async def test_a_korean_search_marks_the_english_words_it_matched(tmp_path: Path) -> None:
    # "치과 예약" over an English note: nothing of the query is in the text, so nothing was marked; the result's
    # reason names 예약 → reservation, and the page marks "reservation" as it marks a query's own words.
    async with e5_service(tmp_path, ["Dinner reservation at Jungsik on Friday at 7pm",
                                     "We deploy on Tuesdays"]) as svc, client(svc) as c:
        page = (await c.get("/ui/search", params={"q": "치과 예약"})).text
    assert "Dinner <mark>reservation</mark> at" in page, page[page.find("<ol"):][:2000]
    assert "keyword match: 예약 → reservation" in page and "Tuesdays" not in page


async def test_an_english_search_marks_the_korean_words_it_matched(tmp_path: Path) -> None:
    # The other way: "mom's birthday" over a Korean note marks the note's 엄마 and 생신 (생신은: with its particle).
    async with e5_service(tmp_path, ["엄마 생신은 3월 5일, 케이크 예약하기", "We deploy on Tuesdays"]) as svc, \
            client(svc) as c:
        page = (await c.get("/ui/search", params={"q": "mom's birthday"})).text
    assert "<mark>엄마</mark> <mark>생신</mark>은" in page, page[page.find("<ol"):][:2000]
    assert "keyword match: mom → 엄마, birthday → 생신" in page


def test_a_results_translations_are_marked_as_whole_words() -> None:
    assert reason_words(["semantic match (cosine 0.86)", "keyword match: 예산, 예약 → reservation/booking"]) == \
        ["예산", "reservation", "booking"]
    marked = highlight("Dinner reservation; the category of cats, a cat", "치과 예약", None, ["reservation", "cat"])
    assert str(marked) == "Dinner <mark>reservation</mark>; the category of cats, a <mark>cat</mark>"
    # The query's own words still mark the start of longer words, as before.
    assert str(highlight("We keep deploying", "deploy", None, ["deploy"])) == "We keep <mark>deploy</mark>ing"


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


async def test_changes_need_the_csrf_token_and_are_made(svc: MemoryService, ui: httpx2.AsyncClient) -> None:
    mid = await add(svc, "내일 오전에 팀 회의")
    refused = await ui.post(f"/ui/m/{mid}/pin", data={"pinned": "1"})
    assert refused.status_code == 403 and "security token" in refused.text
    assert not (await svc.get(mid, "alice")).is_pinned
    token = await csrf_of(ui)
    assert (await ui.post(f"/ui/m/{mid}/pin", data={"pinned": "1", "csrf": "forged"})).status_code == 403
    r = await ui.post(f"/ui/m/{mid}/pin", data={"pinned": "1", "csrf": token})
    assert r.status_code == 303 and r.headers["location"].endswith("done=pinned")
    assert (await svc.get(mid, "alice")).is_pinned
    log = await svc.store.list_audit(limit=100)
    assert any(e.action == "ui memory.pin" and e.memory_ids == [mid] and e.owners == ["alice"] for e in log)
    assert any(e.outcome == "refused:403" and "csrf" in e.detail for e in log)   # the refusals, too
    r = await ui.post(f"/ui/m/{mid}/edit", data={"csrf": token, "content": "내일 오후에 팀 회의", "title": "회의",
                                                  "importance": "0.9", "kind": "semantic", "tags": "회의, 일정"})
    assert r.status_code == 303
    m = await svc.get(mid, "alice")
    assert (m.content, m.title, m.kind, m.importance, m.d_tags) == ("내일 오후에 팀 회의", "회의", "semantic", 0.9,
                                                                    ["회의", "일정"])
    bad = await ui.post(f"/ui/m/{mid}/edit", data={"csrf": token, "content": "x", "importance": "lots"})
    assert bad.status_code == 400 and "importance" in bad.text
    assert "Forget" in (await ui.get(f"/ui/m/{mid}/confirm/forget")).text
    no_team = await ui.post(f"/ui/m/{mid}/scope", data={"csrf": token, "scope": "team"})
    assert no_team.status_code == 400 and "no team" in no_team.text
    assert (await ui.post(f"/ui/m/{mid}/scope", data={"csrf": token, "scope": "public"})).status_code == 303
    assert (await svc.get(mid, "alice")).privacy_scope == "public"
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


async def test_auth_off_answers_only_loopback(svc: MemoryService) -> None:
    async with client(svc, host="10.1.2.3") as c:
        r = await c.get("/ui/")
        assert r.status_code == 403 and "this machine" in r.text.lower()


async def keys_for(svc: MemoryService) -> dict[str, str]:
    """Real API keys (gieok.auth): alice and bob in team eng, alice also as a viewer, and an admin."""
    admin = Admin(svc.store, Principal("root", roles=("admin",)))
    out = {}
    for name, user, role in (("alice", "alice", "editor"), ("alice-viewer", "alice", "viewer"),
                             ("bob", "bob", "editor"), ("root", "root", "admin")):
        made = await admin.create_key(user, role=role, teams=["eng"] if user != "root" else [])
        out[name] = made.key.token
    return out


async def sign_in(c: httpx2.AsyncClient, key: str, nxt: str = "/ui/") -> httpx2.Response:
    token = CSRF.search((await c.get("/ui/signin")).text).group(1)  # type: ignore[union-attr]
    return await c.post("/ui/signin", data={"csrf": token, "credential": key, "next": nxt})


async def test_signin_cookie_roles_and_scopes(svc: MemoryService) -> None:
    keys = await keys_for(svc)
    mine = await add(svc, "alice의 비밀 메모: 회의 일정")
    bobs = await add(svc, "bob의 비밀 메모: 회의 장소", user="bob")
    shared = await add(svc, "bob이 팀에 공유한 회의록", user="bob")
    again = await add(svc, "bob이 팀에 공유한 회의록", user="bob", session_id="later")   # the same words, shared again
    for mid in (shared, again):
        await svc.store.update_memory(mid, {"privacy_scope": "team", "team": "eng"})
    async with client(svc, auth="apikey", host="192.0.2.10") as c:
        r = await c.get("/ui/search?q=회의")
        assert r.status_code == 303 and r.headers["location"].startswith("/ui/signin?next=")
        bad = await sign_in(c, "gieok_000000000000_notarealkeynotarealkeynotarealkeynotareal")
        assert bad.status_code == 401 and "not accepted" in bad.text
        r = await sign_in(c, keys["alice-viewer"], nxt="//evil.example")
        assert r.status_code == 303 and r.headers["location"] == "/ui/?done=signed_in"
        cookie = r.headers["set-cookie"]
        assert f"{COOKIE}=" in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie
        assert "Secure" in cookie            # the client is not on loopback
        found = (await c.get("/ui/search", params={"q": "회의"})).text
        assert "alice의 비밀 메모" in found and "bob의 비밀 메모" not in found
        assert "bob이 팀에 공유한 <mark>회의</mark>록" in found and "by bob" in found   # team-shared: visible, marked
        assert found.count("팀에 공유한") == 1 and "said 2 times" in found      # one result for both copies
        assert (await c.get(f"/ui/m/{bobs}")).status_code == 404
        assert "bob의 비밀" not in (await c.get("/ui/", params={"state": "all"})).text
        detail = (await c.get(f"/ui/m/{mine}")).text
        assert "Read-only: your role is viewer" in detail and "/pin" not in detail
        token = CSRF.search(detail).group(1)  # type: ignore[union-attr]
        refused = await c.post(f"/ui/m/{mine}/pin", data={"pinned": "1", "csrf": token})
        assert refused.status_code == 403 and "viewer" in refused.text
        assert not (await svc.get(mine, "alice")).is_pinned
        assert (await c.get("/ui/admin")).status_code == 403
        assert (await c.post("/ui/signout", data={"csrf": token})).status_code == 303
        r = await sign_in(c, keys["alice"])
        assert "only its owner can change it" in (await c.get(f"/ui/m/{shared}")).text
        token = CSRF.search((await c.get("/ui/")).text).group(1)  # type: ignore[union-attr]
        refused = await c.post(f"/ui/m/{shared}/pin", data={"pinned": "1", "csrf": token})
        assert refused.status_code == 403 and "belongs to bob" in refused.text
        r = await c.post(f"/ui/m/{mine}/scope", data={"csrf": token, "scope": "team", "team": "eng"})
        assert r.status_code == 303
        assert ((await svc.get(mine, "alice")).privacy_scope, (await svc.get(mine, "alice")).team) == ("team", "eng")
        r = await c.post(f"/ui/m/{mine}/scope", data={"csrf": token, "scope": "team", "team": "ops"})
        assert r.status_code == 403 and "not a member" in r.text
    log = await svc.store.list_audit(limit=1000)
    assert any(e.action == "ui signin" and e.outcome == "refused:401" for e in log)
    assert any(e.action.startswith("ui /ui/m/") and e.outcome == "denied" and e.actor == "alice" for e in log)
    assert any(e.action == "ui memory.read" and e.owners == ["bob"] for e in log)
    # A folded copy was read too (its id and time are shown): the audit names it.
    assert any(e.detail == "read shared" and {shared, again} <= set(e.memory_ids) for e in log)


async def test_a_revoked_key_stops_working_at_once(svc: MemoryService) -> None:
    keys = await keys_for(svc)
    async with client(svc, auth="apikey") as c:
        await sign_in(c, keys["bob"])
        assert (await c.get("/ui/")).status_code == 200
        key_id = keys["bob"].split("_")[1]
        await Admin(svc.store, Principal("root", roles=("admin",))).revoke_key(key_id)
        assert (await c.get("/ui/")).status_code == 303


async def test_rate_limit_per_key_is_a_clear_429(svc: MemoryService) -> None:
    keys = await keys_for(svc)
    svc.settings = svc.settings.model_copy(update={"rate_limit_per_min": 1, "rate_limit_burst": 3})
    async with client(svc, auth="apikey") as c:
        await sign_in(c, keys["bob"])
        answers = [await c.get("/ui/") for _ in range(4)]
        assert [r.status_code for r in answers][:3] == [200, 200, 200]
        assert answers[3].status_code == 429 and "try again in" in answers[3].text
        assert int(answers[3].headers["retry-after"]) >= 1
    assert any(e.outcome == "refused:429" and e.actor == "bob" for e in await svc.store.list_audit(limit=100))


async def test_admin_pages_keys_teams_and_audit(svc: MemoryService) -> None:
    keys = await keys_for(svc)
    async with client(svc, auth="apikey") as c:
        await sign_in(c, keys["root"])
        people = await c.get("/ui/admin")
        assert people.status_code == 200 and "alice" in people.text and "eng" in people.text
        token = CSRF.search(people.text).group(1)  # type: ignore[union-attr]
        r = await c.post("/ui/admin/keys/create", data={"csrf": token, "user": "carol", "role": "viewer",
                                                        "teams": "ops", "expires": "30d", "name": "carol's laptop"})
        assert r.status_code == 200 and "shown only this once" in r.text and r.headers["cache-control"] == "no-store"
        secret = re.search(r'value="(gieok_[^"]+)"', r.text).group(1)  # type: ignore[union-attr]
        listing = (await c.get("/ui/admin/keys")).text
        assert secret not in listing and "carol" in listing            # never shown again
        assert (await svc.store.teams_of("carol")) == ("ops",)
        key_id = secret.split("_")[1]
        assert (await c.post("/ui/admin/keys/revoke", data={"csrf": token, "key_id": key_id})).status_code == 303
        assert (await svc.store.get_api_key(key_id)).revoked_at is not None  # type: ignore[union-attr]
        member = {"csrf": token, "team": "ops", "user": "dave"}
        assert (await c.post("/ui/admin/teams/add", data=member)).status_code == 303
        assert await svc.store.teams_of("dave") == ("ops",)
        assert (await c.post("/ui/admin/teams/remove", data=member)).status_code == 303
        assert await svc.store.teams_of("dave") == ()
        audit = (await c.get("/ui/admin/audit", params={"action": "keys"})).text
        assert "keys create" in audit and "keys revoke" in audit and "ui signin" not in audit
        assert "ui signin" in (await c.get("/ui/admin/audit", params={"user": "root"})).text
        assert (await c.get("/ui/admin/audit", params={"since": "yesterday"})).status_code == 400


async def test_oidc_sign_in_refuses_answers_that_are_not_its_own(svc: MemoryService) -> None:
    """The IdP flow's checks, over HTTP with the fake IdP: a wrong state, a code redeemed twice and a missing flow
    cookie each end in a 401 page, audited; the right answer signs in, its token checked by the JWT verifier."""
    from tests.fakes.idp import AUDIENCE, ISSUER, FakeIdP
    with FakeIdP(public_host="127.0.0.1") as idp:
        svc.settings = svc.settings.model_copy(update={
            "auth": "jwt", "jwt_issuer": ISSUER, "jwt_audience": AUDIENCE, "jwt_jwks_url": idp.jwks_url,
            "oidc_discovery_url": idp.url + "/.well-known/openid-configuration", "oidc_client_id": "dash"})
        async with client(svc, auth="jwt") as c:
            start = await c.get("/ui/oidc/start", params={"next": "/ui/profile"})
            assert start.status_code == 303 and start.headers["location"].startswith(idp.url + "/authorize?")
            assert "SameSite=lax" in start.headers["set-cookie"] and "code_challenge_method=S256" in \
                start.headers["location"]
            async with httpx2.AsyncClient() as browser_side:
                back = await browser_side.get(start.headers["location"])       # the IdP signs carol in
            callback = back.headers["location"].replace("http://127.0.0.1:8765", "")
            forged = await c.get(callback.replace("state=", "state=x"))
            assert forged.status_code == 401 and "state mismatch" in forged.text
            ok = await c.get(callback)
            assert ok.status_code == 200 and 'content="0;url=/ui/profile?done=signed_in"' in ok.text
            assert "HttpOnly" in ok.headers["set-cookie"]
            assert "carol" in (await c.get("/ui/profile")).text
            again = await c.get(callback)                                       # the code is spent
            assert again.status_code == 401
            c.cookies.clear()
            assert (await c.get(callback)).status_code == 401                   # no flow cookie
    log = await svc.store.list_audit(limit=100)
    assert any(e.action == "ui signin oidc" and e.outcome == "ok" and e.actor == "carol" for e in log)
    assert any(e.action == "ui signin oidc" and e.outcome == "refused:401" for e in log)

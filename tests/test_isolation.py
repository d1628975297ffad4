"""The isolation suite (issue 12, requirement 9): a real `gieok serve` over HTTP with auth on (API keys and JWTs
from a fake IdP on 127.0.0.1), on every backend. Three users in two teams (alice and bob in `eng`, carol in
`ops`) each store private, team and public memories; then every tool, resource, prompt and route is tried as
each user — with spoofed identity headers, other users' ids, guessed UUIDs, `user_id` arguments, expired,
forged, wrong-audience and `alg: none` tokens, revoked keys and another principal's session. Every answer is
checked against what that user may see: zero leaks. It prints how many requests it tried."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from gieok.auth.admin import Admin
from gieok.core.principal import Principal
from gieok.store import open_store
from tests.fakes.idp import AUDIENCE, ISSUER, FakeIdP, alg_none_token
from tests.test_mcp_e2e import GIEOK, free_port, server_env

TEAMS = {"alice": "eng", "bob": "eng", "carol": "ops"}
SCOPES = ("private", "team", "public")


def marker(user: str, scope: str) -> str:
    return f"zq{user}{scope}x"


def visible(viewer: str, owner: str, scope: str) -> bool:
    return owner == viewer or scope == "public" or (scope == "team" and TEAMS[owner] == TEAMS[viewer])


@dataclass
class World:
    url: str
    keys: dict[str, str]                     # user → API key
    admin_key: str
    viewer_key: str                          # carol, role viewer
    revoked_key: str
    idp: FakeIdP
    ids: dict[tuple[str, str], str] = field(default_factory=dict)   # (owner, scope) → memory id
    requests: int = 0

    def hooks(self) -> dict[str, list[Any]]:
        async def count(_: httpx2.Request) -> None:
            self.requests += 1
        return {"request": [count]}

    def assert_no_leak(self, viewer: str, text: str, where: str, asked: tuple[str, ...] = ()) -> None:
        """No content of a memory `viewer` may not see, nor its id (unless the request itself named it)."""
        for owner in TEAMS:
            for scope in SCOPES:
                if not visible(viewer, owner, scope):
                    assert marker(owner, scope) not in text, f"LEAK to {viewer} via {where}: {owner}/{scope}"
                    mid = self.ids.get((owner, scope), "-")
                    assert mid in asked or mid not in text, f"LEAK (id) to {viewer} via {where}"


def _start(env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen([GIEOK, "serve", "--transport", "http", "--port", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx2.get(url + "/health", timeout=0.5).json().get("ok"):
                return proc, url
        except Exception:
            time.sleep(0.2)
        if proc.poll() is not None:
            raise RuntimeError(proc.stderr.read().decode() if proc.stderr else "server died")
    proc.kill()
    raise RuntimeError("server did not start in 30 s")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


async def _make_keys(db_url: str) -> dict[str, str]:
    store = open_store(db_url)
    await store.open()
    try:
        a = Admin(store, Principal("cli:test", roles=("admin",)))
        out = {u: (await a.create_key(u, teams=[t])).key.token for u, t in TEAMS.items()}
        out["_admin"] = (await a.create_key("root", role="admin")).key.token
        out["_viewer"] = (await a.create_key("carol", role="viewer", teams=["ops"])).key.token
        revoked = await a.create_key("alice", teams=["eng"])
        await a.revoke_key(revoked.key.key_id)
        out["_revoked"] = revoked.key.token
        return out
    finally:
        await store.close()


@pytest.fixture
def world(db_url: str, tmp_path: Path) -> Iterator[World]:
    keys = asyncio.run(_make_keys(db_url))
    with FakeIdP() as idp:
        env = server_env(db_url, tmp_path, GIEOK_AUTH="apikey,jwt", GIEOK_JWT_JWKS_URL=idp.jwks_url,
                         GIEOK_JWT_ISSUER=ISSUER, GIEOK_JWT_AUDIENCE=AUDIENCE, GIEOK_LIBRARIAN="false",
                         GIEOK_RATE_LIMIT_PER_MIN="100000", GIEOK_RATE_LIMIT_BURST="5000")
        proc, url = _start(env)
        try:
            yield World(url, {u: keys[u] for u in TEAMS}, keys["_admin"], keys["_viewer"], keys["_revoked"], idp)
        finally:
            _stop(proc)


def data(result: Any) -> Any:
    assert not result.is_error, result.content
    sc = result.structured_content
    if sc is not None:
        return sc.get("result", sc) if isinstance(sc, dict) and set(sc) == {"result"} else sc
    return json.loads(result.content[0].text)


def text_of(result: Any) -> str:
    return json.dumps(result.model_dump(mode="json"), ensure_ascii=False)


@asynccontextmanager
async def _client(w: World, token: str, headers: dict[str, str] | None = None,
                  ) -> AsyncIterator[tuple[Client, httpx2.AsyncClient]]:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}", **(headers or {})}, timeout=30,
                                  event_hooks=w.hooks()) as http, \
            Client(streamable_http_client(w.url + "/mcp", http_client=http)) as client:
        yield client, http


async def _seed(w: World) -> None:
    for user in TEAMS:
        async with _client(w, w.keys[user]) as (client, _):
            for scope in SCOPES:
                args: dict[str, Any] = {"action": "add", "content": f"{marker(user, scope)} 회의 메모 deploy notes",
                                        "privacy_scope": scope}
                if scope == "team":
                    args["team"] = TEAMS[user]
                w.ids[(user, scope)] = data(await client.call_tool("manage_knowledge", args))["id"]
            bad = await client.call_tool("manage_knowledge", {"action": "add", "content": "x",
                                                               "privacy_scope": "team", "team": "ops" if
                                                               TEAMS[user] == "eng" else "eng"})
            assert bad.is_error and "not a member" in text_of(bad)


async def _attack_as(w: World, user: str, token: str) -> None:
    others = [(o, s) for o in TEAMS for s in SCOPES if o != user]
    async with _client(w, token) as (client, _):
        for q in [marker(o, s) for o in TEAMS for s in SCOPES] + ["회의", "deploy", None]:
            for tool in ("search_memory", "recall"):
                if tool == "recall" and q is None:
                    continue
                r = await client.call_tool(tool, {"query": q} if q else {})
                w.assert_no_leak(user, text_of(r), f"{tool}({q})")
            r = await client.call_tool("load_context", {"query": q or "deploy", "project": "x"})
            w.assert_no_leak(user, text_of(r), "load_context")
        found = {h["id"] for h in data(await client.call_tool("search_memory", {"query": "deploy",
                                                                                 "limit": 50}))["results"]}
        want = {w.ids[(o, s)] for o in TEAMS for s in SCOPES if visible(user, o, s)}
        assert found == want, (user, found ^ want)            # sees exactly what it may, no more, no less
        p = await client.get_prompt("memory_injection", {"query": "deploy"})
        w.assert_no_leak(user, text_of(p), "prompt")
        w.assert_no_leak(user, text_of(await client.call_tool("export", {})), "export")
        for (o, s) in others:
            mid = w.ids[(o, s)]
            try:
                res = text_of(await client.read_resource("memory://" + mid))
                assert visible(user, o, s), f"LEAK: memory://{mid} of {o}/{s} read by {user}"
            except Exception as exc:  # an MCP error: not found for this user
                assert not visible(user, o, s) or "belongs" in str(exc), exc
                res = ""
            w.assert_no_leak(user, res, "resource", asked=(mid,))
            for tool, args in (("forget", {"id": mid, "hard": True}), ("pin", {"id": mid}), ("unpin", {"id": mid}),
                               ("manage_knowledge", {"action": "update", "id": mid, "content": "pwned"}),
                               ("manage_knowledge", {"action": "update", "id": mid, "privacy_scope": "public"}),
                               ("link", {"src": w.ids[(user, "private")], "dst": mid, "rel": "cause_of"})):
                r = await client.call_tool(tool, args)
                assert r.is_error, f"{user} could {tool} {o}/{s}"
                w.assert_no_leak(user, text_of(r), tool, asked=(mid,))
            r = await client.call_tool("feedback", {"memory_id": mid, "helpful": False})
            assert r.is_error == (not visible(user, o, s)), (user, o, s)
        guessed = str(uuid.UUID(int=uuid.uuid4().int))
        for tool, args in (("forget", {"id": guessed}), ("feedback", {"memory_id": guessed, "helpful": True})):
            assert (await client.call_tool(tool, args)).is_error
        prof = [r for r in [await _safe_read(client, f"profile://{o}") for o in TEAMS if o != user]]
        assert all(r is None for r in prof)
        # A user_id argument never switches the user.
        r = await client.call_tool("search_memory", {"query": "deploy", "user_id": "bob" if user != "bob" else "alice"})
        w.assert_no_leak(user, text_of(r), "user_id argument")
    # Spoofed identity header: refused (not admin), and nothing leaks.
    victim = "carol" if user != "carol" else "alice"
    async with _client(w, token, {"X-Gieok-User": victim}) as (client, _):
        r = await client.call_tool("search_memory", {"query": "deploy"})
        assert r.is_error and "admin" in text_of(r)
        w.assert_no_leak(user, text_of(r), "X-Gieok-User")


async def _safe_read(client: Client, uri: str) -> str | None:
    try:
        return text_of(await client.read_resource(uri))
    except Exception:
        return None


async def _rest(w: World) -> None:
    async with httpx2.AsyncClient(timeout=30, event_hooks=w.hooks()) as http:
        for user in TEAMS:
            h = {"Authorization": f"Bearer {w.keys[user]}"}
            r = await http.get(w.url + "/v1/context", params={"query": "deploy"}, headers=h)
            assert r.status_code == 200
            w.assert_no_leak(user, r.text, "/v1/context")
            other = "carol" if user != "carol" else "alice"
            for params, extra in (({"user_id": other}, {}), ({}, {"X-Gieok-User": other})):
                r = await http.get(w.url + "/v1/context", params={"query": "deploy", **params}, headers={**h, **extra})
                assert r.status_code == 403, r.text
                w.assert_no_leak(user, r.text, "/v1/context spoof")
            r = await http.post(w.url + "/v1/messages", headers=h, json={"content": "spoof", "user_id": other})
            assert r.status_code == 403 and r.json()["stored"] == []
            r = await http.post(w.url + "/v1/messages", headers={"X-Api-Key": w.keys[user]},
                                json={"content": f"captured by {user}", "privacy_scope": "private"})
            assert r.status_code == 200, r.text
        # Credentials that must never work, on every door.
        tok = w.idp
        bad = {"none": None, "expired jwt": tok.token("alice", ttl=-300),
               "wrong audience": tok.token("alice", aud="other-server"), "alg none": alg_none_token("alice"),
               "forged": tok.token("alice", key=FakeIdP().rsa_key), "revoked key": w.revoked_key,
               "malformed key": "gieok_zzzz", "guessed key": "gieok_0123456789ab_" + "A" * 43}
        for what, token in bad.items():
            for method, path in (("POST", "/mcp"), ("GET", "/v1/context"), ("POST", "/v1/messages")):
                headers = {"Authorization": f"Bearer {token}"} if token else {}
                r = await http.request(method, w.url + path, headers=headers, json={"content": "x"} if
                                       method == "POST" else None)
                assert r.status_code == 401, (what, path, r.status_code, r.text)
                assert "www-authenticate" in r.headers and "resource_metadata" in r.headers["www-authenticate"]
                w.assert_no_leak("nobody" if False else "carol", r.text, what)
        meta = await http.get(w.url + "/.well-known/oauth-protected-resource/mcp")
        assert meta.status_code == 200 and meta.json()["resource"].endswith("/mcp")


async def _jwt_users(w: World) -> None:
    # The same three users through the IdP (RS256 and ES256): the same visibility, from the token's claims.
    for user, alg in (("alice", "RS256"), ("carol", "ES256")):
        await _attack_as(w, user, w.idp.token(user, groups=[TEAMS[user]], alg=alg))


async def _roles_and_sessions(w: World) -> None:
    async with _client(w, w.viewer_key) as (client, _):
        r = await client.call_tool("manage_knowledge", {"action": "add", "content": "viewer writes"})
        assert r.is_error and "viewer" in text_of(r)
        w.assert_no_leak("carol", text_of(await client.call_tool("search_memory", {"query": "deploy"})), "viewer")
    async with _client(w, w.admin_key, {"X-Gieok-User": "bob"}) as (client, _):
        r = data(await client.call_tool("search_memory", {"query": marker("bob", "private")}))
        assert [h["id"] for h in r["results"]] == [w.ids[("bob", "private")]]   # admin acting for bob (audited)
    # A session opened by alice cannot be used with bob's key.
    async with httpx2.AsyncClient(timeout=30, event_hooks=w.hooks()) as http:
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
        acc = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        r = await http.post(w.url + "/mcp", json=init, headers={**acc, "Authorization": f"Bearer {w.keys['alice']}"})
        sid = r.headers.get("mcp-session-id")
        assert sid
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "search_memory", "arguments": {"query": "deploy"}}}
        r = await http.post(w.url + "/mcp", json=call, headers={**acc, "mcp-session-id": sid,
                                                                 "mcp-protocol-version": "2025-06-18",
                                                                 "Authorization": f"Bearer {w.keys['bob']}"})
        assert r.status_code in (403, 404), r.status_code
        w.assert_no_leak("bob", r.text, "session hijack")


def test_isolation(world: World, db_url: str) -> None:
    t0 = time.monotonic()

    async def go() -> None:
        await _seed(world)
        for user in TEAMS:
            await _attack_as(world, user, world.keys[user])
        await _jwt_users(world)
        await _rest(world)
        await _roles_and_sessions(world)
    asyncio.run(go())
    backend = db_url.split(":", 1)[0]
    print(f"\nisolation suite ({backend}): {world.requests} requests tried, 0 leaks, "
          f"{time.monotonic() - t0:.1f} s")
    assert world.requests > 300
    # Denied attempts and shared reads are in the audit log.
    out = subprocess.run([GIEOK, "audit", "--json", "--limit", "0"], env={**os.environ, "GIEOK_DATABASE_URL": db_url},
                         capture_output=True, text=True, timeout=60)
    entries = [json.loads(x) for x in out.stdout.splitlines()]
    assert any(e["outcome"] == "denied" for e in entries)
    assert any(e["outcome"] == "refused:401" for e in entries)
    assert any(e["detail"] == "read shared" and e["owners"] for e in entries)
    assert any(e["on_behalf"] == "bob" and e["actor"] == "root" for e in entries)


def test_limits_refuse_clearly_and_write_nothing(tmp_path: Path) -> None:
    """Requirement 8: per-key token bucket (429 + Retry-After), body size (413), batch size (413), each audited
    and with nothing half-written."""
    db_url = f"sqlite:///{tmp_path / 'limits.db'}"
    keys = asyncio.run(_make_keys(db_url))
    env = server_env(db_url, tmp_path, GIEOK_AUTH="apikey", GIEOK_LIBRARIAN="false", GIEOK_RATE_LIMIT_PER_MIN="60",
                     GIEOK_RATE_LIMIT_BURST="5", GIEOK_MAX_BODY_BYTES="4096", GIEOK_MAX_BATCH="3")
    proc, url = _start(env)
    try:
        h = {"Authorization": f"Bearer {keys['alice']}"}
        big = httpx2.post(url + "/v1/messages", headers=h, json={"content": "x" * 5000}, timeout=10)
        assert big.status_code == 413 and "GIEOK_MAX_BODY_BYTES" in big.json()["error"]
        batch = httpx2.post(url + "/v1/messages", headers=h, json=[{"content": f"m{i}"} for i in range(4)],
                            timeout=10)
        assert batch.status_code == 413 and batch.json()["stored"] == []
        half = httpx2.post(url + "/v1/messages", headers=h, json=[{"content": "good"}, {"content": ""}], timeout=10)
        assert half.status_code == 400 and half.json()["stored"] == [] and "content" in half.json()["error"]
        statuses = [httpx2.get(url + "/v1/context", headers=h, timeout=10) for _ in range(8)]  # burst 5
        limited = [r for r in statuses if r.status_code == 429]
        assert limited and int(limited[0].headers["retry-after"]) >= 1 and "rate limit" in limited[0].json()["error"]
        other = httpx2.get(url + "/v1/context", headers={"Authorization": f"Bearer {keys['bob']}"}, timeout=10)
        assert other.status_code == 200                      # the bucket is per key
    finally:
        _stop(proc)
    out = subprocess.run([GIEOK, "search", "good", "--user", "alice", "--json"],
                         env={**os.environ, "GIEOK_DATABASE_URL": db_url, "GIEOK_EMBEDDER": "none"},
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "good" not in out.stdout  # the refused batch left nothing behind
    audit = subprocess.run([GIEOK, "audit", "--json", "--limit", "0"], env={**os.environ, "GIEOK_DATABASE_URL": db_url},
                           capture_output=True, text=True, timeout=60).stdout
    assert "refused:429" in audit and "refused:413" in audit

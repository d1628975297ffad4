"""End to end: `gieok serve` as a real subprocess, driven by the SDK's client over stdio and Streamable HTTP,
and by the MCP Inspector CLI (npx). Runs against every backend."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

GIEOK = str(Path(sys.executable).with_name("gieok"))
NODE_DIR = Path(__file__).parent / "node"
INSPECTOR = NODE_DIR / "node_modules" / ".bin" / "mcp-inspector"


def server_env(db_url: str, home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIEOK_")}
    env.update(GIEOK_DATABASE_URL=db_url, GIEOK_HOME=str(home), GIEOK_USER_ID="alice", GIEOK_EMBEDDER="none",
               GIEOK_LIBRARIAN="true", GIEOK_LIBRARIAN_INTERVAL_S="1", GIEOK_TOOLS="full", OMP_NUM_THREADS="1",
               HOME=str(home))
    env.update(extra)
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def http_server(db_url: str, tmp_path: Path) -> Iterator[str]:
    yield from _serve(db_url, tmp_path)


def _serve(db_url: str, tmp_path: Path, **extra: str) -> Iterator[str]:
    port = free_port()
    env = server_env(db_url, tmp_path, GIEOK_AGENT_PLATFORM="", **extra)
    proc = subprocess.Popen([GIEOK, "serve", "--transport", "http", "--port", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx2.get(url + "/health", timeout=0.5).json().get("ok"):
                break
        except Exception:
            time.sleep(0.2)
        if proc.poll() is not None:
            raise RuntimeError(proc.stderr.read().decode() if proc.stderr else "server died")
    else:
        proc.kill()
        raise RuntimeError("server did not start in 30 s")
    try:
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def data(result: Any) -> Any:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        sc = result.structured_content
        return sc.get("result", sc) if isinstance(sc, dict) and set(sc) == {"result"} else sc
    return json.loads(result.content[0].text)


async def exercise(client: Client) -> None:
    tools = {t.name for t in (await client.list_tools()).tools}
    assert {"search_memory", "manage_knowledge", "load_context", "remember", "forget", "export"} <= tools
    added = data(await client.call_tool("manage_knowledge",
                                        {"action": "add", "content": "내일 팀 회의는 오후 3시, 커피 필수"}))
    assert added["stored"] is True and added["id"]
    assert added["tagged"] == "ok"          # offline tagger runs synchronously for explicit memory
    assert added["embedded"] == "pending"   # no embedder configured in this test
    data(await client.call_tool("manage_knowledge", {"action": "add", "content": "Deploys happen every Friday"}))
    found = data(await client.call_tool("search_memory", {"query": "회의"}))
    assert [r["id"] for r in found["results"]][:1] == [added["id"]]
    assert found["results"][0]["recall_reason"]
    ctx = data(await client.call_tool("load_context", {"query": "deploy"}))
    assert "Deploys happen every Friday" in ctx["text"] and ctx["tokens"] <= ctx["budget"]
    bad = await client.call_tool("search_memory", {"query": "x", "date_range": "sometime soon"})
    assert bad.is_error and "date_range" in bad.content[0].text
    bad_role = await client.call_tool("search_memory", {"query": "x", "role": "robot"})
    assert bad_role.is_error and "role" in bad_role.content[0].text
    # Arguments the tool's schema refuses are named field by field, never as pydantic's dump.
    wrong = await client.call_tool("manage_knowledge", {"action": "delete", "content": "x"})
    assert wrong.is_error and wrong.content[0].text == (
        "manage_knowledge: action: 'delete' is not one of 'add', 'update', 'remove', 'pin' or 'unpin'; use one of "
        "them"), wrong.content[0].text
    zero = await client.call_tool("search_memory", {"query": "x", "limit": 0})
    assert zero.is_error and "search_memory: limit: 0 is out of range; it must be at least 1" in zero.content[0].text
    assert not any(w in t.content[0].text for t in (wrong, zero) for w in ("pydantic", "validation error", "type="))
    gone = data(await client.call_tool("forget", {"id": added["id"], "hard": True}))
    assert gone["forgotten"] == "hard"
    after = data(await client.call_tool("search_memory", {"query": "회의"}))
    assert added["id"] not in [r["id"] for r in after["results"]]
    exported = data(await client.call_tool("export", {"format": "ndjson"}))
    assert added["id"] not in exported["data"] and exported["count"] == 1
    missing = await client.call_tool("forget", {"id": added["id"]})
    assert missing.is_error
    res = await client.read_resource("memory://" + json.loads(exported["data"].splitlines()[0])["id"])
    assert "Deploys" in res.contents[0].text
    prompt = await client.get_prompt("memory_injection", {"query": "deploy", "token_budget": "500"})
    assert "Deploys happen every Friday" in prompt.messages[0].content.text


async def test_stdio(db_url: str, tmp_path: Path) -> None:
    params = StdioServerParameters(command=GIEOK, args=["serve", "--transport", "stdio"],
                                   env=server_env(db_url, tmp_path))
    async with Client(params) as client:
        await exercise(client)


async def test_http_with_identity_headers(http_server: str) -> None:
    headers = {"X-Gieok-Platform": "Codex", "X-Gieok-Model": "GPT-5.5"}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http, \
            Client(streamable_http_client(http_server + "/mcp", http_client=http)) as client:
        await exercise(client)
        data(await client.call_tool("manage_knowledge", {"action": "add", "content": "identity probe"}))
        found = data(await client.call_tool("search_memory", {"query": "identity probe", "platform": "codex"}))
        assert found["results"] and found["results"][0]["agent_platform"] == "codex"
        assert found["results"][0]["agent_model"] == "gpt-5.5"


async def test_stateless_replicas_answer_with_one_json_body(db_url: str, tmp_path: Path) -> None:
    """GIEOK_STATELESS_HTTP (replicas behind a load balancer): no session, so no event stream either; the SDK's
    client takes the JSON answers as they are."""
    for url in _serve(db_url, tmp_path, GIEOK_STATELESS_HTTP="true"):
        async with Client(streamable_http_client(url + "/mcp")) as client:
            await exercise(client)
        r = httpx2.post(url + "/mcp", headers={"Accept": "application/json, text/event-stream"}, timeout=30,
                        json={"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                              "params": {"name": "search_memory", "arguments": {"query": "deploy"}}})
        assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
        assert r.json()["id"] == 7 and not r.json()["result"]["isError"]


def test_http_messages_endpoint(http_server: str) -> None:
    ok = httpx2.post(http_server + "/v1/messages", json=[
        {"content": "hermes agent turn", "role": "assistant", "platform": "hermes-agent", "session_id": "h1"},
        {"content": "user turn", "role": "user", "session_id": "h1"}], timeout=10)
    assert ok.status_code == 200 and len(ok.json()["stored"]) == 2
    bad = httpx2.post(http_server + "/v1/messages", json={"content": "", "role": "user"}, timeout=10)
    assert bad.status_code == 400 and "content" in bad.json()["error"]
    bad2 = httpx2.post(http_server + "/v1/messages", json={"content": "x", "role": "wizard"}, timeout=10)
    assert bad2.status_code == 400 and "role" in bad2.json()["error"]


def _inspector(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(INSPECTOR), "--cli", *args], env=env, capture_output=True, text=True, timeout=90)


@pytest.mark.skipif(not INSPECTOR.exists() and not shutil.which("npx"), reason="run `make node` first")
def test_inspector_cli_stdio(db_url: str, tmp_path: Path) -> None:
    senv = server_env(db_url, tmp_path)
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    # The inspector passes only a default environment to the server it starts: hand ours over with -e.
    flags = [x for k, v in senv.items() if k.startswith(("GIEOK_", "OMP_")) for x in ("-e", f"{k}={v}")]
    cmd = [*flags, GIEOK, "serve", "--transport", "stdio"]
    listed = _inspector([*cmd, "--method", "tools/list"], env)
    assert listed.returncode == 0, listed.stderr
    assert "search_memory" in listed.stdout and "manage_knowledge" in listed.stdout
    added = _inspector([*cmd, "--method", "tools/call", "--tool-name", "manage_knowledge", "--tool-arg",
                        "action=add", "--tool-arg", "content=inspector remembers the coffee order"], env)
    assert added.returncode == 0, added.stderr
    mid = json.loads(added.stdout)["structuredContent"]["id"]
    found = _inspector([*cmd, "--method", "tools/call", "--tool-name", "search_memory", "--tool-arg",
                        "query=coffee"], env)
    assert found.returncode == 0 and mid in found.stdout
    forgot = _inspector([*cmd, "--method", "tools/call", "--tool-name", "forget", "--tool-arg", f"id={mid}"], env)
    assert forgot.returncode == 0 and "soft" in forgot.stdout
    bad = _inspector([*cmd, "--method", "tools/call", "--tool-name", "manage_knowledge", "--tool-arg",
                      "action=add"], env)
    assert bad.returncode != 0 or '"isError": true' in bad.stdout


@pytest.mark.skipif(not INSPECTOR.exists(), reason="run `make node` first")
def test_inspector_cli_http(http_server: str, tmp_path: Path) -> None:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    listed = _inspector([http_server + "/mcp", "--transport", "http", "--method", "tools/list"], env)
    assert listed.returncode == 0, listed.stderr
    assert "load_context" in listed.stdout
    added = _inspector([http_server + "/mcp", "--transport", "http", "--method", "tools/call", "--tool-name",
                        "manage_knowledge", "--tool-arg", "action=add", "--tool-arg", "content=http inspector note"],
                       env)
    assert added.returncode == 0, added.stderr


def test_a_stdio_client_that_goes_away_ends_the_server_quietly(tmp_path: Path) -> None:
    """A client that closes its end before reading the answer (an editor quit mid-search) is the end of the
    session: exit code 0 and one line, not the SDK's task-group traceback of a broken pipe."""
    env = server_env(f"sqlite:///{tmp_path / 'm.db'}", tmp_path)
    p = subprocess.Popen([GIEOK, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=env)
    assert p.stdin is not None and p.stdout is not None and p.stderr is not None
    try:
        def send(msg: dict[str, Any]) -> None:
            assert p.stdin is not None
            p.stdin.write((json.dumps(msg) + "\n").encode())
            p.stdin.flush()
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
        assert b'"id":1' in p.stdout.readline()
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
              "params": {"name": "search_memory", "arguments": {"query": "deploy"}}})
        p.stdout.close()                 # gone before the answer is written
        time.sleep(0.5)
        p.stdin.close()
        rc = p.wait(timeout=30)
        err = p.stderr.read().decode()
    finally:
        if p.poll() is None:
            p.kill()
    assert rc == 0, err
    assert "the MCP client closed its connection" in err
    assert "Traceback" not in err and "BrokenPipeError" not in err

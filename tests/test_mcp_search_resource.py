"""`memory://search?query=…`: a read-only view of a search for clients that preview resources, with
search_memory's filters as percent-encoded query parameters. Driven by the SDK's client over Streamable HTTP
against a real `gieok serve`, and by the MCP Inspector CLI over stdio. Every backend."""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import quote, urlencode

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.test_mcp_e2e import GIEOK, INSPECTOR, _inspector, data, http_server, server_env  # noqa: F401


def search_uri(**params: str) -> str:
    return "memory://search?" + urlencode(params, quote_via=quote)


async def test_search_resource_over_http(http_server: str) -> None:  # noqa: F811
    async with httpx2.AsyncClient(timeout=30) as http, \
            Client(streamable_http_client(http_server + "/mcp", http_client=http)) as client:
        templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
        assert any(t.startswith("memory://search{?query") for t in templates)
        meeting = data(await client.call_tool("manage_knowledge", {"action": "add",
                                                                   "content": "팀 회의는 목요일 오후 3시 / standup"}))
        data(await client.call_tool("manage_knowledge", {"action": "add", "content": "Deploys go out on Tuesdays",
                                                         "tags": ["ops"]}))
        res = json.loads((await client.read_resource(search_uri(query="회의 & 3시", limit="5"))).contents[0].text)
        assert res["query"] == "회의 & 3시" and [r["id"] for r in res["results"]][:1] == [meeting["id"]]
        # The same filters as search_memory: a role or a window with nothing in it narrows to nothing.
        res = json.loads((await client.read_resource(search_uri(query="deploys", role="assistant"))).contents[0].text)
        assert res["results"] == []
        res = json.loads((await client.read_resource(search_uri(query="deploys", tags="ops"))).contents[0].text)
        assert [r["content"] for r in res["results"]] == ["Deploys go out on Tuesdays"]
        res = json.loads((await client.read_resource(search_uri(query="/deploys ../", date_range="3d")))
                         .contents[0].text)
        assert res["results"] and res["results"][0]["content"] == "Deploys go out on Tuesdays"
        newest = json.loads((await client.read_resource("memory://search")).contents[0].text)
        assert newest["mode"] == "recent" and len(newest["results"]) == 2
        with pytest.raises(MCPError) as exc:
            await client.read_resource(search_uri(query="x", date_range="2026-11-30..2026-11-01"))
        assert "date_range" in str(exc.value) and "2026-11-01..2026-11-30" in str(exc.value)
        # memory://{id} still answers, and counts an explicit open.
        one = json.loads((await client.read_resource("memory://" + meeting["id"])).contents[0].text)
        assert one["id"] == meeting["id"] and one["view_count"] == 1


@pytest.mark.skipif(not INSPECTOR.exists(), reason="run `make node` first")
def test_search_resource_with_the_inspector(db_url: str, tmp_path: Path) -> None:
    senv = server_env(db_url, tmp_path)
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    flags = [x for k, v in senv.items() if k.startswith(("GIEOK_", "OMP_")) for x in ("-e", f"{k}={v}")]
    cmd = [*flags, GIEOK, "serve", "--transport", "stdio"]
    added = _inspector([*cmd, "--method", "tools/call", "--tool-name", "manage_knowledge", "--tool-arg",
                        "action=add", "--tool-arg", "content=inspector 커피 주문은 아메리카노"], env)
    assert added.returncode == 0, added.stderr
    mid = json.loads(added.stdout)["structuredContent"]["id"]
    listed = _inspector([*cmd, "--method", "resources/templates/list"], env)
    assert listed.returncode == 0 and "memory://search{?query" in listed.stdout
    read = _inspector([*cmd, "--method", "resources/read", "--uri", search_uri(query="커피 주문")], env)
    assert read.returncode == 0, read.stderr
    body = json.loads(json.loads(read.stdout)["contents"][0]["text"])
    assert [r["id"] for r in body["results"]] == [mid]

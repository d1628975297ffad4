"""The plain HTTP routes answer with the status that says what went wrong: 400 for bad input (the caller can fix
it), 404 for something that does not exist, 500 when the database failed (the caller cannot fix it). The routes
run on a real uvicorn server on 127.0.0.1 over a real store; only the failure is planted."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest
import uvicorn
from mcp.server import MCPServer

from gieok.auth.team import TeamAuth
from gieok.core.errors import NotFound, StoreError
from gieok.mcp.http_routes import register_http_routes
from gieok.mcp.state import ServiceSlot
from gieok.memory.service import MemoryService


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
async def base_url(svc: MemoryService) -> AsyncIterator[str]:
    slot = ServiceSlot()
    slot.open(svc)
    mcp: MCPServer[Any] = MCPServer("routes-under-test")
    register_http_routes(mcp, slot, TeamAuth(svc.settings))  # auth off: the local single-user server
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(mcp.streamable_http_app(), host="127.0.0.1", port=port, lifespan="off",
                                           log_level="warning"))
    task = asyncio.create_task(server.serve())
    async with asyncio.timeout(10):
        while not server.started:
            await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)


def _fail(exc: Exception) -> Any:
    async def broken(*args: object, **kw: object) -> Any:
        raise exc
    return broken


async def test_bad_input_is_400(base_url: str) -> None:
    async with httpx2.AsyncClient(timeout=5) as http:
        r = await http.post(base_url + "/v1/messages", json={"content": "", "role": "user"})
        assert r.status_code == 400 and "content" in r.json()["error"]
        r = await http.get(base_url + "/v1/context", params={"budget": "12"})
        assert r.status_code == 400 and "budget" in r.json()["error"]


async def test_a_failing_database_is_500_and_says_what_was_stored(base_url: str, svc: MemoryService,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    async with httpx2.AsyncClient(timeout=5) as http:
        r = await http.post(base_url + "/v1/messages", json={"content": "회의는 목요일 10시", "role": "user"})
        assert r.status_code == 200
        monkeypatch.setattr(svc.store, "insert_batch", _fail(StoreError("database is locked")))
        r = await http.post(base_url + "/v1/messages", json=[{"content": "second", "role": "user"}])
        assert r.status_code == 500
        assert r.json() == {"error": "database is locked", "stored": []}
        monkeypatch.setattr(svc.store, "list_memories", _fail(StoreError("database is locked")))
        r = await http.get(base_url + "/v1/context")
        assert r.status_code == 500 and r.json()["error"] == "database is locked"


async def test_something_missing_is_404(base_url: str, svc: MemoryService, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(svc.store, "get_user", _fail(NotFound("no user 'alice'")))
    async with httpx2.AsyncClient(timeout=5) as http:
        r = await http.get(base_url + "/v1/context")
        assert r.status_code == 404 and "alice" in r.json()["error"]

"""The load generator of `gieok bench load`: N simulated agents, each a user with its own credentials, mixing
capture (`POST /v1/messages`) with the MCP tools `search_memory`, `load_context` and `remember` against a set
of replicas, for a bounded time.

MCP calls are Streamable HTTP requests as the protocol defines them (a JSON-RPC `tools/call` POST to `/mcp`,
the answer read from its JSON or SSE body), sent to stateless replicas (GIEOK_STATELESS_HTTP) so that any
replica may answer any call, as behind a round-robin load balancer. The SDK's own client is exercised by the
end-to-end tests; here a dead replica must cost one failed request, not a client's whole session.

Every write carries a unique marker, so afterwards the database can be checked against what was acknowledged.
Capture is retried once on another replica after a connection failure with the very same body (same
`created_at`): the hot path's idempotency must keep that from storing the row twice.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx2

OPS = ("messages", "search_memory", "load_context", "remember")
DEFAULT_MIX = {"messages": 0.55, "search_memory": 0.25, "load_context": 0.1, "remember": 0.1}
WORDS = ("deploy", "tuesday", "postgres", "회의", "커피", "배포", "budget", "review", "incident", "일정", "release",
         "migration", "고객", "report", "design", "테스트", "invoice", "schema", "latency", "계약")
ERROR_BACKOFF_S = 0.25
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@dataclass
class Sample:
    op: str
    t: float            # seconds since the run started, when the request was sent
    ms: float
    ok: bool
    error: str = ""


@dataclass
class Tally:
    samples: list[Sample] = field(default_factory=list)
    acked: set[str] = field(default_factory=set)       # markers of writes the server acknowledged
    sent: set[str] = field(default_factory=set)        # markers of every write attempted
    retried: int = 0


class Replicas:
    """Round-robin over the replicas, as a load balancer's passive health check would: a replica that failed to
    connect is skipped for 2 s, then tried by one request; each further failure doubles the wait (up to 16 s),
    a success clears it. A fixed 2 s had every agent try a dead replica again every 2 s, so on a slow machine
    (fewer requests) the errors after a kill were a larger share of the run."""

    FIRST_WAIT_S = 2.0
    MAX_WAIT_S = 16.0

    def __init__(self, urls: list[str]) -> None:
        self.urls = urls
        self._next = 0
        self._down_until: dict[str, float] = {}
        self._wait: dict[str, float] = {}

    def pick(self, avoid: str | None = None) -> str:
        now = time.monotonic()
        for _ in range(len(self.urls)):
            url = self.urls[self._next % len(self.urls)]
            self._next += 1
            if url != avoid and self._down_until.get(url, 0) <= now:
                if url in self._wait:
                    # A probe: the others keep skipping it until this request has told.
                    self._down_until[url] = now + self._wait[url]
                return url
        return self.urls[self._next % len(self.urls)]

    def ok(self, url: str) -> None:
        if self._wait.pop(url, None) is not None:
            self._down_until.pop(url, None)

    def failed(self, url: str) -> None:
        wait = min(self.MAX_WAIT_S, 2 * self._wait[url]) if url in self._wait else self.FIRST_WAIT_S
        self._wait[url] = wait
        self._down_until[url] = time.monotonic() + wait


class CallFailed(Exception):
    pass


async def call_tool(http: httpx2.AsyncClient, base: str, headers: dict[str, str], name: str,
                    args: dict[str, Any], rid: int) -> Any:
    body = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": name, "arguments": args}}
    resp = await http.post(base + "/mcp", json=body, headers={**MCP_HEADERS, **headers})
    if resp.status_code != 200:
        raise CallFailed(f"HTTP {resp.status_code}")
    msg = _jsonrpc_answer(resp.headers.get("content-type", ""), resp.text, rid)
    if "error" in msg:
        raise CallFailed(f"JSON-RPC error {msg['error'].get('code')}")
    result = msg.get("result") or {}
    if result.get("isError"):
        raise CallFailed("tool error: " + " ".join(c.get("text", "") for c in result.get("content", []))[:200])
    return result.get("structuredContent") or result


def _jsonrpc_answer(content_type: str, text: str, rid: int) -> dict[str, Any]:
    if content_type.startswith("application/json"):
        return dict(json.loads(text))
    for line in text.splitlines():   # text/event-stream: the answer is one `data:` event among others
        if line.startswith("data:"):
            msg = json.loads(line[5:].strip())
            if isinstance(msg, dict) and msg.get("id") == rid:
                return msg
    raise CallFailed("no JSON-RPC answer in the event stream")


@dataclass
class Agent:
    """One simulated agent: a user, its credentials, its session, its own random stream."""

    n: int
    user: str
    headers: dict[str, str]
    rng: random.Random
    seq: int = 0

    def marker(self) -> str:
        self.seq += 1
        return f"lt{self.n}x{self.seq}"

    def words(self, k: int) -> str:
        return " ".join(self.rng.choice(WORDS) for _ in range(k))


async def run_agent(agent: Agent, http: httpx2.AsyncClient, replicas: Replicas, tally: Tally, *, t0: float,
                    deadline: float, mix: dict[str, float], think_s: float) -> None:
    ops, weights = zip(*mix.items(), strict=True)
    while time.monotonic() < deadline:
        op = agent.rng.choices(ops, weights)[0]
        start = time.monotonic()
        try:
            await _one(op, agent, http, replicas, tally)
        except (CallFailed, httpx2.HTTPError, OSError, ValueError) as exc:
            tally.samples.append(Sample(op, start - t0, (time.monotonic() - start) * 1000, False,
                                        f"{type(exc).__name__}: {exc}"[:160]))
            await asyncio.sleep(ERROR_BACKOFF_S)   # as a real client would, rather than spin on a dead replica
        else:
            tally.samples.append(Sample(op, start - t0, (time.monotonic() - start) * 1000, True))
        if think_s:
            await asyncio.sleep(agent.rng.uniform(0.5, 1.5) * think_s)


async def _one(op: str, agent: Agent, http: httpx2.AsyncClient, replicas: Replicas, tally: Tally) -> None:
    if op == "messages":
        mark = agent.marker()
        body = {"content": f"{mark} {agent.words(12)}", "role": agent.rng.choice(("user", "assistant")),
                "platform": "load-agent", "session_id": f"load-{agent.n}",
                "created_at": datetime.now(UTC).isoformat()}
        tally.sent.add(mark)
        url = replicas.pick()
        try:
            resp = await http.post(url + "/v1/messages", json=body, headers=agent.headers)
        except httpx2.TransportError:
            replicas.failed(url)
            tally.retried += 1
            url = replicas.pick(avoid=url)
            resp = await http.post(url + "/v1/messages", json=body, headers=agent.headers)
        replicas.ok(url)
        if resp.status_code != 200:
            raise CallFailed(f"HTTP {resp.status_code}: {resp.text[:120]}")
        if len(resp.json().get("stored", [])) != 1:
            raise CallFailed("answer does not list the stored row")
        tally.acked.add(mark)
        return
    url = replicas.pick()
    try:
        if op == "remember":
            mark = agent.marker()
            tally.sent.add(mark)
            res = await call_tool(http, url, agent.headers, "remember",
                                  {"content": f"{mark} remember {agent.words(8)}"}, agent.seq)
            if not res.get("stored"):
                raise CallFailed("remember did not say stored")
            tally.acked.add(mark)
        elif op == "search_memory":
            await call_tool(http, url, agent.headers, "search_memory", {"query": agent.words(2), "limit": 10},
                            agent.seq)
        else:
            await call_tool(http, url, agent.headers, "load_context",
                            {"query": agent.words(2), "token_budget": 2000}, agent.seq)
    except httpx2.TransportError:
        replicas.failed(url)
        raise
    replicas.ok(url)


async def generate(urls: list[str], users: list[tuple[str, dict[str, str]]], *, clients: int, duration_s: float,
                   mix: dict[str, float] | None = None, think_s: float = 0.0, seed: int = 13,
                   at_half: Callable[[], object] | None = None) -> tuple[Tally, float]:
    """Run `clients` agents for `duration_s` seconds; `at_half` runs once halfway (the kills). Returns the
    tally and the measured wall time."""
    tally = Tally()
    replicas = Replicas(urls)
    limits = httpx2.Limits(max_connections=clients * 2, max_keepalive_connections=clients * 2)
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(30.0, connect=3.0), limits=limits) as http:
        t0 = time.monotonic()
        deadline = t0 + duration_s
        agents = [Agent(i, users[i % len(users)][0], users[i % len(users)][1], random.Random(seed * 1000 + i))
                  for i in range(clients)]
        tasks = [asyncio.create_task(run_agent(a, http, replicas, tally, t0=t0, deadline=deadline,
                                               mix=mix or DEFAULT_MIX, think_s=think_s)) for a in agents]
        if at_half is not None:
            await asyncio.sleep(duration_s / 2)
            await asyncio.to_thread(at_half)
        await asyncio.gather(*tasks)
        return tally, time.monotonic() - t0

"""A fake LLM provider speaking OpenAI chat completions, Gemini generateContent and Anthropic messages, on
127.0.0.1.

Remote LLM APIs cannot run here, so this stands in for them in tests. It answers with scripted texts (the model's
"reply"), wrapped in each API's own envelope, and logs every request so tests can check what the model was told.
Switch `mode` (or call `fail`) to play a provider that is down, slow, talking garbage or refusing the key:

    with FakeLLMServer() as server:
        llm = OpenAIChatLLM("fake", base_url=server.url, timeout_s=0.5)
        server.script({"results": []})   # the next answer's text is this JSON
        server.mode = "down"             # every request now answers 503
        server.fail("slow", times=1)     # the next request stalls, then back to `mode`
        server.requests[-1].prompt       # system + user text of the last request
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from tests.fakes.background_http import BackgroundHTTPServer, JSONHandler

Mode = Literal["ok", "down", "slow", "garbage", "garbage_body", "unauthorized", "rate_limited", "bad_request"]
MODES: tuple[Mode, ...] = ("ok", "down", "slow", "garbage", "garbage_body", "unauthorized", "rate_limited",
                           "bad_request")

_GEMINI_PATH = re.compile(r"^/v1beta/models/(?P<model>[^/:]+):generateContent$")


@dataclass
class Seen:
    """One request as the server saw it."""

    path: str
    headers: dict[str, str]
    body: Any

    @property
    def prompt(self) -> str:
        """Every piece of prompt text in the request (system and user), whatever the API."""
        if not isinstance(self.body, dict):
            return ""
        texts: list[str] = []
        b = self.body
        if isinstance(b.get("system"), str):  # Anthropic
            texts.append(b["system"])
        for msg in b.get("messages") or []:  # OpenAI, Anthropic
            content = msg.get("content")
            if isinstance(content, str):
                texts.append(content)
            elif isinstance(content, list):
                texts.extend(str(p.get("text", "")) for p in content if isinstance(p, dict))
        for part in (b.get("systemInstruction") or {}).get("parts", []):  # Gemini
            texts.append(str(part.get("text", "")))
        for c in b.get("contents") or []:
            texts.extend(str(p.get("text", "")) for p in c.get("parts", []))
        return "\n".join(texts)


@dataclass
class FakeLLMServer(BackgroundHTTPServer):
    """Start with `with FakeLLMServer() as s:` (or `start()` / `stop()`).

    `script(...)` queues answer texts (a dict/list is sent as its JSON text, a str as is); with nothing queued
    the answer is `default_answer`. `api_key`, when set, must arrive as `Authorization: Bearer …`,
    `x-goog-api-key` or `x-api-key`, else 401. `slow_seconds` is how long "slow" stalls (keep it above the
    client's timeout).
    """

    mode: Mode = "ok"
    api_key: str = ""
    slow_seconds: float = 5.0
    default_answer: Any = field(default_factory=dict)
    requests: list[Seen] = field(default_factory=list)
    _answers: list[Any] = field(default_factory=list)
    _overrides: list[Mode | None] = field(default_factory=list)  # None: answer in `mode`
    _lock: threading.Lock = field(default_factory=threading.Lock)
    thread_name: ClassVar[str] = "fake-llm"

    # -- what tests use ----------------------------------------------------

    def script(self, *answers: Any) -> None:
        """Queue the texts of the next answers, in order."""
        with self._lock:
            self._answers.extend(answers)

    def fail(self, mode: Mode, times: int = 1, *, after: int = 0) -> None:
        """Answer the next `times` requests in `mode` (after `after` more in `self.mode`), then go back to
        `self.mode`."""
        with self._lock:
            self._overrides.extend([None] * after + [mode] * times)

    @property
    def last(self) -> Seen:
        with self._lock:
            return self.requests[-1]

    def _next(self, seen: Seen) -> tuple[Mode, str]:
        with self._lock:
            self.requests.append(seen)
            mode = (self._overrides.pop(0) if self._overrides else None) or self.mode
            answer = self._answers.pop(0) if (self._answers and mode in ("ok", "slow")) else self.default_answer
        return mode, answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)


class _Handler(JSONHandler):
    fake: FakeLLMServer

    def _authorised(self) -> bool:
        key = self.fake.api_key
        if not key:
            return True
        return key in (
            self.headers.get("Authorization", "").removeprefix("Bearer "),
            self.headers.get("x-goog-api-key", ""),
            self.headers.get("x-api-key", ""),
        )

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body: Any = json.loads(raw or b"{}")
        except ValueError:
            body = None
        path = self.path.split("?", 1)[0]
        mode, text = self.fake._next(Seen(path, {k.lower(): v for k, v in self.headers.items()}, body))

        if mode == "slow":
            self.fake._stopping.wait(self.fake.slow_seconds)
            mode = "ok"
        if mode == "down":
            return self._json(503, {"error": {"message": "fake provider is down", "code": 503}})
        if mode == "rate_limited":
            self.send_response(429)
            self.send_header("Retry-After", "1")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        if mode == "unauthorized" or not self._authorised():
            return self._json(401, {"error": {"message": "Incorrect API key provided", "code": 401}})
        if mode == "bad_request":
            return self._json(400, {"error": {"message": "model 'nope' does not exist", "code": 400}})
        if mode == "garbage_body":
            return self._send(200, b"<html>502 Bad Gateway</html>", "text/html")
        if mode == "garbage":
            text = 'Sure! Here are the tags: {"results": [ {"index": 0, "p_tag": '  # cut off mid-object

        if path == "/v1/chat/completions":
            return self._openai(body, text)
        if m := _GEMINI_PATH.match(path):
            return self._gemini(body, m.group("model"), text)
        if path == "/v1/messages":
            return self._anthropic(body, text)
        return self._json(404, {"error": {"message": f"no route {path}", "code": 404}})

    # Each API checks the request the way the real one would, so a client speaking it wrong fails here too.
    def _openai(self, body: Any, text: str) -> None:
        if not isinstance(body, dict) or not body.get("model") or not isinstance(body.get("messages"), list):
            return self._json(400, {"error": {"message": "model and messages are required"}})
        return self._json(200, {
            "id": "chatcmpl-fake", "object": "chat.completion", "model": body["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        })

    def _gemini(self, body: Any, model: str, text: str) -> None:
        if not isinstance(body, dict) or not isinstance(body.get("contents"), list):
            return self._json(400, {"error": {"message": "contents is required", "status": "INVALID_ARGUMENT"}})
        return self._json(200, {
            "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}],
            "modelVersion": model,
        })

    def _anthropic(self, body: Any, text: str) -> None:
        if not self.headers.get("anthropic-version"):
            return self._json(400, {"type": "error", "error": {"type": "invalid_request_error",
                                                                "message": "anthropic-version header is required"}})
        if not isinstance(body, dict) or not body.get("max_tokens") or not isinstance(body.get("messages"), list):
            return self._json(400, {"type": "error", "error": {"type": "invalid_request_error",
                                                                "message": "max_tokens and messages are required"}})
        return self._json(200, {
            "id": "msg_fake", "type": "message", "role": "assistant", "model": body.get("model"),
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
        })


FakeLLMServer.handler_base = _Handler

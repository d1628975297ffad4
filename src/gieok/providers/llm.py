"""The LLM seam of the librarian: one narrow Protocol and three HTTP clients.

Every call asks for a JSON answer and validates it with a pydantic model. A bad answer is an error, never an empty
result (mem0 #3009 lost users' memories by turning a failed parse into `[]`):

- transport failures, timeouts, 408/429/5xx  → `TransientProviderError` (the librarian retries later);
- 400/401/403/404 and other 4xx               → `PermanentProviderError` naming the GIEOK_ setting to check;
- an answer that is not JSON or does not match the schema → `MalformedAnswer("… answer did not match …")`, a
  transient error (a truncated answer is usually a one-off); a refusal of the input → `RejectedInput`.

Clients:
- `OpenAIChatLLM` — `{base}/v1/chat/completions`: OpenAI, xAI, Ollama, vLLM, LM Studio, and other compatibles;
- `GeminiLLM` — `{base}/v1beta/models/{model}:generateContent` with `responseMimeType: application/json`;
- `AnthropicLLM` — `{base}/v1/messages`, asked for JSON only.

Only `make_llm` reads settings; the clients receive plain values.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ValidationError

from gieok.core.errors import ConfigError, MalformedAnswer, RejectedInput
from gieok.core.settings import Settings
from gieok.providers.http_json import JsonPoster

__all__ = [
    "DEFAULT_URLS",
    "LLM",
    "AnthropicLLM",
    "GeminiLLM",
    "OpenAIChatLLM",
    "make_llm",
    "parse_answer",
]

M = TypeVar("M", bound=BaseModel)

DEFAULT_URLS: dict[str, str] = {
    "openai": "https://api.openai.com",
    "gemini": "https://generativelanguage.googleapis.com",
    "anthropic": "https://api.anthropic.com",
}
_SNIPPET = 300


@runtime_checkable
class LLM(Protocol):
    """A chat model that answers with JSON matching a pydantic model.

    `name` ("openai/gpt-4o-mini") is recorded where the answer is used. Errors are `TransientProviderError`
    (retry) or `PermanentProviderError` (do not); a malformed answer is `MalformedAnswer`, retried.
    """

    name: str

    async def complete_json(self, system: str, user: str, schema: type[M]) -> M: ...

    async def aclose(self) -> None:
        """Release the client's connections; the caller that made it (`make_llm`) closes it."""
        ...


def _schema_instruction(schema: type[BaseModel]) -> str:
    # Stated in the prompt for every provider: json_object modes and Anthropic have no other way to see it,
    # and it costs little where the API also receives the schema.
    return (
        "Answer with a single JSON object only — no prose, no code fences — matching this JSON Schema:\n"
        + json.dumps(schema.model_json_schema(), ensure_ascii=False)
    )


_FENCE = re.compile(r"^\s*```(?:json|JSON)?\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)


def parse_answer(label: str, text: str, schema: type[M]) -> M:
    """Validate a model's text answer against `schema`, or raise `MalformedAnswer`.

    Tolerates a code fence or a sentence around the object (common with models that ignore "JSON only"),
    but never guesses values: anything else that does not validate is an error.
    """
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    try:
        data = json.loads(body)
    except ValueError:
        start, end = body.find("{"), body.rfind("}")
        try:
            if start < 0 or end <= start:
                raise ValueError("no JSON object") from None
            data = json.loads(body[start : end + 1])
        except ValueError as exc:
            raise MalformedAnswer(
                f"{label} answer did not match {schema.__name__}: not JSON: {text[:_SNIPPET]!r}") from exc
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        errors = "; ".join(f"{'.'.join(map(str, e['loc'])) or '<root>'}: {e['msg']}" for e in exc.errors()[:5])
        raise MalformedAnswer(
            f"{label} answer did not match {schema.__name__}: {errors}; answer was {text[:_SNIPPET]!r}") from exc


def _dig(label: str, data: Any, *path: str | int) -> Any:
    """data[path...], or a MalformedAnswer saying the envelope was not what the API documents."""
    cur = data
    for key in path:
        try:
            cur = cur[key]
        except (KeyError, IndexError, TypeError):
            raise MalformedAnswer(
                f"{label} answer did not match its API: no {'.'.join(map(str, path))} in "
                f"{json.dumps(data, ensure_ascii=False)[:_SNIPPET]}") from None
    return cur


def _api_base(url: str, version_suffixes: tuple[str, ...]) -> str:
    # People paste "https://api.openai.com/v1" as often as "https://api.openai.com"; accept both.
    base = url.rstrip("/")
    for suf in version_suffixes:
        if base.endswith(suf):
            return base[: -len(suf)]
    return base


class OpenAIChatLLM:
    """OpenAI-compatible chat completions (OpenAI, xAI, Ollama, vLLM, LM Studio).

    `response_format`: "json_schema" (default; supported by OpenAI, xAI, recent Ollama, vLLM and LM Studio —
    the latter rejects "json_object"), "json_object" for older servers, or "none" for servers that support
    neither (the prompt still asks for JSON, and the answer is still validated).
    """

    def __init__(
        self,
        model: str,
        base_url: str = DEFAULT_URLS["openai"],
        api_key: str = "",
        timeout_s: float = 30.0,
        response_format: Literal["json_schema", "json_object", "none"] = "json_schema",
    ) -> None:
        self.name = f"openai/{model}"
        self.model = model
        self.response_format = response_format
        self.url = _api_base(base_url, ("/v1",)) + "/v1/chat/completions"
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._poster = JsonPoster(f"LLM {self.name} at {self.url}", timeout_s, headers, "LLM")

    async def complete_json(self, system: str, user: str, schema: type[M]) -> M:
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": [
                {"role": "system", "content": f"{system}\n\n{_schema_instruction(schema)}"},
                {"role": "user", "content": user},
            ],
        }
        if self.response_format == "json_schema":
            # strict=False: strict mode demands every property be required and no extra keys, which ordinary
            # pydantic schemas (defaults, optional fields) do not satisfy. Validation happens here instead.
            payload["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": schema.__name__, "schema": schema.model_json_schema(), "strict": False},
            }
        elif self.response_format == "json_object":
            payload["response_format"] = {"type": "json_object"}
        data = await self._poster.post(self.url, payload)
        choice = _dig(self.name, data, "choices", 0)
        refusal = choice.get("message", {}).get("refusal") if isinstance(choice, dict) else None
        if refusal:
            raise RejectedInput(f"{self.name} refused: {str(refusal)[:_SNIPPET]}")
        text = _dig(self.name, choice, "message", "content")
        if not isinstance(text, str):
            raise MalformedAnswer(f"{self.name} answer did not match its API: message.content is {text!r}")
        return parse_answer(self.name, text, schema)

    async def aclose(self) -> None:
        return None  # one client per request (gieok.providers.http_json): nothing held open


class GeminiLLM:
    """Google Gemini `generateContent` with a JSON response MIME type."""

    def __init__(
        self, model: str, api_key: str, base_url: str = DEFAULT_URLS["gemini"], timeout_s: float = 30.0
    ) -> None:
        model = model.removeprefix("models/")
        self.name = f"gemini/{model}"
        self.url = f"{_api_base(base_url, ('/v1beta', '/v1'))}/v1beta/models/{model}:generateContent"
        # The key goes in a header, not the query string, so it never lands in an access log or an error text.
        self._poster = JsonPoster(f"LLM {self.name} at {self.url}", timeout_s, {"x-goog-api-key": api_key}, "LLM")

    async def complete_json(self, system: str, user: str, schema: type[M]) -> M:
        payload = {
            "systemInstruction": {"parts": [{"text": f"{system}\n\n{_schema_instruction(schema)}"}]},
            "contents": [{"role": "user", "parts": [{"text": user}]}],
            "generationConfig": {"responseMimeType": "application/json"},
        }
        data = await self._poster.post(self.url, payload)
        if isinstance(data, dict) and not data.get("candidates") and data.get("promptFeedback"):
            raise RejectedInput(f"{self.name} blocked the prompt: {data['promptFeedback']}")
        parts = _dig(self.name, data, "candidates", 0, "content", "parts")
        if not isinstance(parts, list):
            raise MalformedAnswer(f"{self.name} answer did not match its API: parts is {parts!r}")
        # Thinking models may return their thoughts as separate parts; only the answer parts count.
        text = "".join(p.get("text", "") for p in parts if isinstance(p, dict) and not p.get("thought"))
        return parse_answer(self.name, text, schema)

    async def aclose(self) -> None:
        return None  # one client per request (gieok.providers.http_json): nothing held open


class AnthropicLLM:
    """Anthropic Messages API, asked for JSON only (and validated like the others)."""

    API_VERSION = "2023-06-01"

    def __init__(
        self,
        model: str,
        api_key: str,
        base_url: str = DEFAULT_URLS["anthropic"],
        timeout_s: float = 30.0,
        max_tokens: int = 4096,
    ) -> None:
        self.name = f"anthropic/{model}"
        self.model = model
        self.max_tokens = max_tokens
        self.url = _api_base(base_url, ("/v1",)) + "/v1/messages"
        headers = {"x-api-key": api_key, "anthropic-version": self.API_VERSION}
        self._poster = JsonPoster(f"LLM {self.name} at {self.url}", timeout_s, headers, "LLM")

    async def complete_json(self, system: str, user: str, schema: type[M]) -> M:
        payload = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "system": f"{system}\n\n{_schema_instruction(schema)}",
            "messages": [{"role": "user", "content": user}],
        }
        data = await self._poster.post(self.url, payload)
        blocks = _dig(self.name, data, "content")
        if not isinstance(blocks, list):
            raise MalformedAnswer(f"{self.name} answer did not match its API: content is {blocks!r}")
        if data.get("stop_reason") == "max_tokens":
            raise MalformedAnswer(
                f"{self.name} answer did not match {schema.__name__}: cut off at max_tokens={self.max_tokens}")
        text = "".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")
        return parse_answer(self.name, text, schema)

    async def aclose(self) -> None:
        return None  # one client per request (gieok.providers.http_json): nothing held open


def make_llm(settings: Settings) -> LLM | None:
    """The LLM chosen by GIEOK_LLM, or None for "none" (the librarian then runs its offline rules)."""
    provider = settings.llm
    if provider == "none":
        return None
    model = settings.llm_model.strip()
    if not model:
        raise ConfigError(f"GIEOK_LLM={provider} needs a model name: set GIEOK_LLM_MODEL")
    url = settings.llm_url.strip() or DEFAULT_URLS[provider]
    key = settings.llm_api_key.strip()
    timeout = settings.provider_timeout_s
    if provider == "openai":
        # Local OpenAI-compatible servers (Ollama, vLLM, LM Studio) need no key; the hosted APIs do.
        hosted = any(h in url for h in ("api.openai.com", "api.x.ai"))
        if hosted and not key:
            raise ConfigError(f"GIEOK_LLM=openai at {url} needs a key: set GIEOK_LLM_API_KEY")
        return OpenAIChatLLM(model, base_url=url, api_key=key, timeout_s=timeout)
    if not key:
        raise ConfigError(f"GIEOK_LLM={provider} needs a key: set GIEOK_LLM_API_KEY")
    if provider == "gemini":
        return GeminiLLM(model, api_key=key, base_url=url, timeout_s=timeout)
    if provider == "anthropic":
        return AnthropicLLM(model, api_key=key, base_url=url, timeout_s=timeout)
    raise ConfigError(f"GIEOK_LLM={provider!r} is not one of none, openai, gemini, anthropic")

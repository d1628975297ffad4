"""LLM clients against the fake provider on 127.0.0.1: good answers parse, bad ones are errors (never [])."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Iterator

import pytest
from pydantic import BaseModel

from gieok.core.errors import ConfigError, MalformedAnswer, PermanentProviderError, TransientProviderError
from gieok.core.settings import Settings
from gieok.providers.llm import LLM, AnthropicLLM, GeminiLLM, OpenAIChatLLM, make_llm, parse_answer
from tests.fakes.llm_server import FakeLLMServer

TIMEOUT = 0.5  # client timeout in failure tests; "slow" stalls for 5 s, so only the timeout can end the call
BOUND = 3.0  # no failure may take longer than this to surface


class Answer(BaseModel):
    tags: list[str]
    score: float


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(api_key="k-123") as s:
        yield s


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in list(os.environ):
        if var.startswith("GIEOK_"):
            monkeypatch.delenv(var)


def settings(**kw: object) -> Settings:
    return Settings.model_validate(kw)


Factory = Callable[[FakeLLMServer], LLM]
CLIENTS: dict[str, Factory] = {
    "openai": lambda s: OpenAIChatLLM("fake-chat", base_url=s.url, api_key="k-123", timeout_s=TIMEOUT),
    "openai-v1-url": lambda s: OpenAIChatLLM("fake-chat", base_url=s.url + "/v1/", api_key="k-123",
                                             timeout_s=TIMEOUT, response_format="json_object"),
    "gemini": lambda s: GeminiLLM("models/gemini-fake", api_key="k-123", base_url=s.url, timeout_s=TIMEOUT),
    "anthropic": lambda s: AnthropicLLM("claude-fake", api_key="k-123", base_url=s.url, timeout_s=TIMEOUT),
}


@pytest.fixture(params=sorted(CLIENTS))
def llm(request: pytest.FixtureRequest, server: FakeLLMServer) -> LLM:
    return CLIENTS[request.param](server)


# -- the contract every client keeps ---------------------------------------------------------------

async def test_good_answer_is_parsed_and_validated(llm: LLM, server: FakeLLMServer) -> None:
    server.script({"tags": ["회의", "database"], "score": 0.75})
    got = await llm.complete_json("You tag things.", "내일 회의가 있어요", Answer)
    assert got == Answer(tags=["회의", "database"], score=0.75)
    prompt = server.last.prompt
    assert "You tag things." in prompt and "내일 회의가 있어요" in prompt
    assert '"score"' in prompt  # the schema is stated, so json_object-only servers still know the shape


async def test_code_fenced_answer_is_accepted(llm: LLM, server: FakeLLMServer) -> None:
    server.script('```json\n{"tags": ["x"], "score": 1}\n```')
    assert await llm.complete_json("s", "u", Answer) == Answer(tags=["x"], score=1.0)


async def test_garbage_answer_is_a_malformed_answer_not_an_empty_result(llm: LLM, server: FakeLLMServer) -> None:
    server.mode = "garbage"
    with pytest.raises(MalformedAnswer, match="answer did not match Answer"):
        await llm.complete_json("s", "u", Answer)


async def test_schema_mismatch_is_a_permanent_error(llm: LLM, server: FakeLLMServer) -> None:
    server.script({"tags": "not-a-list"}, {"results": []})
    for _ in range(2):
        with pytest.raises(MalformedAnswer, match="answer did not match Answer"):
            await llm.complete_json("s", "u", Answer)


async def test_non_json_body_is_a_permanent_error(llm: LLM, server: FakeLLMServer) -> None:
    server.mode = "garbage_body"
    with pytest.raises(MalformedAnswer, match="not JSON"):
        await llm.complete_json("s", "u", Answer)


@pytest.mark.parametrize("mode", ["down", "rate_limited"])
async def test_outage_is_transient_and_quick(llm: LLM, server: FakeLLMServer, mode: str) -> None:
    server.mode = mode  # type: ignore[assignment]
    start = time.monotonic()
    with pytest.raises(TransientProviderError):
        await llm.complete_json("s", "u", Answer)
    assert time.monotonic() - start < BOUND


async def test_slow_provider_times_out_as_transient(llm: LLM, server: FakeLLMServer) -> None:
    server.mode = "slow"
    start = time.monotonic()
    with pytest.raises(TransientProviderError, match="GIEOK_PROVIDER_TIMEOUT_S"):
        await llm.complete_json("s", "u", Answer)
    elapsed = time.monotonic() - start
    assert TIMEOUT * 0.8 <= elapsed < BOUND


async def test_unauthorized_is_permanent_and_names_the_key_setting(llm: LLM, server: FakeLLMServer) -> None:
    server.mode = "unauthorized"
    with pytest.raises(PermanentProviderError, match="GIEOK_LLM_API_KEY"):
        await llm.complete_json("s", "u", Answer)


async def test_bad_request_is_permanent_and_names_the_model_setting(llm: LLM, server: FakeLLMServer) -> None:
    server.mode = "bad_request"
    with pytest.raises(PermanentProviderError, match="GIEOK_LLM_MODEL"):
        await llm.complete_json("s", "u", Answer)


async def test_recovers_after_a_transient_failure(llm: LLM, server: FakeLLMServer) -> None:
    server.fail("down")
    server.script({"tags": [], "score": 0})
    with pytest.raises(TransientProviderError):
        await llm.complete_json("s", "u", Answer)
    assert await llm.complete_json("s", "u", Answer) == Answer(tags=[], score=0)


async def test_connection_refused_is_transient() -> None:
    with socket.socket() as sock:  # a port nobody listens on: bind, read it, close
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    llm = OpenAIChatLLM("m", base_url=f"http://127.0.0.1:{port}", timeout_s=TIMEOUT)
    start = time.monotonic()
    with pytest.raises(TransientProviderError, match=r"unreachable|did not answer"):
        await llm.complete_json("s", "u", Answer)
    assert time.monotonic() - start < BOUND


# -- each provider's wire format ---------------------------------------------------------------------

async def test_openai_request_shape(server: FakeLLMServer) -> None:
    llm = OpenAIChatLLM("fake-chat", base_url=server.url + "/v1", api_key="k-123", timeout_s=TIMEOUT)
    server.script({"tags": [], "score": 0})
    await llm.complete_json("sys", "usr", Answer)
    seen = server.last
    assert seen.path == "/v1/chat/completions"
    assert seen.headers["authorization"] == "Bearer k-123"
    assert seen.body["model"] == "fake-chat"
    assert [m["role"] for m in seen.body["messages"]] == ["system", "user"]
    fmt = seen.body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["name"] == "Answer"
    assert llm.name == "openai/fake-chat"


async def test_openai_without_key_sends_no_authorization(server: FakeLLMServer) -> None:
    server.api_key = ""  # a local Ollama / vLLM / LM Studio
    llm = OpenAIChatLLM("llama", base_url=server.url, timeout_s=TIMEOUT, response_format="none")
    server.script({"tags": ["a"], "score": 1})
    assert (await llm.complete_json("s", "u", Answer)).tags == ["a"]
    assert "authorization" not in server.last.headers
    assert "response_format" not in server.last.body


async def test_gemini_request_shape(server: FakeLLMServer) -> None:
    llm = GeminiLLM("gemini-fake", api_key="k-123", base_url=server.url + "/v1beta", timeout_s=TIMEOUT)
    server.script({"tags": [], "score": 0})
    await llm.complete_json("sys", "usr", Answer)
    seen = server.last
    assert seen.path == "/v1beta/models/gemini-fake:generateContent"
    assert seen.headers["x-goog-api-key"] == "k-123"
    assert "key=" not in seen.path
    assert seen.body["generationConfig"]["responseMimeType"] == "application/json"
    assert seen.body["systemInstruction"]["parts"][0]["text"].startswith("sys")


async def test_anthropic_request_shape(server: FakeLLMServer) -> None:
    llm = AnthropicLLM("claude-fake", api_key="k-123", base_url=server.url, timeout_s=TIMEOUT)
    server.script({"tags": [], "score": 0})
    await llm.complete_json("sys", "usr", Answer)
    seen = server.last
    assert seen.path == "/v1/messages"
    assert seen.headers["x-api-key"] == "k-123"
    assert seen.headers["anthropic-version"]
    assert seen.body["max_tokens"] > 0
    assert seen.body["system"].startswith("sys") and "JSON" in seen.body["system"]


# -- parse_answer, without a network -------------------------------------------------------------------

def test_parse_answer_tolerates_prose_around_one_object() -> None:
    assert parse_answer("m", 'Here you go: {"tags": ["a"], "score": 2} Hope it helps', Answer).score == 2


@pytest.mark.parametrize("text", ["", "[]", "null", "{}", '{"tags": ["a"]}', "no json here", '{"tags": [1,'])
def test_parse_answer_refuses_anything_that_does_not_validate(text: str) -> None:
    with pytest.raises(MalformedAnswer, match="answer did not match Answer"):
        parse_answer("m", text, Answer)


# -- make_llm ------------------------------------------------------------------------------------------

def test_make_llm_none_means_offline(clean_env: None) -> None:
    assert make_llm(settings()) is None


@pytest.mark.parametrize(("kw", "var"), [
    ({"llm": "openai"}, "GIEOK_LLM_MODEL"),
    ({"llm": "openai", "llm_model": "gpt-x"}, "GIEOK_LLM_API_KEY"),
    ({"llm": "gemini", "llm_model": "gemini-x"}, "GIEOK_LLM_API_KEY"),
    ({"llm": "anthropic", "llm_model": "claude-x"}, "GIEOK_LLM_API_KEY"),
    ({"llm": "anthropic", "llm_api_key": "k"}, "GIEOK_LLM_MODEL"),
])
def test_make_llm_names_the_missing_setting(clean_env: None, kw: dict[str, str], var: str) -> None:
    with pytest.raises(ConfigError, match=var):
        make_llm(settings(**kw))


def test_make_llm_builds_each_provider_with_default_urls(clean_env: None) -> None:
    o = make_llm(settings(llm="openai", llm_model="gpt-x", llm_api_key="k"))
    g = make_llm(settings(llm="gemini", llm_model="gemini-x", llm_api_key="k"))
    a = make_llm(settings(llm="anthropic", llm_model="claude-x", llm_api_key="k"))
    assert isinstance(o, OpenAIChatLLM) and o.url == "https://api.openai.com/v1/chat/completions"
    assert isinstance(g, GeminiLLM) and g.url.startswith("https://generativelanguage.googleapis.com/v1beta/")
    assert isinstance(a, AnthropicLLM) and a.url == "https://api.anthropic.com/v1/messages"
    assert all(isinstance(x, LLM) for x in (o, g, a))


def test_make_llm_local_openai_compatible_needs_no_key(clean_env: None) -> None:
    llm = make_llm(settings(llm="openai", llm_model="llama3.2", llm_url="http://localhost:11434"))
    assert isinstance(llm, OpenAIChatLLM) and llm.url == "http://localhost:11434/v1/chat/completions"


async def test_make_llm_client_works_against_the_fake(clean_env: None, server: FakeLLMServer) -> None:
    llm = make_llm(settings(llm="anthropic", llm_model="claude-fake", llm_api_key="k-123", llm_url=server.url,
                            provider_timeout_s=TIMEOUT))
    assert llm is not None
    server.script({"tags": ["ok"], "score": 1})
    assert (await llm.complete_json("s", "u", Answer)).tags == ["ok"]

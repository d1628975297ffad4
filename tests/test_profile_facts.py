"""Profile facts: only what the user says about themselves, in English and Korean."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from gieok.core.errors import MalformedAnswer
from gieok.librarian.profile_facts import (
    CORE_KEYS,
    FACT_KEYS,
    Fact,
    FactExtractor,
    LLMFactExtractor,
    OfflineFactExtractor,
    extract_facts,
)
from gieok.providers.llm import AnthropicLLM
from tests.fakes.llm_server import FakeLLMServer


def facts(text: str, role: str = "user") -> set[tuple[str, str]]:
    return {(f.key, f.value) for f in extract_facts(text, role)}


# -- the role rule -------------------------------------------------------------------------------------

@pytest.mark.parametrize("role", ["assistant", "tool", "system", "Assistant "])
@pytest.mark.parametrize("text", [
    "The user is a Staff Engineer.", "I'm a staff engineer and my name is Claude.", "I prefer tabs over spaces.",
    "사용자는 스태프 엔지니어입니다.", "제 이름은 클로드입니다.",
])
def test_only_the_user_speaking_yields_facts(role: str, text: str) -> None:
    assert extract_facts(text, role) == []


def test_assistant_guess_about_the_user_is_not_a_fact_even_from_the_user_role() -> None:
    # Third person about "the user" is never a first-person statement.
    assert facts("The user is a Staff Engineer.") == set()


def test_role_is_matched_case_insensitively() -> None:
    assert facts("My name is Minsu.", role=" User") == {("name", "Minsu")}


# -- English -----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "expected"), [
    ("My name is Minsu Kim and I'm a backend engineer at Acme.",
     {("name", "Minsu Kim"), ("job", "backend engineer")}),
    ("Hi, I'm Minsu.", {("name", "Minsu")}),
    ("Please call me Min.", {("name", "Min")}),
    ("I am a Staff Engineer at Stripe.", {("job", "Staff Engineer")}),
    ("I work as a data scientist.", {("job", "data scientist")}),
    ("I work at Google.", {("job", "works at Google")}),
    ("I prefer tabs over spaces because they are configurable.", {("preference", "prefers tabs over spaces")}),
    ("I love Rust, but I hate YAML.", {("preference", "loves Rust"), ("preference", "dislikes YAML")}),
    ("I don't like meetings.", {("preference", "dislikes meetings")}),
    ("I use neovim and tmux for everything.", {("tool", "neovim"), ("tool", "tmux")}),
    ("I'm using Postgres 16.", {("tool", "Postgres 16")}),
    ("I am using uv", {("tool", "uv")}),  # not a name, though "I am" + word looks like one
    ("I use Node.js and store.py daily.", {("tool", "Node.js"), ("tool", "store.py")}),
    ("I always write tests first.", {("preference", "always write tests first")}),
    ("I never push on Fridays.", {("preference", "never push on Fridays")}),
    ("I speak Korean and English.", {("language", "Korean"), ("language", "English")}),
    ("I'm working on gieok, a memory server.", {("project", "gieok")}),
    ("I live in Seoul.", {("location", "Seoul")}),
    ("As I said, I prefer tea.", {("preference", "prefers tea")}),
])
def test_english_statements(text: str, expected: set[tuple[str, str]]) -> None:
    assert facts(text) == expected


@pytest.mark.parametrize("text", [
    "Do I prefer tabs?", "do i prefer tabs", "What do I use for notes?",  # questions
    "If I were a designer I would use Figma.", "Imagine I'm a manager here.",  # hypotheticals
    "My friend prefers tea.", "My wife says I like tea.", "He thinks I'm a developer.",  # other people
    "I'm not a developer.", "I don't use Windows.",  # negations
    "call me later", "I'm a big fan of Rust.", "I'm a bit tired today.", "I'd like to use Postgres here.",
    "I like that idea.", "I use it every day.", "Let's use Postgres.", "Can you use pytest here?",
    "The user is a Staff Engineer.", "",
])
def test_english_non_statements_yield_nothing(text: str) -> None:
    assert facts(text) == set()


# -- Korean ------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "expected"), [
    ("제 이름은 김민수입니다.", {("name", "김민수")}),
    ("내 이름은 민수야", {("name", "민수")}),
    ("저는 백엔드 개발자입니다.", {("job", "백엔드 개발자")}),
    ("저는 대학원생이에요.", {("job", "대학원생")}),
    ("저는 민수예요.", {("name", "민수")}),
    ("백엔드 개발자로 일하고 있어요.", {("job", "백엔드 개발자")}),
    ("저는 탭보다 스페이스를 선호해요.", {("preference", "탭보다 스페이스 선호")}),
    ("저는 커피를 좋아합니다.", {("preference", "커피 좋아함")}),
    ("회의를 싫어해요.", {("preference", "회의 싫어함")}),
    ("저는 파이썬을 주로 사용합니다.", {("tool", "파이썬")}),
    ("VS Code를 사용해요.", {("tool", "VS Code")}),
    ("저는 서울에 살아요.", {("location", "서울")}),
    ("판교에서 살고 있어요.", {("location", "판교")}),
    ("저는 한국어와 영어를 해요.", {("language", "한국어"), ("language", "영어")}),
    ("어제 회의에서 얘기했는데 저는 Rust를 선호해요.", {("preference", "Rust 선호")}),
])
def test_korean_statements(text: str, expected: set[tuple[str, str]]) -> None:
    assert facts(text) == expected


@pytest.mark.parametrize("text", [
    "제가 커피를 좋아하나요?", "제가 뭘 선호하는지 아세요",  # questions
    "만약 제가 디자이너라면 피그마를 쓸 거예요.",  # hypothetical
    "친구는 커피를 좋아해요.", "동료가 Go를 선호한대요.", "팀장님은 자바를 사용합니다.",  # other people
    "저는 반대입니다.", "저는 괜찮습니다.",
])
def test_korean_non_statements_yield_nothing(text: str) -> None:
    assert facts(text) == set()


def test_values_are_trimmed_and_particles_stripped() -> None:
    for f in extract_facts("제 이름은 김민수입니다. 저는 커피를 좋아합니다. I use   neovim .", "user"):
        assert f.value == f.value.strip() and not f.value.endswith(("를", "을", "입니다", "."))


def test_core_marks_the_facts_that_always_matter() -> None:
    got = {f.key: f.core for f in extract_facts(
        "My name is Min. I'm a designer. I speak Korean. I use Figma. I live in Busan.", "user")}
    assert got == {"name": True, "job": True, "language": True, "tool": False, "location": False}
    assert set(CORE_KEYS) <= set(FACT_KEYS)


def test_several_sentences_several_facts_no_duplicates() -> None:
    text = "My name is Min. I use vim. I use vim!\n저는 서울에 살아요."
    assert extract_facts(text, "user") == [
        Fact.of("name", "Min"), Fact.of("tool", "vim"), Fact.of("location", "서울")]


async def test_offline_extractor_wraps_the_rules() -> None:
    ex = OfflineFactExtractor()
    assert isinstance(ex, FactExtractor)
    assert await ex.extract("I live in Seoul.", "user") == [Fact.of("location", "Seoul")]
    assert await ex.extract("The user lives in Seoul.", "assistant") == []


# -- LLMFactExtractor against the fake provider --------------------------------------------------------

@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as s:
        yield s


@pytest.fixture
def extractor(server: FakeLLMServer) -> LLMFactExtractor:
    return LLMFactExtractor(AnthropicLLM("claude-fake", api_key="k", base_url=server.url, timeout_s=0.5))


async def test_llm_extractor_validates_and_computes_core(extractor: LLMFactExtractor, server: FakeLLMServer) -> None:
    server.script({"facts": [{"key": "job", "value": " backend  engineer "}, {"key": "tool", "value": "vim"},
                             {"key": "tool", "value": "vim"}]})
    got = await extractor.extract("I'm a backend engineer and I use vim", "user")
    assert got == [Fact(key="job", value="backend engineer", core=True), Fact(key="tool", value="vim", core=False)]
    prompt = server.last.prompt
    assert "USER speaking about themselves" in prompt and "I use vim" in prompt


async def test_llm_extractor_never_asks_about_non_user_messages(
        extractor: LLMFactExtractor, server: FakeLLMServer) -> None:
    assert await extractor.extract("The user is a Staff Engineer.", "assistant") == []
    assert await extractor.extract("whoami: root", "tool") == []
    assert server.requests == []


@pytest.mark.parametrize("answer", [
    {"facts": [{"key": "salary", "value": "lots"}]},  # not one of the keys
    {"facts": "Staff Engineer"},
    {"nothing": []},
    "I could not find any facts.",
])
async def test_llm_extractor_bad_answer_is_malformed(
        extractor: LLMFactExtractor, server: FakeLLMServer, answer: object) -> None:
    server.script(answer)
    with pytest.raises(MalformedAnswer, match="answer did not match"):
        await extractor.extract("I'm a backend engineer", "user")


def test_korean_compound_self_statements_split_into_clauses() -> None:
    assert extract_facts("저는 백엔드 개발자이고 서울에 살아요", "user") == [
        Fact.of("job", "백엔드 개발자"), Fact.of("location", "서울")]
    assert extract_facts("저는 민수이며 파이썬을 주로 써요", "user") == [Fact.of("name", "민수"),
                                                                    Fact.of("tool", "파이썬")]
    # A compound sentence about someone else stays about them.
    assert extract_facts("제 친구는 개발자이고 커피를 좋아해요", "user") == []

"""Profile promotion through the librarian: stable facts from the user's own rows (English and Korean), each
with its source ids; an assistant's guess about the user never becomes a fact; erasing a source erases what was
learned only from it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from gieok.app.runtime import open_service
from gieok.core.settings import load_settings
from gieok.memory.ingest import MessageIn
from gieok.memory.service import MemoryService


@pytest.fixture
async def svc(db_url: str, tmp_path: Path) -> AsyncIterator[MemoryService]:
    s = load_settings(database_url=db_url, home=str(tmp_path), user_id="alice", embedder="none", librarian=False)
    async with open_service(s) as service:
        yield service


async def say(svc: MemoryService, text: str, role: str = "user", user: str = "alice") -> str:
    mid, _ = await svc.ingest(MessageIn(content=text, user_id=user, role=role, session_id="s1"))
    await svc.processor.run_once()
    return mid


async def facts(svc: MemoryService, user: str = "alice") -> dict[tuple[str, str], dict[str, Any]]:
    prof = await svc.profile(user)
    return {(f["key"], f["value"]): {**f, "core": f in prof.core_profile} for f in prof.core_profile + prof.sub_profile}


async def test_english_and_korean_statements_are_promoted_with_their_sources(svc: MemoryService) -> None:
    en = await say(svc, "My name is Minsu Kim and I'm a backend engineer at Acme.")
    ko_city = await say(svc, "저는 서울에 살아요.")
    ko_tool = await say(svc, "저는 파이썬을 주로 사용합니다.")
    got = await facts(svc)
    assert got[("name", "Minsu Kim")]["sources"] == [en] and got[("name", "Minsu Kim")]["core"]
    assert got[("job", "backend engineer")]["sources"] == [en] and got[("job", "backend engineer")]["core"]
    assert got[("location", "서울")]["sources"] == [ko_city] and not got[("location", "서울")]["core"]
    assert got[("tool", "파이썬")]["sources"] == [ko_tool]
    assert all(f["origin"] == "librarian" for f in got.values())


@pytest.mark.parametrize("text", [
    "The user is a Staff Engineer.",
    "My name is Claude and I'm a staff engineer.",
    "You are a Staff Engineer, so I'll keep this short.",
    "사용자는 스태프 엔지니어입니다.",
    "제 이름은 클로드입니다.",
])
async def test_an_assistants_words_never_become_profile_facts(svc: MemoryService, text: str) -> None:
    await say(svc, text, role="assistant")
    await say(svc, "I use neovim.", role="tool")
    await say(svc, "I prefer terse answers.", role="system")
    assert await facts(svc) == {}


async def test_the_same_fact_twice_keeps_both_sources_and_erasure_follows_them(svc: MemoryService) -> None:
    first = await say(svc, "I use neovim and tmux for everything.")
    second = await say(svc, "I use neovim.")
    only_tmux = (await facts(svc))[("tool", "tmux")]
    assert only_tmux["sources"] == [first]
    assert (await facts(svc))[("tool", "neovim")]["sources"] == [first, second]
    await svc.forget(first, "alice", hard=True)
    got = await facts(svc)
    assert ("tool", "tmux") not in got  # learned only from the erased row
    assert got[("tool", "neovim")]["sources"] == [second]  # still stated elsewhere
    await svc.forget(second, "alice", hard=True)
    assert await facts(svc) == {}


async def test_a_new_single_valued_fact_replaces_the_old_and_keeps_history(svc: MemoryService) -> None:
    await say(svc, "I live in Seoul.")
    busan = await say(svc, "I live in Busan.")
    got = await facts(svc)
    assert ("location", "Seoul") not in got
    assert got[("location", "Busan")]["sources"] == [busan] and got[("location", "Busan")]["history"] == ["Seoul"]


async def test_facts_stay_with_their_user(svc: MemoryService) -> None:
    await say(svc, "My name is Bob.", user="bob")
    await say(svc, "My name is Alice.")
    assert set(await facts(svc)) == {("name", "Alice")}
    assert set(await facts(svc, "bob")) == {("name", "Bob")}


async def test_a_fact_the_user_set_is_not_dropped_by_the_librarian(svc: MemoryService) -> None:
    await svc.profile_edit("alice", "core_profile", "add", "Min", key="name")
    mid = await say(svc, "My name is Minsu.")
    await svc.forget(mid, "alice", hard=True)
    got = await facts(svc)
    assert got[("name", "Min")]["origin"] == "user"  # set by hand, not learned from the erased row

"""An LLM outage while reading a row's profile facts postpones them, never loses them: the row's profile step
stays in the cold queue (with backoff, attempts and `cold_error` like any cold-path failure) and the facts
are promoted once the LLM answers again. Both backends."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from gieok.app.runtime import open_runtime
from gieok.core.dates import utcnow
from gieok.core.settings import Settings, load_settings
from gieok.librarian.worker import Librarian
from gieok.memory.ingest import MessageIn
from gieok.memory.service import MemoryService
from tests.fakes.llm_server import FakeLLMServer

EN = "My name is Minsu Kim and I'm a backend engineer at Acme."
KO = "저는 서울에 살아요."
FACTS = {EN: {"facts": [{"key": "name", "value": "Minsu Kim"}, {"key": "job", "value": "backend engineer"}]},
         KO: {"facts": [{"key": "location", "value": "서울"}]}}


@pytest.fixture
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(default_answer={"facts": []}) as server:
        yield server


def settings(db_url: str, tmp_path: Path, llm: FakeLLMServer) -> Settings:
    return load_settings(database_url=db_url, home=str(tmp_path), user_id="alice", embedder="none", librarian=False,
                         llm="openai", llm_url=llm.url, llm_model="fake", provider_timeout_s=2.0,
                         cold_max_attempts=3)


def tags(n: int) -> dict[str, object]:
    return {"results": [{"index": i, "p_tag": "gieok", "d_tags": ["intro"]} for i in range(n)]}


async def profile_facts(svc: MemoryService) -> dict[tuple[str, str], list[str]]:
    prof = await svc.profile("alice")
    return {(f["key"], f["value"]): f["sources"] for f in prof.core_profile + prof.sub_profile}


async def cycle(lib: Librarian, at: datetime) -> int:
    lib.clock = lambda: at
    return await lib.run_once()


async def test_facts_postponed_by_an_llm_outage_are_promoted_later(db_url: str, tmp_path: Path,
                                                                   llm: FakeLLMServer) -> None:
    async with open_runtime(settings(db_url, tmp_path, llm)) as rt:
        svc, lib = rt.service, rt.librarian
        en, _ = await svc.ingest(MessageIn(content=EN, user_id="alice", role="user", session_id="s1"))
        ko, _ = await svc.ingest(MessageIn(content=KO, user_id="alice", role="user", session_id="s1"))
        now = utcnow()
        # The tagging call succeeds; the LLM goes down before the fact extraction calls.
        llm.script(tags(2))
        llm.fail("down", times=2, after=1)
        assert await cycle(lib, now) == 2
        assert await profile_facts(svc) == {}
        for mid in (en, ko):
            m = await svc.store.get_memory(mid)
            assert m is not None and m.tag_status == "ok" and m.p_tags == ["gieok"]  # the tags are kept
            assert "HTTP 503" in m.cold_error and m.cold_attempts == 1  # the profile step is owed, and says why
        assert await svc.store.count_pending(3, need_embedding=False) == 0  # backing off, not busy-looping
        assert await cycle(lib, now + timedelta(seconds=1)) == 0

        # Back up: past the backoff, the owed rows are read again (no re-tagging: only the extraction calls).
        before = len(llm.requests)
        llm.script(FACTS[EN], FACTS[KO])
        assert await cycle(lib, now + timedelta(seconds=10)) == 2
        assert len(llm.requests) == before + 2
        assert all("Extract" in r.prompt or "facts" in r.prompt for r in llm.requests[before:])
        assert await profile_facts(svc) == {("name", "Minsu Kim"): [en], ("job", "backend engineer"): [en],
                                            ("location", "서울"): [ko]}
        for mid in (en, ko):
            m = await svc.store.get_memory(mid)
            assert m is not None and m.cold_error == "" and m.cold_attempts == 0
        # Done for good: nothing is claimed again.
        assert await cycle(lib, now + timedelta(hours=1)) == 0
        assert len(llm.requests) == before + 2


async def test_a_long_outage_waits_out_the_cooldown_then_recovers(db_url: str, tmp_path: Path,
                                                                  llm: FakeLLMServer) -> None:
    async with open_runtime(settings(db_url, tmp_path, llm)) as rt:
        svc, lib = rt.service, rt.librarian
        en, _ = await svc.ingest(MessageIn(content=EN, user_id="alice", role="user"))
        now = utcnow()
        llm.script(tags(1))
        llm.fail("down", times=3, after=1)
        t = now
        for _ in range(3):  # three attempts with backoff, then the row is failed and cools down
            await cycle(lib, t)
            t += timedelta(seconds=20)
        m = await svc.store.get_memory(en)
        assert m is not None and m.cold_attempts == 3 and "HTTP 503" in m.cold_error
        assert (await svc.store.stats("alice"))["failed"] == 1
        before = len(llm.requests)
        assert await cycle(lib, t) == 0 and len(llm.requests) == before  # no retry storm inside the cooldown
        llm.script(FACTS[EN])
        assert await cycle(lib, now + timedelta(minutes=30)) == 1
        assert await profile_facts(svc) == {("name", "Minsu Kim"): [en], ("job", "backend engineer"): [en]}
        m = await svc.store.get_memory(en)
        assert m is not None and m.cold_error == "" and m.cold_attempts == 0
        assert await cycle(lib, now + timedelta(hours=2)) == 0  # nothing owed any more


async def test_retry_failed_requeues_owed_profile_facts(db_url: str, tmp_path: Path, llm: FakeLLMServer) -> None:
    async with open_runtime(settings(db_url, tmp_path, llm)) as rt:
        svc, lib = rt.service, rt.librarian
        en, _ = await svc.ingest(MessageIn(content=EN, user_id="alice", role="user"))
        now = utcnow()
        llm.script(tags(1))
        llm.fail("bad_request", times=1, after=1)  # a 400 is permanent: failed after one attempt
        await cycle(lib, now)
        m = await svc.store.get_memory(en)
        assert m is not None and m.cold_attempts == 1 and "RejectedInput" in m.cold_error and "HTTP 400" in m.cold_error
        assert await cycle(lib, now + timedelta(seconds=30)) == 0  # cooling down
        assert await svc.store.reset_failed() == 1  # `gieok worker --retry-failed`
        llm.script(FACTS[EN])
        assert await cycle(lib, now + timedelta(seconds=31)) == 1
        assert await profile_facts(svc) == {("name", "Minsu Kim"): [en], ("job", "backend engineer"): [en]}

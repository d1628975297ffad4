"""A failing store during search surfaces as the store's own error, with what caused it: the candidate searches
run side by side in a task group, and unwrapping the group must not drop the cause or the other failures."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import pytest

from gieok.app.runtime import open_service
from gieok.core.errors import StoreError
from gieok.core.settings import load_settings
from gieok.memory.ingest import MessageIn
from tests.fakes.embedding_server import FakeEmbeddingServer


def _locked(what: str) -> StoreError:
    try:
        raise sqlite3.OperationalError("database is locked")
    except sqlite3.OperationalError as exc:
        err = StoreError(f"{what}: database is locked")
        err.__cause__ = exc
        return err


async def test_one_failing_candidate_search_keeps_its_cause(db_url: str, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    s = load_settings(database_url=db_url, home=str(tmp_path), user_id="alice", embedder="none", librarian=False)
    async with open_service(s, with_embedder=False) as svc:
        await svc.ingest(MessageIn(content="배포는 금요일 오후에 합니다", user_id="alice"))
        err = _locked("keyword search")

        async def broken(*args: object, **kw: object) -> list[object]:
            raise err
        monkeypatch.setattr(svc.store, "keyword_search", broken)
        with pytest.raises(StoreError) as info:
            await svc.search(svc.filters("alice"), "금요일 배포")
        assert info.value is err  # the store's error itself, not a group …
        assert isinstance(info.value.__cause__, sqlite3.OperationalError)  # … with the database's reason


async def test_two_failing_candidate_searches_are_both_reported(db_url: str, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeEmbeddingServer() as server:
        s = load_settings(database_url=db_url, home=str(tmp_path), user_id="alice", embedder="openai",
                          embedding_url=server.openai_url, embedding_model="fake", librarian=False)
        async with open_service(s) as svc:
            await svc.ingest(MessageIn(content="we deploy on Friday afternoon", user_id="alice"))
            kw_err, vec_err = _locked("keyword search"), _locked("vector search")
            vector_failing = anyio.Event()

            async def broken_kw(*args: object, **kw: object) -> list[object]:
                # Both hit the locked database at once: this one fails too, not cancelled by the other's failure.
                with anyio.CancelScope(shield=True):
                    await vector_failing.wait()
                raise kw_err

            async def broken_vec(*args: object, **kw: object) -> list[object]:
                vector_failing.set()
                raise vec_err
            monkeypatch.setattr(svc.store, "keyword_search", broken_kw)
            monkeypatch.setattr(svc.store, "vector_search", broken_vec)
            with pytest.raises(StoreError) as info:
                await svc.search(svc.filters("alice"), "when do we deploy?")
            assert info.value in (kw_err, vec_err)
            group = info.value.__cause__
            assert isinstance(group, BaseExceptionGroup)  # every failure is kept, the other one too
            assert set(group.exceptions) == {kw_err, vec_err}

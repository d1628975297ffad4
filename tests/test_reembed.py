"""Changing the embedding model re-embeds in the background; search keeps working meanwhile."""

from __future__ import annotations

from pathlib import Path

from gieok.app.runtime import open_service
from gieok.core.settings import load_settings
from gieok.librarian.worker import Librarian
from gieok.memory.ingest import MessageIn
from tests.fakes.embedding_server import FakeEmbeddingServer


async def test_model_change_requeues_and_search_keeps_working(tmp_path: Path) -> None:
    with FakeEmbeddingServer() as server:
        def settings(model: str):  # type: ignore[no-untyped-def]
            return load_settings(database_url=f"sqlite:///{tmp_path / 'm.db'}", user_id="alice", embedder="openai",
                                 embedding_url=server.openai_url, embedding_model=model, librarian=False,
                                 search_fallback_threshold=0.0)
        async with open_service(settings("model-a")) as svc:
            for text in ("the deploy checklist lives in the wiki", "coffee beans are in the left cupboard"):
                await svc.ingest(MessageIn(content=text, user_id="alice"))
            assert svc.processor is not None
            await svc.processor.run_once()
            out = await svc.search(svc.filters("alice"), "deploy checklist")
            assert out.mode == "hybrid" and out.hits[0].memory.embedding_model == "openai/model-a"

        async with open_service(settings("model-b")) as svc:
            lib = svc.processor
            assert isinstance(lib, Librarian)
            await lib._queue_reembed()
            st = await svc.store.stats("alice")
            assert st["pending"] == 2 and st["by_embedding_model"] == {"openai/model-a": 2}
            # Before the re-embed finishes: no vectors of model-b yet, and search still answers (full text).
            out = await svc.search(svc.filters("alice"), "deploy checklist")
            assert out.hits and "deploy" in out.hits[0].memory.content
            await lib.run_once()
            st = await svc.store.stats("alice")
            assert st["pending"] == 0 and st["by_embedding_model"] == {"openai/model-b": 2}
            out = await svc.search(svc.filters("alice"), "deploy checklist")
            assert out.mode == "hybrid" and out.hits[0].parts["cosine"] > 0
            await lib._queue_reembed()
            assert (await svc.store.stats("alice"))["pending"] == 0   # nothing to redo with the same model

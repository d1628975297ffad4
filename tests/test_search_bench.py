"""`gieok bench search` at a small size: every timed path runs and says what it measured (the 100,000-memory
figures are the benchmark's job, not the suite's)."""

from __future__ import annotations

import pytest

from gieok.bench.search_bench import KOREAN_EVERY, run_search_bench
from tests.conftest import BACKENDS


@pytest.mark.parametrize("backend", BACKENDS)
async def test_every_line_is_timed_and_korean_rows_are_searched_in_english(backend: str,
                                                                           request: pytest.FixtureRequest) -> None:
    lines: list[str] = []
    pg_url = request.getfixturevalue("pg_server") if backend == "postgres" else None
    res = await run_search_bench(n=1000, queries=10, backend=backend, pg_url=pg_url, echo=lines.append)
    assert res["backend"] == backend and lines[0].startswith(f"{backend}: 1000 memories")
    for name in ("exact_numpy", "store_vector_search", "full_search", "full_search_dated",
                 "full_search_korean_bridge", "full_search_english_over_korean", "full_search_rows_arriving",
                 "full_search_one_piece", "full_search_archive_asked"):
        assert 0 < res[f"{name}_p50_ms"] <= res[f"{name}_p95_ms"]
    assert res["recall_vs_exact"] == 1.0 and res["cosine_vs_exact"] == pytest.approx(1.0, abs=1e-4)
    assert any(line.startswith("  query naming a day  :") for line in lines)
    assert any(line.startswith("  while rows arrive   :") and "4 rows stored and embedded" in line for line in lines)
    assert any(line.startswith("  English query, Korean rows:") and f"every {KOREAN_EVERY}th row" in line
               for line in lines)
    assert any(line.startswith("  nothing close, archive asked:") for line in lines)
    assert any(line.startswith("  one piece, nothing close:") for line in lines)


async def test_an_unknown_backend_is_named() -> None:
    with pytest.raises(ValueError, match="backend: 'mysql' is not one of sqlite, postgres"):
        await run_search_bench(n=10, queries=1, backend="mysql")

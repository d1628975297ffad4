"""`gieok bench dashboard`: what the dashboard asks of the store, at 100,000 memories of one user (the worst case:
every row in the user's own timeline), SQLite and PostgreSQL side by side.

Rows are loaded as `gieok bench scale` loads them (synthetic text, three platforms). Measured, each many times:
the newest page, a page in the middle and the oldest page (keyset pages: the three should cost the same), a page
filtered by platform and by a rare project tag, the archived and forgotten views (few or no such rows: the worst
case for a filter), activity per day over 30 days, and the label facets behind the filter menus.
"""

from __future__ import annotations

import contextlib
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from gieok.bench.scale import T0, Corpus, Echo, _fresh, _load_postgres, _load_sqlite, _pct, embedded_postgres
from gieok.core.models import SearchFilters
from gieok.store import Store
from gieok.store.browse import PageQuery, as_browse

USER = "user00"


async def _time(fn: Callable[[], Awaitable[Any]], repeat: int) -> tuple[float, float]:
    await fn()   # warm caches and prepared plans, as a running server has them
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        await fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000, _pct(times, 95) * 1000


async def _measure(store: Store, corpus: Corpus, repeat: int) -> dict[str, tuple[float, float]]:
    b = as_browse(store)
    f = SearchFilters(user_id=USER)
    end = T0 + timedelta(seconds=corpus.n * 30)

    async def cursor_at(k: int) -> tuple[Any, str]:
        # Walk to row k with keyset pages of 1,000 (what 20 clicks on "Older" of 50 each would reach).
        before: tuple[Any, str] | None = None
        got = 0
        while got < k:
            page = await b.list_page(PageQuery(f, before=before, limit=min(1000, k - got)))
            got += len(page)
            before = (page[-1].created_at, page[-1].id)
        assert before is not None
        return before

    mid, last = await cursor_at(corpus.n // 2), await cursor_at(corpus.n - 50)
    cases: dict[str, Callable[[], Awaitable[Any]]] = {
        "page newest": lambda: b.list_page(PageQuery(f)),
        f"page at {corpus.n // 2:,}": lambda: b.list_page(PageQuery(f, before=mid)),
        f"page at {corpus.n - 50:,} (oldest)": lambda: b.list_page(PageQuery(f, before=last)),
        "page platform=codex": lambda: b.list_page(PageQuery(SearchFilters(user_id=USER, agent_platform="codex"))),
        "page p_tag=p7 (1 in 50)": lambda: b.list_page(PageQuery(SearchFilters(user_id=USER, p_tag="p7"))),
        "page archived (none)": lambda: b.list_page(PageQuery(f, state="archived")),
        "page forgotten (none)": lambda: b.list_page(PageQuery(f, state="forgotten")),
        "activity 30 days": lambda: b.activity(USER, end - timedelta(days=30), end),
        "facets": lambda: b.facets(USER),
    }
    return {name: await _time(fn, repeat) for name, fn in cases.items()}


async def run_dashboard_bench(rows: int, *, backends: list[str], pg_url: str | None, repeat: int,
                              echo: Echo = print) -> dict[str, Any]:
    out: dict[str, Any] = {"rows": rows, "results": {}}
    corpus = Corpus(rows, users=1)
    with contextlib.ExitStack() as stack:
        if "postgres" in backends and pg_url is None:
            pg_url = stack.enter_context(embedded_postgres(echo))
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="gieok-dash-")))
        for backend in backends:
            async with _fresh(backend, rows, tmp, pg_url) as (store, _url):
                await (_load_sqlite if backend == "sqlite" else _load_postgres)(store, corpus, echo)
                res = await _measure(store, corpus, repeat)
                out["results"][backend] = res
                for name, (p50, p95) in res.items():
                    echo(f"{backend:<8} {rows:>9,} rows  {name:<28} p50 {p50:7.2f} ms  p95 {p95:7.2f} ms")
    return out

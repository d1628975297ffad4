"""`gieok doctor`: check what gieok depends on and say how to fix what is wrong."""

from __future__ import annotations

import time
from collections.abc import Callable

from gieok.app.auth_checks import check_auth
from gieok.core.errors import GieokError
from gieok.core.settings import Settings


async def run_checks(s: Settings, echo: Callable[[str], object]) -> bool:
    from gieok.providers.embed.factory import make_embedder
    from gieok.store import open_store

    ok = True

    def report(good: bool, what: str, fix: str = "") -> None:
        nonlocal ok
        ok = ok and good
        echo(f"[{'ok' if good else 'FAIL'}] {what}" + (f"\n       fix: {fix}" if fix and not good else ""))

    url = s.resolved_database_url
    echo(f"database: {url}")
    store = None
    try:
        store = open_store(url, busy_timeout_ms=s.busy_timeout_ms)
        await store.open()
        version = await store.schema_version()
        report(True, f"database opens, schema version {version}")
        for check in await store.check():  # what only the backend knows (its engine, extensions, schema)
            report(check.ok, check.what, check.fix)
        await check_auth(s, store, report, echo)
        st = await store.stats(None)
        # Say whose memories these are: `gieok stats` counts one user, this counts the whole database.
        users = await store.list_user_ids()
        mine = (await store.stats(s.user_id))["total"] if s.user_id in users else 0
        report(True, f"{st['total']} memories of {len(users)} user(s) in the database ({s.user_id}: {mine}); "
                     f"{st['pending']} pending, {st['failed']} failed")
        echo(f"       librarian: {st.get('processed_last_hour', 0)} rows processed in the last hour")
        if st.get("last_error"):
            echo(f"       last librarian error: {st['last_error']}")
            echo("       fix: check the provider settings, then `gieok worker --retry-failed --once`")
        from gieok.librarian.status import librarian_status
        jobs = await librarian_status(store)
        for name in ("maintenance", "consolidation"):
            job = jobs.get(name)
            if job is None:
                echo(f"       {name}: never run (runs in `gieok serve`/`gieok worker`; or `gieok maintain`)")
                continue
            running = f", running on {job['running_on']}" if job["running_on"] else ""
            echo(f"       {name}: last finished {job['last_finished_at']}{running}")
            if "error" in job["last_result"]:
                report(False, f"{name} failed: {job['last_result']['error']}", "see the worker's log")
    except GieokError as exc:
        report(False, f"database: {exc}", "check GIEOK_DATABASE_URL and that the directory is writable")
    finally:
        if store is not None:
            await store.close()

    try:
        emb = make_embedder(s)
        if emb is None:
            report(True, "embedder: none (keyword search only)")
        else:
            t0 = time.perf_counter()
            v = await emb.embed_query("doctor check 확인")
            report(True, f"embedder {emb.name}: dim {v.shape[0]}, {1000 * (time.perf_counter() - t0):.0f} ms")
    except GieokError as exc:
        report(False, f"embedder ({s.embedder}): {exc}",
               "check GIEOK_EMBEDDER / GIEOK_EMBEDDING_URL / GIEOK_EMBEDDING_MODEL / GIEOK_EMBEDDING_API_KEY")
    if s.llm != "none":
        try:
            from gieok.providers.llm import make_llm
            llm = make_llm(s)
            report(llm is not None, f"LLM provider {s.llm} configured ({s.llm_model})")
        except GieokError as exc:
            report(False, f"LLM ({s.llm}): {exc}", "check GIEOK_LLM_URL / GIEOK_LLM_MODEL / GIEOK_LLM_API_KEY")
    else:
        report(True, "LLM: none (offline tagging and profile extraction)")
    return ok

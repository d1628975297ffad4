"""The librarian at work: rows it has not finished (with their last error, and a retry), throughput, its
periodic jobs, and the reviews that are due."""

from __future__ import annotations

from starlette.responses import Response

from gieok.core.dates import utcnow
from gieok.librarian.status import librarian_status
from gieok.store.browse import as_browse
from gieok.ui.app import View
from gieok.ui.views.memory import mine


async def librarian(view: View) -> Response:
    browse = as_browse(view.svc.store)
    now = utcnow()
    return view.render(
        "librarian.html", stats=await view.svc.store.stats(view.user_id),
        failed=await browse.list_cold(view.user_id, "failed", 50),
        pending=await browse.list_cold(view.user_id, "pending", 20),
        jobs=await librarian_status(view.svc.store), due=await view.svc.due_reviews(view.user_id, now, 20),
        processed=view.svc.processor.processed if view.svc.processor is not None else 0,
        per_minute=view.svc.processor.throughput() * 60 if view.svc.processor is not None else 0.0, now=now)


async def retry(view: View) -> Response:
    """Failed rows of this user go back to pending (one, or all with id=all) for the next cycle."""
    target = view.form.get("id", "")
    rows = (await as_browse(view.svc.store).list_cold(view.user_id, "failed", 1000) if target == "all"
            else [await mine(view, target)])
    for m in rows:
        await view.svc.store.update_memory(m.id, {
            "cold_attempts": 0, "lease_until": None,
            "tag_status": "pending" if m.tag_status == "failed" else m.tag_status,
            "embed_status": "pending" if m.embed_status == "failed" else m.embed_status})
    await view.audit("librarian.retry", memory_ids=[m.id for m in rows], owners=[view.user_id] * len(rows))
    return view.redirect("/ui/librarian", "retried")

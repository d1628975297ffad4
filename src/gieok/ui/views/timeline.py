"""The home page: activity per day, the counts that matter, and the timeline (newest first, filtered, keyset
pages)."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

from starlette.responses import Response

from gieok.core.dates import utcnow
from gieok.store.browse import Facets, as_browse
from gieok.ui.app import View
from gieok.ui.chart import build_chart
from gieok.ui.forms import PAGE_SIZE, encode_cursor, timeline_form

FACETS_TTL_S = 30.0
_facets: dict[str, tuple[float, Facets]] = {}


async def facets(view: View) -> Facets:
    """Filter menus need the labels in use; one pass over the user's rows, reused for half a minute."""
    hit = _facets.get(view.user_id)
    if hit and time.monotonic() - hit[0] < FACETS_TTL_S:
        return hit[1]
    f = await as_browse(view.svc.store).facets(view.user_id)
    _facets[view.user_id] = (time.monotonic(), f)
    return f


async def timeline(view: View) -> Response:
    form = timeline_form(view.request.query_params, view.svc, view.user_id)
    browse = as_browse(view.svc.store)
    rows = await browse.list_page(form.query)
    last = rows[-1] if len(rows) == PAGE_SIZE else None
    older = encode_cursor((last.created_at, last.id)) if last is not None and last.created_at else None
    more_only = view.request.headers.get("hx-target") == "more"
    ctx: dict[str, Any] = {"rows": rows, "form": form, "values": form.values, "older": older,
                           "first_page": form.query.before is None}
    if more_only:
        return view.render("_rows.html", **ctx)
    now = utcnow()
    by = "model" if view.request.query_params.get("by") == "model" else "platform"
    counts = await browse.activity(view.user_id, now.replace(hour=0, minute=0, second=0, microsecond=0)
                                   - timedelta(days=29), now)
    chart = build_chart(counts, end=now.date(), by=by)
    stats = await view.svc.store.stats(view.user_id)
    return view.render("timeline.html", chart=chart, by=by, stats=stats, facets=await facets(view), **ctx)

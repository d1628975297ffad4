"""The home page: activity per day, the counts that matter, and the timeline (newest first, filtered, keyset
pages)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from starlette.responses import Response

from gieok.core.dates import utcnow
from gieok.store.browse import DayCount, Facets, as_browse
from gieok.ui.app import View
from gieok.ui.chart import build_chart
from gieok.ui.forms import PAGE_SIZE, encode_cursor, timeline_form

# The filter menus and the chart read every label of the user's recent rows (index-only, but at 100,000 rows
# still a few hundred milliseconds on a busy machine: `gieok bench dashboard`); a view half a minute old is as
# good, so each user's are kept that long (and dropped when they change something).
SUMMARY_TTL_S = 30.0


async def facets(view: View) -> Facets:
    hit = view.dash.cached(view.user_id, "facets", SUMMARY_TTL_S)
    if isinstance(hit, Facets):
        return hit
    return view.dash.keep(view.user_id, "facets", await as_browse(view.svc.store).facets(view.user_id))


async def activity(view: View, now: datetime) -> list[DayCount]:
    hit = view.dash.cached(view.user_id, "activity", SUMMARY_TTL_S)
    if isinstance(hit, list):
        return hit
    start = now.replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(days=29)
    counts = await as_browse(view.svc.store).activity(view.user_id, start, now + timedelta(seconds=1))
    return view.dash.keep(view.user_id, "activity", counts)


async def timeline(view: View) -> Response:
    form = timeline_form(view.request.query_params, view.svc, view.principal)
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
    chart = build_chart(await activity(view, now), end=now.date(), by=by)
    stats = await view.svc.store.stats(view.user_id)
    return view.render("timeline.html", chart=chart, by=by, stats=stats, facets=await facets(view), **ctx)

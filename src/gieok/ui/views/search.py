"""Search with every filter of `search_memory`: each result shows its score parts and why it came back, with the
query's words marked in the text."""

from __future__ import annotations

from starlette.responses import Response

from gieok.core.models import KINDS, ROLES
from gieok.ui.app import View
from gieok.ui.forms import search_form
from gieok.ui.views.timeline import facets

# The score parts as the ranking names them, in the order a person reads them.
# The score is relevance plus recency, importance and usage (scaled by relevance), less duplication; relevance is
# made of meaning (cosine), words (BM25, unbounded), tags, title, a named date, for a "when" question a time, and
# for a "first" or "last" question being the first or last of the rows about it.
SCORE_PARTS = {"relevance": "relevance", "recency": "recency", "importance": "importance", "usage": "usage",
               "duplication": "duplicate"}
RELEVANCE_PARTS = {"cosine": "meaning", "bm25": "words", "tag_jaccard": "tags", "title": "title", "date": "date",
                   "when": "says when", "order": "first or last"}


async def search(view: View) -> Response:
    form = search_form(view.request.query_params, view.svc, view.principal)
    outcome = None
    if form.query or any(form.values[k] for k in form.values if k not in ("q", "limit")):
        # Looking from the dashboard is not an agent using a memory: views are not counted.
        outcome = await view.svc.search(form.filters, form.query, limit=form.limit, count_view=False)
        shared = [m for h in outcome.hits for m in h.memories() if m.user_id != view.user_id]
        if shared and view.svc.settings.audit_reads:
            await view.audit("search", detail="read shared", memory_ids=[m.id for m in shared],
                             owners=[m.user_id for m in shared])
    return view.render("search.html", form=form, values=form.values, outcome=outcome, kinds=KINDS, roles=ROLES,
                       facets=await facets(view), score_parts=SCORE_PARTS,
                       relevance_parts=RELEVANCE_PARTS)

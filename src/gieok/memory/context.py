"""Loading context at the start of a session (ARCHITECTURE §8).

In priority order, within a token budget (tokens ≈ chars / 1.7): core profile → pinned memories → turns
that saw the error the query holds, with their answers (when it holds one) → short-term memory of *this*
platform/model/subagent (last N days or the budget, whichever ends first), plus collaborating agents'
memories on the same project → memories relevant to the query → due reviews. Memories about code carry
their stale flag ("⚠ possibly stale: billing/retry.py changed 3 commits ago"), and a fact the librarian found
replaced by a newer one says so ("⚠ outdated: a newer memory replaces it").
A section that does not fit is cut, never the ones before it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from gieok.core.dates import utcnow
from gieok.core.errors import InvalidInput
from gieok.core.limits import check_label
from gieok.core.models import Hit, Identity, Memory, SearchFilters
from gieok.core.principal import Principal
from gieok.core.text import estimate_tokens
from gieok.memory.code_refs import stale_reason
from gieok.memory.service import MemoryService
from gieok.retrieval.ranking import replaced_by

MAX_ITEM_CHARS = 1200  # one long paste must not eat the whole budget
# Pinned memories take at most this share of the budget: every explicit `remember` is pinned, so a user who
# saved a few hundred facts would otherwise fill the block with them and leave no room for this session's
# recent turns or for what the query is about. Those relevant to the query go first, then the newest.
PINNED_SHARE = 0.4


@dataclass(slots=True)
class ContextBlock:
    sections: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    text: str = ""
    tokens: int = 0
    budget: int = 0
    truncated: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "tokens": self.tokens, "budget": self.budget, "truncated": self.truncated,
                "sections": self.sections}


def _line(m: Memory, stale: str = "", fixed_by: dict[str, Any] | None = None) -> str:
    when = m.created_at.strftime("%Y-%m-%d %H:%M") if m.created_at else ""
    who = m.role
    if m.agent_platform and m.role == "assistant":
        who = f"{m.agent_platform}/{m.agent_model}" if m.agent_model else m.agent_platform
        if m.subagent_role:
            who += f" ({m.subagent_role})"
    body = " ".join(m.content.split())
    if len(body) > MAX_ITEM_CHARS:
        body = body[:MAX_ITEM_CHARS] + "…"
    line = f"- [{when}] {who}: {body} (id {m.id})"
    if newer := replaced_by(m):
        line += f"\n  ⚠ outdated: a newer memory replaces it (id {newer})"
    elif isinstance(disputed := m.meta.get("contradicted_by"), str):
        line += f"\n  ⚠ a newer memory contradicts it (id {disputed})"
    if stale:
        line += f"\n  ⚠ possibly stale: {stale}"
    if fixed_by:
        fix = " ".join(str(fixed_by.get("content", "")).split())
        fix = fix if len(fix) <= MAX_ITEM_CHARS // 2 else fix[:MAX_ITEM_CHARS // 2] + "…"
        line += f"\n  ↳ we saw this error before; the answer then: {fix} (id {fixed_by.get('id')})"
    return line


async def load_context(svc: MemoryService, ident: Identity, *, project: str | None = None, query: str | None = None,
                       token_budget: int | None = None, now: datetime | None = None,
                       viewer: Principal | None = None) -> ContextBlock:
    """The profile, pinned memories, this agent's short-term memory and due reviews are the user's own; the
    project's collaborators and the memories relevant to the query include what `viewer` may see of others
    (its teams' and public memories). Without a viewer, only the user's own memory."""
    s = svc.settings
    now = now or utcnow()
    if project is not None:
        project = check_label("project", project)
    if token_budget is not None and (isinstance(token_budget, bool) or not isinstance(token_budget, int)
                                     or not 100 <= token_budget <= 200_000):
        raise InvalidInput("token_budget", f"{token_budget!r} is not a whole number of tokens in 100..200000")
    budget = token_budget or s.token_budget
    cpt = s.chars_per_token
    block = ContextBlock(budget=budget)
    lines: list[str] = []
    used = 0
    seen: set[str] = set()

    def add(section: str, text: str, item: dict[str, Any] | None = None) -> bool:
        nonlocal used
        cost = estimate_tokens(text + "\n", cpt)
        if used + cost > budget:
            block.truncated = True
            return False
        used += cost
        lines.append(text)
        if item is not None:
            block.sections.setdefault(section, []).append(item)
        return True

    async def add_memories(section: str, title: str, rows: list[Memory], hits: list[Hit] | None = None,
                           cap: int | None = None) -> None:
        """`cap`: tokens this section may use; past it, one line says how many more there are."""
        rows = [m for m in rows if m.id not in seen]
        if not rows:
            return
        start = used
        if not add(section, f"\n## {title}"):
            return
        # Memories about code say when their files changed since (gieok.librarian.staleness).
        anchors = await svc.store.anchors_for([m.id for m in rows])
        fixes = {h.memory.id: h.fixed_by for h in hits or [] if h.fixed_by}
        for i, m in enumerate(rows):
            stale = stale_reason(anchors.get(m.id, []))
            line = _line(m, stale, fixes.get(m.id))
            if cap is not None and used - start + estimate_tokens(line + "\n", cpt) > cap:
                add(section, f"- … and {len(rows) - i} more {section} (search_memory finds them)")
                block.truncated = True
                return
            item: dict[str, Any] = {"id": m.id, "content": m.content, "role": m.role,
                                    "created_at": m.created_at.isoformat() if m.created_at else None}
            if m.user_id != ident.user_id:  # shared with the caller: say whose it is
                item.update(owner=m.user_id, privacy_scope=m.privacy_scope)
            if stale:
                item.update(possibly_stale=True, stale_reason=stale)
            if newer := replaced_by(m):
                item.update(outdated=True, superseded_by=newer)
            if m.id in fixes:
                item["fixed_by"] = fixes[m.id]
            if not add(section, line, item):
                return
            seen.add(m.id)

    add("header", f"# Memory for {ident.user_id} (gieok)")

    # 1. core profile, then the other profile facts
    prof = await svc.profile(ident.user_id)
    if prof.core_profile or prof.sub_profile:
        add("profile", "\n## Who the user is")
        for fact in prof.core_profile + prof.sub_profile:
            if not add("profile", f"- {fact.get('key', 'note')}: {fact.get('value', '')}", fact):
                break

    hits: list[Hit] = []
    if query and query.strip():
        hits = (await svc.search(SearchFilters(user_id=ident.user_id, viewer=viewer), query, limit=10, now=now,
                                 count_view=False)).hits

    # 2. pinned memories: those the query is about first, then the newest, within their share of the budget
    pinned = await svc.store.list_memories(SearchFilters(user_id=ident.user_id, pinned_only=True), limit=200)
    # A pinned fact replaced by another pinned one ("Deploys happen on Friday", then "… on Monday") is left out:
    # both in every session's context, the agent cannot tell which holds, and the old one costs budget. One whose
    # replacement is not pinned stays, marked outdated.
    ids = {m.id for m in pinned}
    pinned = [m for m in pinned if replaced_by(m) not in ids]
    rank = {h.memory.id: i for i, h in enumerate(hits)}
    pinned.sort(key=lambda m: rank.get(m.id, len(rank)))     # stable: the newest first otherwise
    await add_memories("pinned", "Pinned (always remember)", pinned, cap=int(budget * PINNED_SHARE))

    # An error in the query seen before: those turns and their answers come before everything recent
    # (gieok.retrieval.same_error), and the query's other matches follow in section 4.
    if hits:
        same = [h for h in hits if "same_error" in h.parts]
        await add_memories("same_error", "Seen this error before", [h.memory for h in same], same)

    # 3. short-term memory of this agent, plus collaborators on the same project
    proj = project if project is not None else ident.project
    mine = SearchFilters(user_id=ident.user_id, agent_platform=ident.agent_platform, agent_model=ident.agent_model,
                         subagent_role=ident.subagent_role)
    recent = await svc.recent(mine, s.short_term_days, 200, now)
    if proj:
        collab = await svc.recent(SearchFilters(user_id=ident.user_id, p_tag=proj, viewer=viewer),
                                  s.short_term_days, 200, now)
        by_id = {m.id: m for m in recent + collab}
        recent = sorted(by_id.values(), key=lambda m: m.created_at or now, reverse=True)
    # Newest first so the budget keeps the latest turns; shown oldest first to read as a conversation.
    kept: list[Memory] = []
    cost = 0
    room = budget - used - 200
    for m in recent:
        c = estimate_tokens(_line(m) + "\n", cpt)
        if cost + c > room * 0.6:  # leave room for the query and review sections
            block.truncated = True
            break
        kept.append(m)
        cost += c
    await add_memories("recent", f"Recent (last {s.short_term_days:g} days)", list(reversed(kept)))

    # 4. relevant to the query; a result whose words are already above (the same line said again, one copy
    # recent, another the search's pick) is not shown twice
    if fresh := [h for h in hits if not any(m.id in seen for m in h.memories())]:
        await add_memories("relevant", f"Relevant to: {' '.join((query or '').split())[:80]}",
                           [h.memory for h in fresh], fresh)

    # 5. due reviews
    due = await svc.due_reviews(ident.user_id, now)
    await add_memories("review", "Due for review", due)

    block.text = "\n".join(lines).strip() + "\n"
    block.tokens = used
    return block

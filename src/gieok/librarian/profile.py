"""Profile promotion: stable facts about the user move from `role='user'` rows into `users.core_profile`
(the few facts that always matter: name, job, language) and `users.sub_profile` (the rest).

Only the user's own words count: rows of any other role are never read here, so an assistant's guess
("the user is a Staff Engineer") cannot become a profile fact (seed 1-A, defence ②). Each fact keeps the
ids of the memories it came from, so erasing a memory can erase what was learned from it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gieok.core.dates import utcnow
from gieok.core.errors import ProviderError
from gieok.core.models import Memory
from gieok.librarian.profile_facts import Fact, FactExtractor, OfflineFactExtractor
from gieok.memory.service import MemoryService
from gieok.store.base import UserProfile

# Keys with one current value: a newer statement replaces the older one (the old value is kept in history).
SINGLE_VALUED = frozenset({"name", "job", "location"})


def make_extractor(svc: MemoryService) -> FactExtractor:
    from gieok.providers.llm import make_llm
    llm = make_llm(svc.settings)
    if llm is None:
        return OfflineFactExtractor()
    from gieok.librarian.profile_facts import LLMFactExtractor
    return LLMFactExtractor(llm)


def merge_fact(profile: UserProfile, fact: Fact, source_id: str, at: str) -> bool:
    """Fold one fact into the profile; returns whether anything changed."""
    section = profile.core_profile if fact.core else profile.sub_profile
    value_key = fact.value.casefold()
    for item in section:
        if item.get("key") == fact.key and str(item.get("value", "")).casefold() == value_key:
            if source_id in item.setdefault("sources", []):
                return False
            item["sources"].append(source_id)
            return True
    if fact.key in SINGLE_VALUED:
        for item in list(section):
            if item.get("key") == fact.key and item.get("origin") != "user":
                section.remove(item)
                history = item.get("history", [])
                entry: dict[str, Any] = {"key": fact.key, "value": fact.value, "sources": [source_id], "at": at,
                                         "origin": "librarian", "history": [*history, item.get("value")]}
                section.append(entry)
                return True
    section.append({"key": fact.key, "value": fact.value, "sources": [source_id], "at": at, "origin": "librarian"})
    return True


async def promote_facts(svc: MemoryService, rows: Sequence[Memory], extractor: FactExtractor | None = None) -> int:
    """Extract and merge facts from the user's own rows; returns facts added or confirmed."""
    extractor = extractor or make_extractor(svc)
    by_user: dict[str, list[Memory]] = {}
    for m in rows:
        if m.role == "user" and m.deleted_at is None:
            by_user.setdefault(m.user_id, []).append(m)
    changed_total = 0
    for user_id, mine in by_user.items():
        profile = await svc.profile(user_id)
        changed = 0
        for m in sorted(mine, key=lambda r: r.created_at or utcnow()):
            try:
                facts = await extractor.extract(m.content, m.role)
            except ProviderError:
                continue  # the offline path never fails; an LLM outage just postpones promotion
            at = (m.created_at or utcnow()).isoformat()
            changed += sum(merge_fact(profile, f, m.id, at) for f in facts)
        if changed:
            await svc.store.save_user(profile)
            changed_total += changed
    return changed_total

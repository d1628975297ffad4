"""Profile promotion: stable facts about the user move from `role='user'` rows into `users.core_profile`
(the few facts that always matter: name, job, language) and `users.sub_profile` (the rest).

Only the user's own words count: rows of any other role are never read here, so an assistant's guess
("the user is a Staff Engineer") cannot become a profile fact (seed 1-A, defence ②). Each fact keeps the
ids of the memories it came from, so erasing a memory can erase what was learned from it.

A row whose facts could not be read (an LLM outage) is not done: `promote_facts` reports it, and the librarian
leaves its profile step pending in the cold queue, so it is read again on a later cycle.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gieok.core.dates import utcnow
from gieok.core.errors import ProviderError
from gieok.core.models import Memory
from gieok.core.settings import Settings
from gieok.librarian.profile_facts import Fact, FactExtractor, OfflineFactExtractor
from gieok.store.base import Store, UserProfile

# Keys with one current value: a newer statement replaces the older one (the old value is kept in history).
SINGLE_VALUED = frozenset({"name", "job", "location"})


@dataclass(slots=True)
class Promotion:
    """What one promotion did: facts added or confirmed, and the rows whose facts are still owed."""

    changed: int = 0
    failed: dict[str, ProviderError] = field(default_factory=dict)


def make_extractor(settings: Settings) -> FactExtractor:
    from gieok.providers.llm import make_llm
    llm = make_llm(settings)
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


async def promote_facts(store: Store, rows: Sequence[Memory], extractor: FactExtractor) -> Promotion:
    """Extract and merge facts from the user's own rows. A row the extractor failed on is reported in
    `failed` (the offline extractor never fails); merging is idempotent per source row, so reading it again
    later adds nothing twice."""
    out = Promotion()
    by_user: dict[str, list[Memory]] = {}
    for m in rows:
        if m.role == "user" and m.deleted_at is None:
            by_user.setdefault(m.user_id, []).append(m)
    for user_id, mine in by_user.items():
        profile = await store.get_user(user_id) or UserProfile(user_id=user_id)
        changed = 0
        for m in sorted(mine, key=lambda r: r.created_at or utcnow()):
            try:
                facts = await extractor.extract(m.content, m.role)
            except ProviderError as exc:
                out.failed[m.id] = exc
                continue
            at = (m.created_at or utcnow()).isoformat()
            changed += sum(merge_fact(profile, f, m.id, at) for f in facts)
        if changed:
            await store.save_user(profile)
            out.changed += changed
    return out

"""An agent's reply and the user's message beside it, both matching a why or how question: the reply speaks for the
exchange.

In an agent's session the user's message reports, asks or reacts ("프론트 빌드가 너무 느려", "좋아 vite로 가자"), and
the assistant's message beside it holds what was found, done or decided ("webpack을 vite로 바꾸면 빌드 시간이 40초
정도로 줄어요…"). Each message is embedded with the one before it, so when a question is about their exchange both
are close to it, and small things decided which came first: the user's short message holds the query's words more
densely (BM25), and the reply beside it lifted it (ranking's neighbour term). The report of a problem came first for
"환불 500 에러 원인이 뭐였지?", the answer second.

So for a question asking why or how (gieok.retrieval.explain_words), an assistant's message takes the relevance of
a user's message just before or after it in its session when it says at least as much and its own relevance is
close to the user's (`Recipe.exchange_share` of it, both without the "when" and order bonuses, which pick one row
among equals). The user's message keeps its place beside it. Not for every question: a user's message often states
the fact asked for ("Our staging URL is …"), and the reply beside it, embedded with it, went on to other work; lifted
for any question, the reply came first for six of eight such questions. A short "Got it." after a user's rule says
less than the rule and is not lifted. People's chats, where every message is a user's (LoCoMo), are untouched.

And for the order bonus, a user's reaction written a minute after the answer takes the answer's time
(`exchange_times`): "좋아 vite로 가자" took the bonus of "how long does the frontend build take now?" from the answer
that says 40 seconds.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from gieok.core.models import Memory


def _says_as_much(reply: Memory, message: Memory) -> bool:
    # Characters, not words: a Korean message has fewer, longer words than its English rendering.
    return len(reply.content.strip()) >= len(message.content.strip())


def reply_lifts(memories: Sequence[Memory], neighbours: Sequence[Sequence[str]], bases: Sequence[float],
                rels: Sequence[float], share: float) -> list[float]:
    """How much each assistant's message's relevance (`rels`) rises to stand level with the user's message beside
    it (0 for every other row). `neighbours`: each row's session neighbours' ids (just before and after; those
    that are candidates count); `bases`: the relevances without the "when" and order bonuses."""
    lifts = [0.0] * len(memories)
    if share <= 0:
        return lifts
    at = {m.id: i for i, m in enumerate(memories)}
    for i, m in enumerate(memories):
        if m.role != "assistant":
            continue
        for nid in neighbours[i]:
            j = at.get(nid)
            if j is None or memories[j].role != "user" or rels[j] <= rels[i] + lifts[i]:
                continue
            if bases[j] > 0 and bases[i] >= share * bases[j] and _says_as_much(m, memories[j]):
                # Level, plus a hair so that the reply is picked first (the duplication penalty then keeps the
                # user's message, which its vector holds, a little below).
                lifts[i] = rels[j] * 1.001 - rels[i]
    return lifts


def exchange_times(memories: Sequence[Memory], neighbours: Sequence[Sequence[str]]) -> list[datetime | None]:
    """Each row's time for the order bonus (gieok.retrieval.order_words): a user's message just after an
    assistant's takes that message's time, since a reaction to an answer is no newer a state of things than the
    answer. Which of the two comes first is then left to their relevance."""
    at = {m.id: i for i, m in enumerate(memories)}
    times = [m.created_at for m in memories]
    for i, m in enumerate(memories):
        if m.role != "user" or m.created_at is None:
            continue
        for nid in neighbours[i]:
            j = at.get(nid)
            before = memories[j].created_at if j is not None else None
            if j is not None and memories[j].role == "assistant" and before is not None and before < m.created_at:
                times[i] = before
    return times

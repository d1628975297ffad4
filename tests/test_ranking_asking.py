"""A message that mostly asks ranks below one that tells (ranking's `Recipe.r_question`, gieok.retrieval.asking):
the reply holds the answer, the question only shares the query's form and words. In English and Korean."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from gieok.core.models import Memory
from gieok.retrieval.asking import question_share
from gieok.retrieval.ranking import Candidate, rank
from gieok.retrieval.recipes import RECIPES, Recipe, with_overrides

NOW = datetime(2025, 6, 1, tzinfo=UTC)
AT = datetime(2025, 5, 1, tzinfo=UTC)
HYBRID = with_overrides(RECIPES["hybrid"], cos_floor=0.7)
OFF = with_overrides(HYBRID, r_question=0.0)


@pytest.mark.parametrize(("text", "share"), [
    ("What kind of yoga is it?", 1.0),
    ("I started aerial yoga. It's great.", 0.0),
    ("요가 어떤 종류야?", 1.0),
    ("요즘 쿤달리니 요가를 하고 있어.", 0.0),
    ("어떤 요가야？", 1.0),                       # a full-width question mark
    ("She said \"is it ready?\"", 1.0),          # closing quotes after the mark
    ("", 0.0),
    ("no punctuation at all", 0.0),
    ("The endpoint is https://api.example.com/search?q=1 now.", 0.0),   # a query string asks nothing
    ("Set it with x=a?b:c in the config", 0.0),
])
def test_question_share(text: str, share: float) -> None:
    assert question_share(text) == pytest.approx(share)


def test_question_share_is_by_length() -> None:
    tell, ask = "I did aerial yoga last week and loved it.", "You?"
    assert question_share(f"{tell} {ask}") == pytest.approx(len(ask) / (len(tell) + len(ask)))
    # Lines count as sentences too: a question on its own line, a statement without a full stop on the next.
    assert question_share("Which port?\nWe use 8080") == pytest.approx(0.5)
    # Only the opening of a long note is read.
    assert question_share("Why? " + "x" * 5000) > 0
    assert question_share("x" * 5000 + " Why?") == 0.0


def _order(query: str, cands: list[Candidate], recipe: Recipe) -> list[str]:
    hits = rank(cands, query_tokens=set(), query_text=query, now=NOW, recipe=recipe, limit=5)
    return [h.memory.id for h in hits]


def _mem(mid: str, content: str) -> Memory:
    return Memory(id=mid, user_id="u", role="user", content=content, created_at=AT)


@pytest.mark.parametrize(("query", "asks", "tells"), [
    ("What types of yoga has Maria practiced?",
     "Wow, that looks great! What kind of yoga is it?",
     "Just started doing aerial yoga, it's great."),
    ("마리아는 어떤 요가를 해 봤어?",
     "우와, 멋지다! 그거 어떤 요가야?",
     "요즘 공중 요가를 시작했는데 진짜 좋아."),
])
def test_the_reply_outranks_the_question_it_answers(query: str, asks: str, tells: str) -> None:
    # The asking message is a little closer to the question (its form and words); the reply holds the answer.
    cands = [Candidate(_mem("asks", asks), cos=0.90, bm25=3.0), Candidate(_mem("tells", tells), cos=0.89, bm25=3.0)]
    assert _order(query, cands, OFF) == ["asks", "tells"]
    assert _order(query, cands, HYBRID) == ["tells", "asks"]


def test_an_asking_row_that_alone_matches_is_still_found() -> None:
    # "What did I ask about the JWT keys?": the question itself is the memory, and nothing else matches.
    c = Candidate(_mem("q", "How do we rotate the JWT signing keys?"), cos=0.92, bm25=5.0)
    hits = rank([c], query_tokens=set(), query_text="rotate JWT keys", now=NOW, recipe=HYBRID, limit=5)
    assert [h.memory.id for h in hits] == ["q"]
    off, = rank([c], query_tokens=set(), query_text="rotate JWT keys", now=NOW, recipe=OFF, limit=5)
    assert hits[0].parts["relevance"] == pytest.approx(off.parts["relevance"] - HYBRID.r_question)

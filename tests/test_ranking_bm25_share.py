"""An English query's BM25 counts partly as a share of the best among its candidates (ranking's
`Recipe.bm25_share_of_best`): the row matching its words best stands out against a slightly closer vector; a
negligible best is no full match; Korean queries and rows in another script keep the saturated BM25 alone."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from gieok.core.models import Memory
from gieok.retrieval.ranking import Candidate, rank
from gieok.retrieval.recipes import RECIPES, Recipe, with_overrides

NOW = datetime(2025, 6, 1, tzinfo=UTC)
AT = datetime(2025, 5, 1, tzinfo=UTC)
SHARE = with_overrides(RECIPES["hybrid"], cos_floor=0.7)
SATURATED = with_overrides(SHARE, bm25_share_of_best=0.0)


def _mem(mid: str, content: str) -> Memory:
    return Memory(id=mid, user_id="u", role="user", content=content, created_at=AT)


def _order(query: str, cands: list[Candidate], recipe: Recipe) -> list[str]:
    hits = rank(cands, query_tokens=set(), query_text=query, now=NOW, recipe=recipe, limit=5)
    return [h.memory.id for h in hits]


def test_the_best_word_match_outranks_a_slightly_closer_vector() -> None:
    def cands(a: str, b: str) -> list[Candidate]:
        # b holds the question's words best (BM25 6.0); a is a little closer in meaning and shares fewer.
        return [Candidate(_mem("a", a), cos=0.935, bm25=3.0), Candidate(_mem("b", b), cos=0.90, bm25=6.0)]

    q = "What did Caroline realize after the charity race?"
    english = cands("Caroline ran a race for a cause", "After the charity race I realized self-care matters")
    assert _order(q, english, SATURATED) == ["a", "b"]
    assert _order(q, english, SHARE) == ["b", "a"]
    hits = rank(english, query_tokens=set(), query_text=q, now=NOW, recipe=SHARE, limit=2)
    # relevance = 0.6·cos part + 0.4·bm part: the best row's BM25 part is (0.75 + 1) / 2, the other's (0.6 + 0.5) / 2.
    parts = {h.memory.id: h.parts["relevance"] for h in hits}
    assert parts["b"] == pytest.approx(0.6 * (0.20 / 0.30) + 0.4 * 0.875)
    assert parts["a"] == pytest.approx(0.6 * (0.235 / 0.30) + 0.4 * 0.55)
    # A Korean query over Korean rows: BM25 of character bigrams, saturated as before.
    korean = cands("캐롤라인은 좋은 일을 위해 달렸다", "자선 달리기 후에 자기 돌봄이 중요하다는 걸 깨달았어")
    assert _order("자선 달리기 후에 뭘 깨달았어?", korean, SHARE) == ["a", "b"]
    # An English query over Korean rows (their BM25 from translated words): the same.
    assert _order(q, cands("캐롤라인은 좋은 일을 위해 달렸다", "자선 달리기 후에 깨달았어"), SHARE) == ["a", "b"]


def test_a_negligible_best_is_no_full_match() -> None:
    # In a store of two rows a word in one of them has an idf of ~0: its BM25 (1e-6) is the best, but counts
    # as a share of k (2.0), not of itself.
    c = Candidate(_mem("a", "We deploy on Tuesdays"), cos=0.86, bm25=1e-6)
    hit, = rank([c], query_tokens=set(), query_text="when do we deploy?", now=NOW, recipe=SHARE, limit=1)
    assert hit.parts["relevance"] == pytest.approx(0.6 * (0.16 / 0.30), abs=1e-5)

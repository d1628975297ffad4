"""A query names a row's title as a word (ranking's `r_title`, gieok.retrieval.title_match), not as a piece of
one: a speaker called 지나 is not named by "지나간 주말", a note titled "AI" not by "maintain"."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from gieok.core.models import Memory
from gieok.retrieval.ranking import Candidate, rank
from gieok.retrieval.recipes import RECIPES
from gieok.retrieval.title_match import names_title


@pytest.mark.parametrize(("query", "title", "named"), [
    ("what did caroline say?", "caroline", True),
    ("jon's studio", "jon", True),
    ("jonathan said so", "jon", False),
    ("how do we maintain it?", "ai", False),
    ("is the ai review done?", "ai", True),
    ("billing", "billing service", True),            # the query is a word of the title
    ("bill", "billing service", False),
    ("존은 어디 갔어?", "존", True),                     # a particle after the name
    ("지나한테 뭐 줬어?", "지나", True),
    ("caroline이랑 뭐 했어?", "caroline", True),
    ("지나간 주말에 뭐 했어?", "지나", False),            # a verb that begins with the name
    ("존재 이유가 뭐야?", "존", False),
    ("혜진님 메일", "혜진", True),                     # an honorific, with or without a particle after it
    ("민수씨한테 물어봐", "민수", True),
    # A name written in the other script: an English question over Korean rows, a Korean one over English rows.
    ("how is jon's store doing?", "존", True),
    ("what did gina say?", "지나", True),             # a g before i is said j
    ("melanie's kids", "멜라니", True),
    ("혜진님 메일", "hyejin", True),
    ("존은 뭘 했어?", "jon", True),
    ("존재 이유가 뭐야?", "jon", False),               # closer than the loanwords' bar, which let this pass
    ("아이 학교 상담", "ai", False),                   # a Latin title of two letters is no name
    ("what did jonathan say?", "존", False),
    ("", "존", False),
    ("존", "", False),
])
def test_names_title(query: str, title: str, named: bool) -> None:
    assert names_title(query, title) is named


def test_ranking_counts_a_title_only_when_the_query_names_it() -> None:
    now = datetime(2025, 6, 1, tzinfo=UTC)
    m = Memory(id="a", user_id="u", role="user", title="지나", content="주말에 공원에 갔어", created_at=now)

    def title_part(query: str) -> float:
        hit, = rank([Candidate(m, cos=0.9, bm25=1.0)], query_tokens=set(), query_text=query, now=now,
                    recipe=RECIPES["hybrid"], limit=1)
        return hit.parts["title"]

    assert title_part("지나는 주말에 뭐 했어?") == 1.0
    assert title_part("지나간 주말에 뭐 했어?") == 0.0

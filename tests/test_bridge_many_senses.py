"""A Korean word with many dictionary senses gives the bridge only the best one the memory holds.

가다 lists 47 senses, among them "last" (as in "the battery lasts"): over a memory that says "last month", "어디
갔어?" also searched for "last", and a note about a bakery opened last month was shown for a question about where
someone went. A word of few senses keeps two (사진: "photo; picture"), and the dev glossary's software senses are
each meant (배포: "deploy", "release", "rollout").
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gieok.retrieval import ko_lexicon
from gieok.retrieval.bridge import bridge_query
from tests.conftest import e5_service


@pytest.fixture(scope="module", autouse=True)
def _dictionary() -> None:
    if not ko_lexicon.senses_table():
        pytest.skip("the bundled Korean dictionary (namehint) is not installed")


@pytest.mark.parametrize(("word", "many"), [("가다", True), ("두다", True), ("사진", False), ("배포", False),
                                            ("배포했어", False)])
def test_which_words_have_many_senses(word: str, many: bool) -> None:
    found = ko_lexicon.lookup(word)
    assert found is not None
    assert ko_lexicon.many_senses(*found) is many


NOTES = ["Melanie went to the beach with her kids", "Mina opened her bakery last month",
         "We took a photo and a picture of the sunset"]


async def test_a_word_of_many_senses_gives_its_best_only(tmp_path: Path) -> None:
    async with e5_service(tmp_path, NOTES) as svc:
        went = await bridge_query(svc.store, svc.embedder, "alice", "Melanie는 아이들이랑 어디 갔어?")
        assert ["went"] in went.terms and ["last"] not in went.terms, went.terms
        photo = await bridge_query(svc.store, svc.embedder, "alice", "노을 사진 있어?")
        assert ["photo"] in photo.terms and ["pictur"] in photo.terms, photo.terms

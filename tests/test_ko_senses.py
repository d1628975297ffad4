"""A Korean word's dictionary senses that the memory words otherwise (gieok.retrieval.ko_senses.reworded): the
memory's own word stands in for the sense, with the model's real vectors end to end."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from gieok.retrieval.ko_senses import reworded, to_reword
from tests.conftest import e5_service, found_and_named


def _unit(*xs: float) -> np.ndarray:
    v = np.array(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


# A vocabulary of three words, and vectors that make each case plain: a sense close to one word of it, far from
# the rest (its mean), and the Korean word close to that word too.
VOCAB = ["area", "biking", "active"]
MATRIX = np.stack([_unit(1, 0, 0, 0.2), _unit(0, 1, 0, 0.2), _unit(0, 0, 1, 0.2)])
INDEX = {"area": 0, "bike": 1, "activ": 2}


def _reworded(phrase: str, vec: np.ndarray, word_vec: np.ndarray) -> list[list[str]]:
    return reworded([phrase], vec[None, :], vec[None, :] @ MATRIX.T, word_vec, VOCAB, MATRIX, INDEX)


def test_a_sense_takes_the_vocabulary_word_nearest_it() -> None:
    assert _reworded("bicycle", _unit(0.05, 1, 0.05, 0.2), MATRIX[1]) == [["bike"]]


def test_not_a_word_of_the_sense_itself() -> None:
    # "resting area" is near "area" because it holds the word; that is half the sense, not another word for it.
    assert _reworded("resting area", _unit(1, 0.05, 0.05, 0.2), MATRIX[0]) == []


def test_not_a_word_far_from_the_korean_word() -> None:
    # "inactive" lies next to "active" for the model; the Korean word (둔하다) does not.
    assert _reworded("inactive", _unit(0.05, 0.05, 1, 0.2), _unit(1, 1, -1, 0)) == []


async def test_only_a_word_none_of_whose_senses_the_memory_holds() -> None:
    # 자전거 is "bicycle" (not in the vocabulary); 친구 is "friend" (in it): only 자전거 is reworded, usual sense
    # first.
    got = await to_reword([("자전거", "자전거"), ("친구", "친구")], {"friend": 0, "bike": 1})
    assert list(got) == [0] and got[0][0] == "bicycle", got


NOTES = ["Went biking along the river with Jisoo last Saturday, about 30 km.",
         "Grandma's 80th birthday dinner is at the Korean BBQ place near her house.",
         "The staging database password rotates every 90 days."]


async def test_the_memorys_own_word_finds_the_note_and_is_named(tmp_path: Path) -> None:
    # Before, 자전거 and 할머니 had no English term at all: the dictionary says "bicycle" and "grandmother", the
    # notes say "biking" and "grandma", and the cosines alone left both questions with nothing close.
    async with e5_service(tmp_path, NOTES) as svc:
        assert await found_and_named(svc, [("자전거 얼마나 탔어?", NOTES[0], "자전거 → biking"),
                                           ("할머니 생신 저녁", NOTES[1], "할머니 → grandma")],
                                     datetime(2025, 6, 1, tzinfo=UTC)) == 2

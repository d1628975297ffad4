"""Loanwords in Hangul next to their English originals (gieok.retrieval.loanwords), and the bridge's use of them."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from gieok.memory.ingest import MessageIn
from gieok.retrieval.loanwords import english_skeleton, korean_skeleton, sounds_alike
from tests.conftest import e5_service

LOANWORDS = [("레디스", "redis"), ("도커", "docker"), ("쿠버네티스", "kubernetes"), ("깃허브", "github"),
             ("리액트", "react"), ("포스트그레스", "postgres"), ("젠킨스", "jenkins"), ("슬랙", "slack"),
             ("노션", "notion"), ("테라폼", "terraform"), ("서버", "server"), ("캐시", "cache"), ("큐", "queue"),
             ("파이프라인", "pipeline"), ("시크릿", "secret"), ("커밋", "commit"), ("브랜치", "branch"),
             ("스테이징", "staging"), ("대시보드", "dashboard"), ("멘토", "mentor")]
# A Korean word's chance neighbours in a vocabulary, as the embedding model found them.
NEIGHBOURS = [("오프닝", "promotion"), ("주는", "yay"), ("전에", "ahead"), ("일을", "dates"), ("된", "gonna"),
              ("사료", "cache"), ("날씨", "schedule"), ("고양이", "kafka"), ("선물", "secret"), ("장애", "database"),
              ("만든", "creating"), ("책을", "book"), ("집에", "home"), ("춤과", "dancing")]


@pytest.mark.parametrize("korean, english", LOANWORDS)
def test_a_loanword_sounds_like_its_original(korean: str, english: str) -> None:
    assert sounds_alike(korean, english), (korean_skeleton(korean), english_skeleton(english))


@pytest.mark.parametrize("korean, english", NEIGHBOURS)
def test_a_chance_neighbour_does_not(korean: str, english: str) -> None:
    assert not sounds_alike(korean, english), (korean_skeleton(korean), english_skeleton(english))


def test_korean_spelling_is_folded_in() -> None:
    assert korean_skeleton("깃") == english_skeleton("git")          # a final ㅅ is said t
    assert english_skeleton("server") == korean_skeleton("서버")      # r after a vowel is not written
    assert english_skeleton("notion") == korean_skeleton("노션")      # -tion is 션
    assert not sounds_alike("", "redis") and not sounds_alike("레디스", "")


async def test_a_loanword_finds_its_original_when_nothing_is_close_in_meaning(tmp_path: Path) -> None:
    # A Korean developer asks about what an agent wrote in English. The cosines alone say nothing is close, and a
    # keyword fallback showed only literal and dictionary matches, so "레디스" (not in the dictionary) found
    # nothing although the model puts it next to "redis".
    now = datetime(2025, 6, 1, tzinfo=UTC)
    texts = ["We chose Redis for the session cache because Memcached lacked persistence",
             "The CI pipeline runs on GitHub Actions; the deploy job needs the PROD_TOKEN secret",
             "The billing service uses PostgreSQL 16 with pgvector"]
    async with e5_service(tmp_path, []) as svc:
        for t in texts:
            await svc.remember(MessageIn(content=t, user_id="alice", kind="semantic", importance=0.8,
                                         created_at=now.isoformat()))
        for query, answer in (("왜 레디스를 골랐지?", texts[0]), ("깃허브 액션 시크릿", texts[1])):
            out = await svc.search(svc.filters("alice"), query, now=now)
            assert [h.memory.content for h in out.hits][:1] == [answer], (query, out.mode, [
                (h.memory.content, h.recall_reason) for h in out.hits])

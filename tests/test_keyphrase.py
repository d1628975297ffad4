"""Offline keyphrases: topic words in English and Korean, never particles, stopwords or verb endings."""

from __future__ import annotations

import re

import pytest

from gieok.librarian.keyphrase import extract_keyphrases, strip_particles

KO_MEETING = "내일 오전에 센트라젠 프로젝트 회의가 있고 커피를 마시면서 데이터베이스 마이그레이션을 논의했다"
PARTICLE_ENDINGS = ("은", "는", "을", "를", "에", "에서", "으로", "와", "과", "도", "만", "입니다", "했다", "했어요")


def test_korean_sentence_gives_its_nouns_without_particles() -> None:
    tags = extract_keyphrases(KO_MEETING, k=5)
    assert {"회의", "커피", "데이터베이스", "마이그레이션"} <= set(tags)
    assert len(tags) == 5
    for t in tags:
        assert t not in ("내일", "오전", "있고", "마시면서"), t  # time words and verb forms are not topics
        assert not t.endswith(PARTICLE_ENDINGS), t


def test_korean_verbal_noun_keeps_its_noun() -> None:
    tags = extract_keyphrases(KO_MEETING, k=10)
    assert "논의" in tags  # 논의했다 → 논의
    assert "논의했다" not in tags and "마시" not in tags


@pytest.mark.parametrize(("word", "stem"), [
    ("커피를", "커피"), ("회의가", "회의"), ("회의", "회의"), ("결과", "결과"), ("서울에서", "서울"),
    ("데이터베이스로", "데이터베이스"), ("개발자입니다", "개발자"), ("사람들", "사람"),
    ("마이그레이션을", "마이그레이션"), ("학교에서는", "학교"),
])
def test_strip_particles_longest_suffix_first_and_keeps_nouns_whole(word: str, stem: str) -> None:
    assert strip_particles(word) == stem


def test_korean_repetition_ranks_first() -> None:
    text = ("저는 백엔드 개발자입니다. 요즘 쿠버네티스 배포 자동화를 하고 있어요. "
            "배포 파이프라인이 자주 실패해서 배포 스크립트를 고쳤습니다.")
    tags = extract_keyphrases(text, k=5)
    assert tags[0] == "배포"
    assert "쿠버네티스" in tags
    assert not {"저", "요즘", "자주", "있어요"} & set(tags)


def test_english_groups_word_forms_and_keeps_identifiers() -> None:
    text = ("We decided to migrate the Postgres database to pgvector; the migration script lives in store.py "
            "and uses SQLAlchemy's AsyncEngine.")
    tags = extract_keyphrases(text, k=8)
    assert "migration" in tags and "migrate" not in tags  # one stem, shown in its noun form
    assert {"store.py", "postgres", "database"} <= set(tags)
    assert "asyncengine" in tags or "sqlalchemy" in tags
    assert not {"the", "we", "decided", "uses", "lives"} & set(tags)


def test_code_identifiers_survive_as_written() -> None:
    tags = extract_keyphrases(
        "Please fix tag_status handling: rows with embed_status='failed' are never retried in sqlite.py.", k=5)
    assert {"tag_status", "embed_status", "sqlite.py"} <= set(tags)


def test_recurring_proper_phrase_becomes_one_tag() -> None:
    text = "I love Claude Code and use it with the MCP server every day. Claude Code hooks capture each turn."
    tags = extract_keyphrases(text, k=5)
    assert tags[0] == "claude-code"
    assert "claude" not in tags and "code" not in tags  # the phrase and its words are one topic


def test_repeated_phrase_beats_its_words() -> None:
    text = ("The vector index is slow. We rebuilt the vector index twice. "
            "Now the vector index answers in 3 ms.")
    tags = extract_keyphrases(text, k=3)
    assert tags[0] == "vector-index"


def test_tags_are_normalised() -> None:
    text = "Long-Term Memory for AI agents. Long-term memory needs forgetting; long-term memory is hard."
    for tag in extract_keyphrases(text, k=5):
        assert tag == tag.lower() and " " not in tag
        assert len(tag.split("-")) <= 4  # at most 3 words, one of which may itself be hyphenated
        assert re.fullmatch(r"[\w.\-]+", tag), tag


@pytest.mark.parametrize("text", ["", "   ", "ok thanks", "네 감사합니다", "the and of", "1234 5678", "?!"])
def test_nothing_topical_gives_nothing(text: str) -> None:
    assert extract_keyphrases(text) == []


def test_k_bounds_the_result() -> None:
    assert extract_keyphrases(KO_MEETING, k=0) == []
    assert len(extract_keyphrases(KO_MEETING, k=2)) == 2


def test_urls_are_not_tags() -> None:
    tags = extract_keyphrases("See https://example.com/some/long/path?x=1 for the benchmark results.", k=5)
    assert "benchmark" in tags
    assert not any("example" in t or "http" in t for t in tags)


def test_mixed_korean_english() -> None:
    tags = extract_keyphrases("API 서버를 FastAPI로 다시 작성했고 테스트 코드도 추가했어요", k=6)
    assert {"fastapi", "서버"} <= set(tags)
    assert not {"다시", "로", "를"} & set(tags)


def test_deterministic() -> None:
    assert extract_keyphrases(KO_MEETING) == extract_keyphrases(KO_MEETING)

"""Loanwords in Hangul next to their English originals (gieok.retrieval.loanwords), and the bridge's use of them."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from gieok.memory.ingest import MessageIn
from gieok.retrieval.loanwords import (
    ends_unlike,
    english_skeleton,
    exact_sound,
    korean_skeleton,
    romanized,
    sounds_alike,
    spelled_alike,
)
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


@pytest.mark.parametrize("korean, english", [("파이썬", "python"), ("스레드", "thread"), ("메서드", "method"),
                                             ("깃허브", "github"), ("테마", "theme")])
def test_th_is_heard_as_korean_writes_it(korean: str, english: str) -> None:
    # Voiceless th is written ㅅ / ㅆ (파이썬), elsewhere ㄷ / ㅌ (테마), and git-hub's t and h stay apart.
    assert sounds_alike(korean, english)


@pytest.mark.parametrize("korean, english, want", [
    ("사파리", "safari", True), ("젠킨스", "jenkins", True), ("피그마", "figma", True), ("파이썬", "python", True),
    ("쿠버네티스", "kubernetes", True), ("컨테이너", "containers", True), ("파이프라인", "pipelines", True),
    ("도커", "docker", False),        # two classes (TK) also fit dog, take and tick: not surer than sounds_alike
    ("도커", "dog", False), ("사료", "cache", False), ("고양이", "kafka", False), ("오프닝", "promotion", False),
])
def test_an_exact_sound_needs_three_classes(korean: str, english: str, want: bool) -> None:
    assert exact_sound(korean, english) is want


async def test_a_loanword_is_found_by_its_sound_in_a_small_vocabulary(tmp_path: Path) -> None:
    # In a vocabulary of a few dozen words the model's margins are small: 사파리 stood 0.035 above its mean cosine
    # (under the loanword margin, and the hub check dropped it), and 파이썬 → python was not heard as alike (th),
    # so "파이썬 버전 뭐로 고정했어?" found nothing at all.
    now = datetime(2026, 12, 7, tzinfo=UTC)
    texts = ["The login page breaks in Safari because of CSS grid.", "Docker image build fails on arm64 runners.",
             "We pinned Python to 3.11 in the CI image.", "React state resets when the modal closes.",
             "Kubernetes liveness probe kills the pod during migrations.",
             "GitHub Actions cache is evicted after 7 days.", "Nginx returns 502 when the upstream restarts.",
             "The Slack webhook for alerts was rotated.", "Figma designs for the dashboard are in the shared folder.",
             "Jenkins is gone; everything runs on GitHub Actions now."]
    async with e5_service(tmp_path, texts) as svc:
        for query, answer, named in (("사파리 로그인 문제", texts[0], "사파리 → safari"),
                                     ("파이썬 버전 뭐로 고정했어?", texts[2], "파이썬 → python")):
            out = await svc.search(svc.filters("alice"), query, now=now, count_view=False)
            assert out.hits and out.hits[0].memory.content == answer, (query, out.mode, out.notes)
            assert any(named in r for r in out.hits[0].recall_reason), out.hits[0].recall_reason


def test_a_word_heard_exactly_is_an_english_word_near_it_not_korean_in_latin_letters() -> None:
    import numpy as np

    from gieok.retrieval.bridge import _sounding

    terms = ["naengmyeon", "naming", "menu", "lunch", "price"]
    row = np.array([0.86, 0.85, 0.70, 0.70, 0.70])
    # 네이밍 sounds exactly like naengmyeon (냉면 in Latin letters) too, and the model put it nearer.
    assert _sounding("네이밍", row, terms) == ("naming", pytest.approx(0.85 - row.mean()))
    # Under the cosine bar nothing is heard, however alike it sounds.
    assert _sounding("네이밍", np.array([0.70, 0.79, 0.70, 0.70, 0.70]), terms) is None


@pytest.mark.parametrize(("korean", "english", "unlike"), [
    ("플래그", "flaky", True),      # Korean writes a final consonant with ㅡ: flag, not a word ending in a vowel
    ("플래그", "flags", False),
    ("테스트", "testy", True),
    ("테스트", "test", False),
    ("사파리", "safari", False),    # ends in a vowel as the English does
    ("도커", "docker", False),      # no ㅡ to read anything from
    ("젠킨스", "jenkins", False),
])
def test_a_final_consonant_is_heard_at_the_end(korean: str, english: str, unlike: bool) -> None:
    assert ends_unlike(korean, english) is unlike


def test_of_two_words_with_one_skeleton_the_one_that_ends_alike_is_heard() -> None:
    import numpy as np

    from gieok.retrieval.bridge import _sounding

    # "피처 플래그 관리 도구" over notes holding "flaky" and "flags": the model put flaky nearer, and the flaky test's
    # note was shown first as the keyword match for feature flags.
    terms = ["flaky", "flags", "menu", "lunch", "price"]
    row = np.array([0.86, 0.85, 0.70, 0.70, 0.70])
    assert _sounding("플래그", row, terms) == ("flags", pytest.approx(0.85 - row.mean()))
    alone = np.array([0.86, 0.70, 0.70, 0.70, 0.70])
    # The only one above the bars: taken as before.
    assert _sounding("플래그", alone, terms) == ("flaky", pytest.approx(0.86 - alone.mean()))


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


@pytest.mark.parametrize("korean, english", [("유나", "yuna"), ("지훈", "jihoon"), ("정식", "jungsik"),
                                             ("하둡", "hadoop"), ("망고", "mango"), ("지라", "jira"),
                                             ("망원", "mangwon"), ("후드티", "hoodie")])
def test_korean_in_latin_letters_is_spelled_as_the_korean_word(korean: str, english: str) -> None:
    assert romanized(english) and spelled_alike(korean, english)


@pytest.mark.parametrize("korean, english", [("민호", "mangwon"), ("민수", "mansion"), ("혜진", "minsu")])
def test_another_korean_word_in_latin_letters_is_not(korean: str, english: str) -> None:
    # 민호 and mangwon share their consonants ("MN"), which is all `sounds_alike` compares.
    assert romanized(english) and not spelled_alike(korean, english)


def test_english_words_and_loanwords_are_not_read_as_romanization() -> None:
    assert not any(romanized(w) for w in ("redis", "github", "slack", "kubernetes", "hudson"))
    # These read as romanization but are English words: the bridge asks the dictionary before comparing vowels,
    # which Korean spelling changes (노션, 데이터).
    assert all(romanized(w) for w in ("pipeline", "notion", "data"))
    assert not spelled_alike("노션", "notion") and sounds_alike("노션", "notion")
    assert not spelled_alike("데이터", "data") and sounds_alike("데이터", "data")


NAMES = ["Hyejin prefers feedback in Slack DMs rather than email.",
         "Minsu from DevOps handles the Kubernetes cluster upgrades.",
         "Tennis lesson with Coach Kang every Sunday 8am at Mangwon Hangang courts."]


async def test_a_korean_name_finds_its_own_spelling_and_not_another_name(tmp_path: Path) -> None:
    # The model puts names near names: 민호 (a friend's wedding, nothing stored) found the tennis note by
    # "mangwon" (망원, a place), shown as "민호 → mangwon"; 혜진님 and 민수 met each other's notes by chance.
    now = datetime(2025, 6, 1, tzinfo=UTC)
    async with e5_service(tmp_path, []) as svc:
        for t in NAMES:
            await svc.remember(MessageIn(content=t, user_id="alice", kind="semantic", importance=0.8,
                                         created_at=now.isoformat()))
        f = svc.filters("alice")
        got = {}
        for query in ("민호 결혼식 언제?", "혜진님 메일", "민수 담당"):
            out = await svc.search(f, query, limit=3, now=now, count_view=False)
            got[query] = [(h.memory.content, [r for r in h.recall_reason if r.startswith("keyword")]) for h in out.hits]
    assert got["민호 결혼식 언제?"] == [], got
    assert got["혜진님 메일"] == [(NAMES[0], ["keyword match: 메일 → email, 혜진님 → hyejin"])], got
    assert got["민수 담당"][:1] == [(NAMES[1], ["keyword match: 민수 → minsu"])], got

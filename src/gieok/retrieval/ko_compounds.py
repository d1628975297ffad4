"""Korean compounds written without their space: "배포일정" for 배포 일정, "코드리뷰" for 코드 리뷰.

Korean spacing of compound nouns is loose, and people type them either way. The full-text index cuts a Korean
word into the bigrams of its own syllables, so a query's "배포일정" is the phrase 배포·포일·일정, which a row
that wrote "배포 일정" (two words, no 포일 between them) never matches; and the bridge, finding no dictionary
entry for the whole, translated it by the model's nearest words ("배포일정" → uv). The seeded developer month
showed it: "배포일정" found the uv note first and not the deploy schedule, "스탠드업직후" found nothing.

A query word of four or more syllables that the dictionary does not know as a whole, and that splits into
words it does know (each of two syllables or more), is also searched as those words; the bridge translates the
parts. A word the dictionary knows ("데이터베이스", "대한민국") is never split; a name in Hangul that happens to
split into two known words ("캐롤라인" → 캐롤, 라인) is the bridge's to keep whole when the model's nearest word
sounds like it (gieok.retrieval.loanwords).
"""

from __future__ import annotations

from collections.abc import Mapping

from gieok.core.text import function_word

MIN_SYLLABLES = 4
MIN_PART = 2
# A verb's stem and ending are not a compound's words ("하이킹하다가" → 하이킹 하다, "산책하다가" → 산책하 다가).
# Nouns in 의 that end compounds people type without a space (오전회의, 주간회의, 기술논의, 고객문의).
_UI_NOUNS = frozenset({"회의", "논의", "합의", "협의", "토의", "건의", "동의", "강의", "문의", "정의"})
_VERB_PARTS = frozenset({"하다", "하고", "하기", "하는", "하면", "다가", "기로", "기가", "이다", "이야", "이랑", "이어",
                         "이었"})


def compound_parts(stem: str, known: Mapping[str, object], written: str = "") -> list[str]:
    """The parts of a query word without its particle or ending, none of them a particle or ending itself;
    `[stem]` when it is no such compound. Never of the word as written (its particle is a dictionary word too:
    "계획이야" → 계획, 이야), except where the stem rule took the last syllable of a compound ending in one of the
    nouns in 의 (`_UI_NOUNS`) for the genitive: "오전회의" → 오전회 is 오전 회의. Only those: "개발자의" is the
    developer's, not 개발 + 자의 ("voluntariness"), although the dictionary knows 자의 and not 개발자."""
    parts = _checked(split_compound(stem, known))
    if len(parts) == 1 and written == f"{stem}의" and stem not in known:
        whole = _checked(split_compound(written, known))
        parts = whole if len(whole) > 1 and whole[-1] in _UI_NOUNS else parts
    return parts if len(parts) > 1 else [stem]


def _checked(parts: list[str]) -> list[str]:
    return parts if not any(function_word(p) or p in _VERB_PARTS for p in parts) else parts[:0]


def split_compound(stem: str, known: Mapping[str, object]) -> list[str]:
    """The words `stem` is made of, when it is an unknown word of `MIN_SYLLABLES` or more syllables that splits
    into known ones (the left part as short as can be, the rest split again); `[stem]` otherwise."""
    if len(stem) < MIN_SYLLABLES or stem in known:
        return [stem]
    return _split(stem, known) or [stem]


def _split(s: str, known: Mapping[str, object]) -> list[str] | None:
    if s in known and len(s) >= MIN_PART:
        return [s]
    for i in range(MIN_PART, len(s) - MIN_PART + 1):
        head, rest = s[:i], s[i:]
        if head in known and (tail := _split(rest, known)) is not None:
            return [head, *tail]
    return None

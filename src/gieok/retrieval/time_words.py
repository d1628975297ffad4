"""Whether a query asks *when*, and whether a memory's text says when something happened (English and Korean).

"When did Caroline go to the support group?" is answered by the message that says "I went to a support group
yesterday", not by the three others about the group: among rows about the same thing, the one stating a time is
the answer. On the LoCoMo dev conversations 80 of the 93 evidence turns of "when" questions state a time (a
relative day, a weekday, a month, a year, "ago"), against 19% of all turns. Only words are looked at: a date
the query names is `query_dates`' business, and a row's own timestamp is shown with every result anyway.

Parts of the day, seasons and hours ("all morning", "this summer", "for three hours"; 어젯밤, 여름, 오후) and
Korean counted periods before 전 or 동안 (며칠 전, 이틀 동안) were added for conversations unlike the dev ones,
where temporal recall is lowest: on dev they move no question (the words find 80 of the 93 evidence turns instead
of 79, and 18.0% of all turns instead of 15.6%). "just", "now", "finally" (막, 지금, 드디어), which also date a
message by its own timestamp, were measured and left out: 23% of turns, and one Korean question over English
memory lost its evidence from the top 10.
"""

from __future__ import annotations

import re

_MONTHS = ("january|february|march|april|june|july|august|september|october|november|december|"
           "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec")
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")

_ASKS_WHEN = re.compile(
    r"^\s*when\b|\bwhen\s+(?:did|does|do|is|was|were|will|are|has|have|had|would|could)\b|\bhow\s+long\b"
    r"|\b(?:what|which)\s+(?:year|month|day|date|time|week|weekend)\b|\bwhat\s+time\b"
    # Korean: 언제, 몇 년/월/일/시, 며칠, 얼마나 오래, 무슨 요일, 어느 해 (spacing is loose in casual Korean).
    r"|언제|몇\s?(?:년|월|일|시|주)|며칠|얼마나\s?오래|무슨\s?요일|어느\s?(?:해|달|날)",
    re.IGNORECASE,
)

# What a text says when with: looked for as whole words (English; a word of the text in a set) and as parts of
# words (Korean, whose particles and endings join the word: 어제는, 지난주에). A search reads this for each of its
# ~200 candidates when the query asks when; one regular expression of every alternative cost ~34 µs a LoCoMo
# message (it tries each word at each position), the set and substring tests ~12, with the same answers.
_TIME_WORDS = frozenset([
    *"yesterday today tonight tomorrow last next ago week weeks weekend weekends month months year years decade "
     "decades since recently earlier later lately morning afternoon evening night summer winter spring autumn "
     "hour hours".split(),
    *_WEEKDAYS, *(d + "s" for d in _WEEKDAYS), *_MONTHS.split("|")])
_WORD = re.compile(r"\w+")
_YEAR = re.compile(r"(?:19|20)\d\d")
# "May" only beside a number ("7 May", "May 2023"): as a word it is mostly the verb.
_MAY = re.compile(r"\b\d{1,2}\s+may\b|\bmay\s+\d", re.IGNORECASE)
# Korean: relative days and periods, weekdays, counted periods and dates (3년, 5월, 2주, 10일), "… ago".
# (재작년 is found by 작년.)
_KO_LITERALS = ("어제", "오늘", "내일", "그제", "그저께", "모레", "글피", "지난", "작년", "올해", "금년", "내년",
                "주말", "전에", "최근", "요즘", "방금", "아까", "예전", "옛날", "아침", "저녁", "새벽", "오전", "오후",
                "어젯밤", "여름", "겨울", "가을")
_KO_PATTERN = re.compile(r"(?:이번|다음)\s?(?:주|달|해)|[월화수목금토일]요일|\d\s?(?:년|월|일|주|달|개월)|얼마\s?전"
                         r"|(?:며칠|이틀|사흘|나흘|일주일|한\s?달|몇\s?(?:년|달|주|시간))\s?(?:전|동안)")
_KO_PATTERN_HINTS = ("이번", "다음", "요일", "년", "월", "일", "주", "달", "얼마", "며칠", "이틀", "사흘", "나흘",
                     "시간")


def asks_when(query: str) -> bool:
    """The query asks for a time ("when did …", "how long …", "언제 …", "몇 년 …")."""
    return bool(_ASKS_WHEN.search(query))


def states_time(text: str) -> bool:
    """The text says when something happened or for how long ("yesterday", "last week", "in 2022", "지난주")."""
    if any(k in text for k in _KO_LITERALS) or (any(h in text for h in _KO_PATTERN_HINTS)
                                                  and _KO_PATTERN.search(text)):
        return True
    words = {w.lower() for w in _WORD.findall(text)}
    return (not words.isdisjoint(_TIME_WORDS) or any(_YEAR.fullmatch(w) for w in words)
            or ("may" in words and _MAY.search(text) is not None))

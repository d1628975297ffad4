"""Whether a query asks for the first or the last time something happened, and which rows that favours.

"When did we last deploy the search API?" is answered by the newest of the rows about deploying it, and "When did
we first use Postgres?" by the oldest; "What did I do with Rust lately?", "결제 서비스 마지막으로 배포한 게
언제야?" and "처음 …" alike. Ranking by meaning and words alone cannot tell those rows apart: they share the
words, and the row that says "First deploy of the search API" matches "first" and "last" questions the same way
(it came first for both). So among the rows about the question's subject (those whose relevance is close to the
best one's), the newest, or the oldest, gets a bonus (`order_positions`; gieok.retrieval.ranking weighs it).

A question about how things stand now asks for the last too: "which database are we on currently?", "who is the
team lead now?", "what CI do we use these days?", "지금 쓰는 노트북 뭐야?", "현재 회사 노트북 모델은?". Memory keeps
what was true then beside what is true now ("We use MySQL 5.7", months later "Migrated the main database from MySQL
to Postgres"), and the older row, worded like the question, came first for the first four (the fifth found the
newer one without saying why).

Only words are read. "last" followed by a time ("last week", "last Tuesday") names a date, which
gieok.retrieval.query_dates handles, "first place" or "first aid" order nothing, and "until now", "by now" or
"지금까지" ask about everything up to now, not the newest.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Literal

__all__ = ["Order", "asks_order", "order_positions"]

Order = Literal["first", "last"]

_TIME_AFTER = (r"(?:week|weekend|month|year|night|morning|evening|summer|winter|spring|fall|autumn|quarter|sprint"
               r"|few|couple|two|three|several|\w+day)s?")
_LAST = re.compile(
    r"\b(?:latest|newest|lately|recent(?:ly)?|most\s+recent(?:ly)?)\b"
    # How things stand now; not "until now", "by now" or "up to now" (everything so far).
    r"|(?<!\buntil\s)(?<!\btill\s)(?<!\bby\s)(?<!\bto\s)\bnow\b"
    r"|\b(?:currently|nowadays|these\s+days|at\s+the\s+moment|at\s+present|still|anymore|any\s+more)\b"
    # "last" before a word that is not a time ("when did we last deploy", "the last thing"), and not "at last".
    r"|(?<!\bat\s)\blast\s+(?!" + _TIME_AFTER + r"\b)[a-z]",
    re.IGNORECASE)
_FIRST = re.compile(r"\b(?:first|earliest|initially|originally)\b(?!\s+(?:place|prize|aid)\b)", re.IGNORECASE)
# Korean: 마지막 ("last"), 최근 / 요즘 / 요새 ("recently", "these days"), 최신 ("latest"), 지난번 ("the last time"),
# 지금 / 현재 ("now", "currently"; not 지금까지 / 현재까지, "so far"), 아직 ("still"); 처음 / 최초 ("first"),
# 맨 먼저 ("first of all").
_KO_LAST = re.compile(r"마지막|최근|요즘|요새|최신|지난번|(?:지금|현재)(?!\s?까지)|아직")
_KO_FIRST = re.compile(r"처음|최초|맨\s?먼저")


def asks_order(query: str) -> Order | None:
    """"first" when the query asks for the first or earliest time, "last" for the last, latest or most recent;
    None for neither, or for both ("the first and the last deploy")."""
    first = bool(_FIRST.search(query) or _KO_FIRST.search(query))
    last = bool(_LAST.search(query) or _KO_LAST.search(query))
    if first == last:
        return None
    return "first" if first else "last"


def order_positions(times: Sequence[datetime | None], relevances: Sequence[float], order: Order,
                    group_share: float) -> list[float]:
    """Each row's order bonus before its weight: among the rows whose relevance is at least `group_share` of the
    best (the rows about the subject), those written last (or first) get their relevance's share of the best,
    the rest 0. Rows written at the same time share a place (a session's messages, each written at its own time,
    do not: sharing the session's place lost dev recall, docs/measurements.md); with only one time among
    them there is nothing to order."""
    out = [0.0] * len(times)
    best = max(relevances, default=0.0)
    if best <= 0:
        return out
    group = [(i, t) for i, (t, r) in enumerate(zip(times, relevances, strict=True))
             if t is not None and r >= group_share * best]
    moments = {t for _i, t in group}
    if len(moments) < 2:
        return out
    wanted = max(moments) if order == "last" else min(moments)
    for i, t in group:
        if t == wanted:
            out[i] = relevances[i] / best
    return out

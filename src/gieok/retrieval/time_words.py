"""Whether a query asks *when*, and whether a memory's text says when something happened (English and Korean).

"When did Caroline go to the support group?" is answered by the message that says "I went to a support group
yesterday", not by the three others about the group: among rows about the same thing, the one stating a time is
the answer. On the LoCoMo dev conversations 80 of the 93 evidence turns of "when" questions state a time (a
relative day, a weekday, a month, a year, "ago"), against 19% of all turns. Only words are looked at: a date
the query names is `query_dates`' business, and a row's own timestamp is shown with every result anyway.
"""

from __future__ import annotations

import re

_MONTHS = ("january|february|march|april|june|july|august|september|october|november|december|"
           "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec")
_WEEKDAYS = "(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?"

_ASKS_WHEN = re.compile(
    r"^\s*when\b|\bwhen\s+(?:did|does|do|is|was|were|will|are|has|have|had|would|could)\b|\bhow\s+long\b"
    r"|\b(?:what|which)\s+(?:year|month|day|date|time|week|weekend)\b|\bwhat\s+time\b"
    # Korean: 언제, 몇 년/월/일/시, 며칠, 얼마나 오래, 무슨 요일, 어느 해 (spacing is loose in casual Korean).
    r"|언제|몇\s?(?:년|월|일|시|주)|며칠|얼마나\s?오래|무슨\s?요일|어느\s?(?:해|달|날)",
    re.IGNORECASE,
)

_STATES_TIME = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow|last|next|ago|weeks?|weekends?|months?|years?|decades?|since"
    rf"|recently|earlier|later|{_WEEKDAYS}|{_MONTHS}|(?:19|20)\d\d)\b"
    # "May" only beside a number ("7 May", "May 2023"): as a word it is mostly the verb.
    r"|\b\d{1,2}\s+may\b|\bmay\s+\d"
    # Korean: relative days and periods, weekdays, counted periods and dates (3년, 5월, 2주, 10일), "… ago".
    r"|어제|오늘|내일|그제|그저께|모레|글피|지난|작년|올해|금년|내년|재작년|이번\s?(?:주|달|해)|다음\s?(?:주|달|해)|주말"
    r"|[월화수목금토일]요일|\d+\s?(?:년|월|일|주|달|개월)|전에|최근|요즘|방금|아까|얼마\s?전|예전|옛날",
    re.IGNORECASE,
)


def asks_when(query: str) -> bool:
    """The query asks for a time ("when did …", "how long …", "언제 …", "몇 년 …")."""
    return bool(_ASKS_WHEN.search(query))


def states_time(text: str) -> bool:
    """The text says when something happened or for how long ("yesterday", "last week", "in 2022", "지난주")."""
    return bool(_STATES_TIME.search(text))

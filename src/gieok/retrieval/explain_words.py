"""Whether a query asks why or how: for a cause, a fix or a way ("why did the refund API return 500?", "환불 500
에러 원인이 뭐였지?", "도커 이미지 크기 어떻게 줄였어?", "Korean filename CSV import bug fix").

Such a question is answered by an explanation, and in an agent's session the explanation is the assistant's
message beside the user's report of the problem (gieok.retrieval.exchange). A question for a fact ("what's the
staging URL?", "배포 승인 누가 해?") is not: the user's own message often holds that fact, and the assistant's reply
beside it goes on to other work. "How" asks for a way only before a verb or a subject ("how did we…", "how to…"),
not for an amount ("how long", "how many", "how big").

Only words are read.
"""

from __future__ import annotations

import re

__all__ = ["asks_why_or_how"]

_EN = re.compile(
    r"\bwhy\b"
    r"|\bhow\s+(?:did|do|does|can|could|should|would|to|was|were|is|are|has|have|we|i|you|they)\b"
    r"|\b(?:root\s+)?caus(?:e|es|ed)\b|\breasons?\b|\bwhat\s+went\s+wrong\b"
    r"|\b(?:fix|fixes|fixed|solved?|solves|resolved?|resolves|workaround)\b",
    re.IGNORECASE)
# 왜 ("why", at a word's start: not 왜곡 "distortion"), 어떻게 ("how"), 원인 ("cause"), 이유 ("reason"), 해결
# ("solve"), 고치 / 고쳤 / 고친 ("fix"), 개선 ("improve"), 방법 ("way"). Not 수정 ("edit"): a common given name.
_KO = re.compile(r"(?<![가-힣])왜(?!곡)|어떻게|원인|이유|해결|고치|고쳤|고친|개선|방법")


def asks_why_or_how(query: str) -> bool:
    return bool(_EN.search(query) or _KO.search(query))

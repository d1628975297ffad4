"""English glosses of a Korean row's words in its full-text document, written by the librarian.

An agent often searches in English about what its Korean user said ("When did Jon lose his job?" over
"존: 어제 은행원 일자리를 잃어서…"). The row shares no word with the query, so only the vectors carry it, and a
weak best cosine sends the search to a keyword fallback. The Basic Korean Dictionary (gieok.retrieval.ko_lexicon,
the bridge's) gives each headword a few English glosses, so this direction needs no choosing by the memory as
English → Korean does (gieok.retrieval.en_ko): each Korean word of the row, looked up as written and under its
lemmas (잃어서 → 잃다), adds the words of its usual gloss to the row's indexed text (일자리 → job, 은행원 → bank
teller, 결제 → payment). The usual gloss is the one the embedding model puts nearest the word
(gieok.retrieval.ko_sense_order), not the dictionary's first: it lists glosses alphabetically, so its first
made 결제 "liquidation" and 키 "clue". The row's own text is unchanged; only what the full-text index holds
grows, and an English query meets the row by those words as by its own.

Measured on dev (ko 30 memory asked its English questions; recall@5 / @10, on top of gieok.retrieval.en_ko):
0.515 / 0.664 → 0.520 / 0.683; 40 → 22 of 105 questions fell back to keywords. Two glosses per word 0.534 /
0.693 but more unrelated questions through the no-match verdict (questions about other conversations over this
memory: 7% passed before, 15% with one gloss, 18% with two; English questions over English memory: 13%); every
gloss 0.539 / 0.683. Korean questions over the same memory: recall@10 unchanged (0.817), recall@5 0.734 →
0.720 (longer documents). The usual gloss instead of the first (on top of all that, this round's retrieval):
0.615 / 0.703 / 0.743 → 0.615 / 0.712 / 0.765 at @5 / @10 / @20; Korean questions identical.

Cold path only: the dictionary is read once per process (~0.4 s, off the event loop), each row costs a few
dictionary lookups, and the hot path's indexed text (gieok.memory.ingest) stays as it was.
"""

from __future__ import annotations

from collections.abc import Sequence

import anyio

from gieok.core.models import Memory
from gieok.core.text import index_text, row_index_text
from gieok.retrieval import ko_lexicon
from gieok.retrieval.ko_glosses import gloss_words
from gieok.retrieval.scripts import HANGUL, text_script
from gieok.store.base import MemoryRows

__all__ = ["catch_up_glosses", "gloss_words", "index_glosses", "indexed_texts"]


def _glosses(m: Memory) -> str:
    """The indexed words of a Korean row's glosses ("" for another row, or one whose words have none). Call
    after `await ko_lexicon.ready()`."""
    words = gloss_words(m.content) if text_script(m.content) == HANGUL else []
    return index_text(" ".join(words)) if words else ""


async def indexed_texts(rows: Sequence[Memory]) -> list[str]:
    """Each row's full-text document as the librarian leaves it: its own words as ingest prepares them and, for
    a Korean row, its words' English glosses. A copy into another store writes these, not the rows' own words
    alone (which dropped the glosses: English questions over copied Korean rows found nothing). The dictionary
    is read only when a Korean row is among them."""
    if any(text_script(m.content) == HANGUL for m in rows):
        await ko_lexicon.ready()
    out = []
    for m in rows:
        own = row_index_text(m.title, m.content)
        out.append(f"{own} {g}" if (g := _glosses(m)) else own)
    return out


async def index_glosses(store: MemoryRows, rows: Sequence[Memory]) -> int:
    """Add the glosses of the Korean rows among `rows` to their indexed text; returns how many changed. A row
    edited since it was read keeps its new text (the store checks the content hash)."""
    korean = [m for m in rows if text_script(m.content) == HANGUL]
    if not korean:
        return 0
    await ko_lexicon.ready()
    texts = [(m.id, m.content_hash, f"{row_index_text(m.title, m.content)} {g}")   # own words as ingest prepares them
             for m in korean if (g := _glosses(m))]
    return await store.set_search_text(texts)


async def catch_up_glosses(store: MemoryRows, *, page: int = 500) -> int:
    """Every stored Korean row's glosses, for rows the librarian processed before it wrote them (a store
    upgraded from before, or an edit that reindexed a row's words alone); returns how many rows changed. The
    store writes only texts that differ, so a run after the first changes nothing."""
    changed = 0
    batch: list[Memory] = []
    async for m in store.iter_memories(None, batch=page):
        batch.append(m)
        if len(batch) >= page:
            changed += await index_glosses(store, batch)
            batch.clear()
            await anyio.sleep(0)      # requests are served between pages
    return changed + (await index_glosses(store, batch) if batch else 0)

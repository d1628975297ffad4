"""Neighbour context in the full-text index, as SQL both backends run.

A chat reply is often findable only by the words of the message it answers: "They were awestruck and
humbled." is the answer to "how did your kids react at the memorial?". So each chat row's full-text
document holds, beside its own prepared text (`search_text`), the prepared text of the chat messages just
before and after it in its session (`context_text`). Measured on the LoCoMo dev split: recall@10 0.741 →
0.798 (the previous message alone: 0.786), 0.822 with the neighbours' words at half weight (with query
dates on).

The message two before counts as well. In a conversation it is usually the same speaker's own previous message:
"I had a picnic with friends from church" → "What did you play?" → "Some fun ones like charades": the answer
continues its author's thread through the other's question. LoCoMo dev recall@5 / @10: English 0.766 / 0.835
→ 0.787 / 0.852; Korean questions over English memory 0.608 / 0.722 → 0.635 / 0.731; Korean memory (ko 30)
0.720 / 0.812 → 0.701 / 0.812; the three English conversations in one memory 0.747 / 0.827 → 0.771 / 0.836.
Two on both sides lost Korean memory (ko 30 0.686 / 0.779: the next messages' bigrams are noise there), and
English did no better (0.789 / 0.852); three before, 0.783 / 0.850 and ko 30 0.783 at @10.

The context is derived data: the librarian writes it (`Store.refresh_context`) once a row is processed, and
a row's neighbours are recomputed when it is edited, forgotten or erased, so words of a forgotten message
never stay findable through the rows around it. Only the neighbours' own text is used, never their context,
so nothing spreads further than those three messages. Order is (created_at, id), as everywhere else in a
session.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

# Characters of each neighbour's prepared text: a long message must not swamp a short reply's document
# (BM25 normalises by length). The end of the previous message (where its question usually is) and the
# start of the next one are kept.
CONTEXT_CHARS = 1000

# A neighbour's words count half as much as the row's own in BM25 (SQLite: FTS5 column weights; PostgreSQL:
# the context's lexemes carry tsvector label D, weighted by ts_rank_cd). LoCoMo dev recall@10: 0.812 at
# weight 1, 0.822 at 0.5, 0.819 at 0.25, 0.799 at 1.5.
CONTEXT_WEIGHT = 0.5

# Which rows have neighbour context: chat messages of a session, not forgotten.
CHAT_ROW = "{a}.source = 'chat' AND {a}.session_id <> '' AND {a}.deleted_at IS NULL"


def _neighbour(a: str, earlier: bool, col: str, skip: int = 0) -> str:
    """The `col` of the chat message before (or after) row `m` in its session; `skip` 1: the one before that."""
    op, order = ("<", "DESC") if earlier else (">", "ASC")
    return (f"(SELECT {col} FROM memory {a} WHERE {a}.user_id = m.user_id AND {a}.session_id = m.session_id "
            f"AND {CHAT_ROW.format(a=a)} AND ({a}.created_at, {a}.id) {op} (m.created_at, m.id) "
            f"ORDER BY {a}.created_at {order}, {a}.id {order} LIMIT 1{f' OFFSET {skip}' if skip else ''})")


def neighbours_sql(ph: str, n: int) -> str:
    """Ids of the rows whose context holds each of `n` rows' words (placeholders `ph`): the chat message
    before it (whose next message it is) and the two after it (whose previous, or previous but one, it is)."""
    return (f"SELECT {_neighbour('p', True, 'p.id')}, {_neighbour('x', False, 'x.id')}, "
            f"{_neighbour('y', False, 'y.id', skip=1)} FROM memory m "
            f"WHERE m.id IN ({', '.join([ph] * n)}) AND m.source = 'chat' AND m.session_id <> ''")


def embedded_after_sql(ph: str, n: int) -> str:
    """(id, id of the message before it) of each of `n` chat rows in a session: the message a row's vector is
    computed with (gieok.retrieval.doc_text). Any earlier row of the session that is not forgotten (archived
    ones too), by id, latest (created_at, id) first: what the librarian has always read."""
    return (f"SELECT m.id, (SELECT p.id FROM memory p WHERE p.user_id = m.user_id AND p.session_id = m.session_id "
            f"AND p.deleted_at IS NULL AND p.id < m.id ORDER BY p.created_at DESC, p.id DESC LIMIT 1) "
            f"FROM memory m WHERE m.id IN ({', '.join([ph] * n)}) AND m.source = 'chat' AND m.session_id <> ''")


def neighbour_vectors_sql(ph: str, n: int, where_m: str, where_n: str) -> str:
    """(row id, neighbour id, neighbour embedding) of the previous and next chat message of each of `n` chat
    rows (placeholders `ph`) that passes `where_m`, for each neighbour that has a vector of the model (the
    placeholder after `where_m`'s) and passes `where_n` (the same `where_clause` on alias `n`). Parameters:
    the ids, `where_m`'s, the model, `where_n`'s. Search scores a row by its neighbours' cosines too
    (gieok.retrieval.ranking): a neighbour the caller may not see, or that the filters leave out, must not
    count, nor may a row the caller may not see lend its neighbours."""
    return (f"SELECT nb.mid, n.id, n.embedding FROM (SELECT m.id AS mid, {_neighbour('p', True, 'p.id')} AS pid, "
            f"{_neighbour('x', False, 'x.id')} AS xid FROM memory m WHERE m.id IN ({', '.join([ph] * n)}) "
            f"AND {CHAT_ROW.format(a='m')} AND {where_m}) nb JOIN memory n ON n.id IN (nb.pid, nb.xid) "
            f"WHERE n.embedding_model = {ph} AND n.embedding IS NOT NULL AND {where_n}")


def context_expr(before2: str, before: str, after: str) -> str:
    """A row's context from the SQL texts of the message two before it, the one before and the one after (any
    may be NULL), as both the librarian's refresh and the migrations that build it write it."""
    return f"trim(coalesce({before2}, '') || ' ' || coalesce({before}, '') || ' ' || coalesce({after}, ''))"


def rebuild_contexts_sql(tail: Callable[[str], str], head: Callable[[str], str]) -> str:
    """One statement rewriting every chat row's context that differs from what `contexts_sql` would give
    (window functions over each session), for the migrations that change what a context holds."""
    t, h = tail("search_text"), head("search_text")
    ctx = context_expr(f"lag({t}, 2) OVER s", f"lag({t}) OVER s", f"lead({h}) OVER s")
    return (f"WITH w AS (SELECT id, {ctx} AS ctx FROM memory WHERE {CHAT_ROW.format(a='memory')} "
            "WINDOW s AS (PARTITION BY user_id, session_id ORDER BY created_at, id)) "
            "UPDATE memory AS m SET context_text = w.ctx FROM w WHERE m.id = w.id AND m.context_text <> w.ctx")


def contexts_sql(ph: str, n: int, tail: Callable[[str], str], head: Callable[[str], str]) -> str:
    """(id, current context, fresh context) of each of `n` rows; `tail`/`head` cut a text to CONTEXT_CHARS
    from its end/start in the backend's dialect."""
    before2 = _neighbour("q", True, tail("q.search_text"), skip=1)
    before = _neighbour("p", True, tail("p.search_text"))
    after = _neighbour("x", False, head("x.search_text"))
    fresh = context_expr(before2, before, after)
    return (f"SELECT m.id, m.context_text, CASE WHEN {CHAT_ROW.format(a='m')} THEN {fresh} ELSE '' END "
            f"FROM memory m WHERE m.id IN ({', '.join([ph] * n)})")


# Ids per statement: well under SQLite's 999 parameters.
ID_CHUNK = 500


def chunks(ids: list[str]) -> Iterator[list[str]]:
    for start in range(0, len(ids), ID_CHUNK):
        yield ids[start:start + ID_CHUNK]


def changed_contexts(rows: Iterable[tuple[str, str, str]]) -> list[tuple[str, str]]:
    """(fresh context, id) of the `contexts_sql` rows whose context changed, in id order: concurrent
    refreshes then lock shared rows in the same order and wait for each other instead of deadlocking."""
    return sorted(((new, mid) for mid, old, new in rows if new != old), key=lambda t: t[1])


def rewrites_neighbours(changes: Mapping[str, Any], search_text: str | None) -> bool:
    """Does an update change what this row's neighbours index (its words, or whether it is forgotten)?"""
    return search_text is not None or "deleted_at" in changes

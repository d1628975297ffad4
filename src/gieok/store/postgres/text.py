"""Full text on PostgreSQL: Okapi BM25 over the generated tsvector, its corpus statistics, and the neighbour
context (gieok.store.context_sql) of each chat row.

The score is the formula SQLite's FTS5 uses, so hybrid ranking weighs keyword hits alike on both backends.
Each query term is a phrase of adjacent tokens; `phraseto_tsquery` parses it with the same parser that
indexed the prepared text, so both sides split alike, and terms are OR-ed. `ts_rank_cd` with no
normalisation counts a phrase's occurrences (tf), those in the neighbour context (tsvector label D) at
CONTEXT_WEIGHT as FTS5's column weight does; the document length is the prepared texts' in tokens; idf comes from the
planner's statistics (`read_fts_stats`).
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any

from psycopg import AsyncConnection

from gieok.core.text import term_prefix
from gieok.store.context_sql import (
    CONTEXT_CHARS,
    CONTEXT_WEIGHT,
    changed_contexts,
    chunks,
    contexts_sql,
    neighbours_sql,
)

BM25_K1, BM25_B = 1.2, 0.75     # FTS5's defaults
# A row's full-text length as FTS5 counts it: the tokens of its prepared text and neighbour context (space-separated
# already; a context with a missing neighbour holds two spaces in a row).
DOC_TOKENS = ("coalesce(array_length(regexp_split_to_array(nullif(btrim(search_text || ' ' || context_text), ''), "
              "'\\s+'), 1), 0)")
FTS_STATS_TTL_S = 300.0
FTS_NO_STATS_TTL_S = 10.0   # an empty table's numbers: read again soon, once rows arrive


@dataclasses.dataclass(frozen=True, slots=True)
class FtsStats:
    at: float
    rows: float
    avg_len: float
    freq: dict[str, float]
    floor: float            # a lexeme missing from the most-common list is rarer than this

    @classmethod
    def build(cls, at: float, rows: float, avg_len: float, elems: list[str], freqs: list[float]) -> FtsStats:
        # most_common_elem_freqs ends with three extra numbers (min, max, null fraction).
        per = dict(zip(elems, freqs[:len(elems)], strict=False))
        floor = (freqs[len(elems)] if len(freqs) > len(elems) else 0.0) / 2
        return cls(at, max(rows, 0.0), max(avg_len, 0.0), per, floor)

    def expired(self, now: float) -> bool:
        return now - self.at > (FTS_STATS_TTL_S if self.rows >= 1 else FTS_NO_STATS_TTL_S)

    def df(self, tokens: list[str]) -> float:
        """Estimated rows a phrase matches: those of its rarest token; a prefix term's, those of the common
        lexemes it begins, or the floor (0 without statistics yet)."""
        if self.rows < 1:
            return 0.0
        if (p := term_prefix(tokens)) is not None:
            share = sum(f for e, f in self.freq.items() if e.startswith(p)) or self.floor
            return max(1.0, min(1.0, share) * self.rows)
        return max(1.0, min(self.freq.get(t, self.floor) for t in tokens) * self.rows)

    def idf(self, tokens: list[str]) -> float:
        """BM25 idf of a phrase, as FTS5 computes it: log((N − n + 0.5)/(n + 0.5)), floored at 1e-6, so a word in
        half the rows or more counts for (almost) nothing. Lucene's non-negative form, log(1 + …), gave such
        words ~0.7 here while SQLite gave them ~0, and a name in every row then outweighed the rest of a query
        on PostgreSQL only (measured on the LoCoMo dev stores: Korean recall@10 0.826 against SQLite's 0.836).
        Without statistics yet (a new table) every term weighs the same."""
        if self.rows < 1:
            return 1.0
        df = self.df(tokens)
        return max(1e-6, math.log((self.rows - df + 0.5) / (df + 0.5)))


def tsquery_params(terms: list[list[str]]) -> list[str]:
    """Each term as the text its tsquery function (`bm25_sql`) parses: a phrase's tokens, or a prefix term's
    stem as a prefix lexeme ('쓰':*)."""
    return [f"'{p}':*" if (p := term_prefix(t)) else " ".join(t) for t in terms]


def bm25_sql(terms: list[list[str]], where: str, select: str, *, newest: bool = False) -> str:
    """The keyword query for `terms` under filter `where`, returning `select` columns and the score.
    Parameters, in order: the terms (`tsquery_params`), the filter's, [with `newest`: how many of the newest
    matches to score,] the terms again, the mean document length, one idf per term, the limit."""
    fns = ["to_tsquery" if term_prefix(t) else "phraseto_tsquery" for t in terms]
    tsq = " || ".join(f"{fn}('simple', %s)" for fn in fns)
    # Per term: tf_i = occurrences of its phrase; BM25 = Σ idf_i·tf_i·(k1+1) / (tf_i + k1·norm). Written out
    # as plain expressions (a per-row subquery over the terms cost ~15 µs a row).
    tfs = ", ".join(f"ts_rank_cd('{{{CONTEXT_WEIGHT},1,1,1}}', c.tsv, {fn}('simple', %s), 0) AS tf{i}"
                    for i, fn in enumerate(fns))
    score = " + ".join(f"%s::float8 * t.tf{i} * {BM25_K1 + 1} / (t.tf{i} + {BM25_K1} * t.norm)"
                       for i in range(len(terms)))
    def doc(a: str) -> str:
        return f"{a}.id, {a}.seq, {a}.search_tsv AS tsv, {a}.doc_tokens AS dl"
    if newest:
        # The newest matches are chosen by their row addresses alone, and only those rows' documents read: sorting
        # every match with its document cost a common word's search at 100,000 memories a third of its time.
        matches = (f"SELECT {doc('r')} FROM memory r WHERE r.ctid = ANY(ARRAY(SELECT m.ctid FROM memory m "
                   f"WHERE m.search_tsv @@ ({tsq}) AND {where} ORDER BY m.created_at DESC LIMIT %s))")
    else:
        matches = f"SELECT {doc('m')} FROM memory m WHERE m.search_tsv @@ ({tsq}) AND {where}"
    # Ties in score (the same word counts in documents of the same length) go to the row stored first (`seq`), as
    # FTS5 orders them on SQLite, so the rows returned do not depend on the plan. Not the text id: ties are common
    # among a common word's matches, and comparing ids cost a fifth of such a search at 100,000 memories (22.9 →
    # 18.9 ms). `t` MATERIALIZED: inlined, each term's ts_rank_cd ran twice a row (the score names its tf twice).
    return (f"WITH c AS MATERIALIZED ({matches}), "
            f"t AS MATERIALIZED (SELECT c.id, c.seq, {tfs}, "
            f"1 - {BM25_B} + {BM25_B} * COALESCE(c.dl / NULLIF(%s::float8, 0), 1) AS norm FROM c), "
            f"s AS (SELECT t.id, {score} AS score FROM t ORDER BY score DESC, t.seq LIMIT %s) "
            f"SELECT {select}, s.score FROM s JOIN memory m ON m.id = s.id ORDER BY s.score DESC, m.seq")


async def read_fts_stats(con: AsyncConnection[Any]) -> FtsStats:
    """Row count, mean prepared-text length and lexeme frequencies, from the statistics ANALYZE keeps
    (autovacuum refreshes them): a catalogue lookup, where counting matches would cost a scan per query.
    A table whose rows the planner does not know of yet is analysed here: autovacuum first analyses a table
    after 50 changed rows and up to a minute later, so a new store, and every store of fewer than 50 rows,
    weighed all words alike (SQLite's FTS5 counts exactly from the first row). ANALYZE samples at most
    30,000 rows and blocks no reads or writes; afterwards the planner knows the rows, so it runs once."""
    stats = await _read_fts_stats(con)
    if stats.rows < 1 and stats.avg_len > 0:
        await con.execute("ANALYZE memory")
        stats = await _read_fts_stats(con)
    return stats


async def _read_fts_stats(con: AsyncConnection[Any]) -> FtsStats:
    now = time.monotonic()
    row = await (await con.execute(
        "SELECT c.reltuples, "
        "(SELECT most_common_elems::text::text[] FROM pg_stats s WHERE s.schemaname = n.nspname "
        " AND s.tablename = 'memory' AND s.attname = 'search_tsv'), "
        "(SELECT most_common_elem_freqs FROM pg_stats s WHERE s.schemaname = n.nspname "
        " AND s.tablename = 'memory' AND s.attname = 'search_tsv') "
        "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE c.oid = 'memory'::regclass")).fetchone()
    n_rows, elems, freqs = row if row else (0, None, None)
    # Mean document length (in tokens, `DOC_TOKENS`, stored with each row) from a sample of ~5,000 rows.
    pct = 100.0 if (n_rows or 0) <= 5_000 else max(0.05, 100.0 * 5_000 / float(n_rows))
    sample = await (await con.execute(
        "SELECT avg(doc_tokens) "
        f"FROM memory TABLESAMPLE SYSTEM ({pct:.4f})")).fetchone()
    avg_len = sample[0] if sample and sample[0] is not None else 0
    return FtsStats.build(now, float(n_rows or 0), float(avg_len or 0), elems or [], freqs or [])


async def neighbour_ids(con: AsyncConnection[Any], ids: list[str]) -> set[str]:
    out: set[str] = set()
    for chunk in chunks(ids):
        for row in await (await con.execute(neighbours_sql("%s", len(chunk)), chunk)).fetchall():
            out.update(x for x in row if x)
    return out


async def refresh_context(con: AsyncConnection[Any], ids: list[str], *, expand: bool = True) -> int:
    """Rewrite `context_text` of `ids` (and, with `expand`, of their neighbours) where it changed."""
    targets = sorted(set(ids) | (await neighbour_ids(con, ids) if expand else set()))
    rows: list[tuple[str, str, str]] = []
    for chunk in chunks(targets):
        q = contexts_sql("%s", len(chunk), lambda c: f"right({c}, {CONTEXT_CHARS})",
                         lambda c: f"left({c}, {CONTEXT_CHARS})")
        rows.extend(await (await con.execute(q, chunk)).fetchall())
    changed = changed_contexts(rows)
    if changed:
        async with con.cursor() as cur:
            await cur.executemany("UPDATE memory SET context_text = %s WHERE id = %s", changed)
    return len(changed)

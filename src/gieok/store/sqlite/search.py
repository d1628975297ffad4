"""SQLite: full-text (FTS5, BM25), substring and vector search.

Vectors are scanned exactly with numpy over a per-process, per-(user, model) matrix that is refreshed
incrementally through `embed_gen` (the stdlib `sqlite3` cannot load sqlite-vec; MEASURED.md: ~4 ms for
100k × 384). Scans that can take milliseconds run in a worker thread.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import anyio
import numpy as np

from gieok.core.dates import iso
from gieok.core.models import Memory, SearchFilters
from gieok.core.text import PREFIX, term_prefix
from gieok.store.base import NeighbourVectors, Vector, VectorSink
from gieok.store.context_sql import chunks, neighbour_vectors_sql
from gieok.store.shared import MAX_SCORED_MATCHES, like_pattern, rankable_terms, rarest_terms
from gieok.store.sqlfilters import where_clause
from gieok.store.sqlite.codec import SELECT, row_to_memory, tags_sql
from gieok.store.sqlite.connection import SQLiteBase
from gieok.store.sqlite.vec_cache import TIME, VecCache


def _as_time(dt: datetime) -> np.datetime64:
    """`dt` as the cache's creation times hold it (UTC, naive)."""
    return np.datetime64(dt.astimezone(UTC).replace(tzinfo=None), "us")


def _trigrams(needle: str) -> set[str]:
    return {needle[i:i + 3] for i in range(len(needle) - 2)}


def fts5_query(terms: list[list[str]]) -> str:
    """An FTS5 MATCH expression: any term may match (BM25 ranks rows matching more terms higher). Each term
    (a word, or the character bigrams of a Korean word) is one quoted phrase; a prefix term is FTS5's prefix
    query ("쓰"*)."""
    return " OR ".join(f'"{p}"*' if (p := term_prefix(t)) else '"' + " ".join(t) + '"' for t in terms)


class SearchMixin(SQLiteBase):
    MAX_SCORED_MATCHES = MAX_SCORED_MATCHES     # see gieok.store.shared

    async def keyword_search(self, f: SearchFilters, terms: list[list[str]], limit: int, *,
                             rankable_only: bool = False,
                             sink: VectorSink | None = None) -> list[tuple[Memory, float]]:
        if not terms:
            return []
        where, params = where_clause(f, "?", tags_sql, iso)
        fetch_where = where.replace("m.user_id = ?", "+m.user_id = ?", 1)

        def newest_ranked(match: str) -> list[tuple[Memory, float]]:
            # Even the rarest term matches too many rows to score them all: score the newest
            # MAX_SCORED_MATCHES matches that pass the filters (FTS5 walks its matches in rowid order and
            # stops there), then rank those.
            with self._read() as db:
                scored = db.execute(
                    f"SELECT m.seq, -memory_fts.rank FROM memory_fts JOIN memory m ON m.seq = memory_fts.rowid "
                    f"WHERE memory_fts MATCH ? AND {fetch_where} ORDER BY memory_fts.rowid DESC LIMIT ?",
                    [match, *params, self.MAX_SCORED_MATCHES]).fetchall()
                top = sorted(scored, key=lambda r: (-r[1], r[0]))[:limit]   # ties: the row stored first
                score = {int(r[0]): float(r[1]) for r in top}
                rows = db.execute(
                    f"SELECT m.seq, {SELECT} FROM memory m WHERE m.seq IN ({','.join('?' * len(top))})",
                    list(score)).fetchall() if top else []
            rows.sort(key=lambda r: (-score[r[0]], r[0]))
            return [(row_to_memory(r[1:]), score[r[0]]) for r in rows]

        def run() -> list[tuple[Memory, float]]:
            kept, potential = self._bounded_terms(terms, rankable_only)  # reads the vocabulary: off the loop too
            if not kept:
                return []
            match = fts5_query(kept)
            if potential > self.MAX_SCORED_MATCHES:
                return newest_ranked(match)
            # At most MAX_SCORED_MATCHES matches: score them, join each to its row by rowid (the unary + keeps
            # the planner from walking the user's rows instead) and filter in one query. Ranking the whole
            # index first and filtering its top rows afterwards widened round after round on a shared
            # database, where most of the top rows belong to other users (8 users × 125 rows: 18 ms → 2 ms).
            # Ties go to the row stored first, in the order FTS5 gives them: ordering by rowid as well made SQLite
            # join and filter every match before sorting (keyword search at 100,000 memories p50 4.3 → 6.9 ms),
            # where FTS5's own order by rank stops at the limit.
            with self._read() as db:
                rows = db.execute(
                    f"SELECT m.seq, {SELECT}, -memory_fts.rank FROM memory_fts JOIN memory m ON "
                    f"m.seq = memory_fts.rowid WHERE memory_fts MATCH ? AND {fetch_where} "
                    f"ORDER BY memory_fts.rank LIMIT ?", [match, *params, limit]).fetchall()
            rows.sort(key=lambda r: (-r[-1], r[0]))
            return [(row_to_memory(r[1:-1]), float(r[-1])) for r in rows]
        return await self._sunk(await anyio.to_thread.run_sync(run), sink)

    def _scored_rows(self, score: dict[int, float], where: str, params: list[Any]) -> list[tuple[Memory, float]]:
        """The rows with these seqs that pass `where`, each with its score: in chunks, under SQLite's limit on
        bound variables."""
        seqs = list(score)
        found: list[tuple[Memory, float]] = []
        with self._read() as db:
            for start in range(0, len(seqs), 900):
                chunk = seqs[start:start + 900]
                rows = db.execute(
                    f"SELECT m.seq, {SELECT} FROM memory m WHERE m.seq IN ({','.join('?' * len(chunk))}) "
                    f"AND {where}", [*chunk, *params]).fetchall()
                found.extend((row_to_memory(r[1:]), score[r[0]]) for r in rows)
        return found

    def _bounded_terms(self, terms: list[list[str]], rankable_only: bool = False) -> tuple[list[list[str]], int]:
        """The terms to match, rarest first within the cap, and how many rows they may match; with
        `rankable_only`, none that matches more rows than the cap on its own."""
        prefixes = sorted({p for term in terms if (p := term_prefix(term))})
        keys = sorted({t for term in terms if not term_prefix(term) for t in term} | {p + PREFIX for p in prefixes})
        df = self._doc_freq.known(keys)
        tokens = [t for t in keys if t not in df and not t.endswith(PREFIX)]
        counted: dict[str, int] = {}
        with self._read() as db:
            if tokens:
                counted.update(db.execute(
                    f"SELECT term, doc FROM memory_fts_vocab WHERE term IN ({','.join('?' * len(tokens))})",
                    tokens).fetchall())
                counted.update((t, 0) for t in tokens if t not in counted)
            for p in prefixes:
                if p + PREFIX in df:
                    continue
                # Rows holding any token that begins with the stem: at most the sum over those tokens (a range
                # of the vocabulary's sorted terms).
                row = db.execute("SELECT sum(doc) FROM memory_fts_vocab WHERE term >= ? AND term < ?",
                                 [p, p[:-1] + chr(ord(p[-1]) + 1)]).fetchone()
                counted[p + PREFIX] = int(row[0] or 0)
        self._doc_freq.keep(counted)
        df.update(counted)
        # A phrase matches no more rows than its rarest token.
        freq: list[float] = [min(df.get(t, 0) for t in term) for term in terms]
        if rankable_only:
            terms, freq = rankable_terms(terms, freq, self.MAX_SCORED_MATCHES)
            if not terms:
                return [], 0
        kept, total = rarest_terms(terms, freq, self.MAX_SCORED_MATCHES)
        return kept, int(total)

    async def substring_search(self, f: SearchFilters, needle: str, limit: int) -> list[Memory]:
        if not needle.strip():
            return []
        where, params = where_clause(f, "?", tags_sql, iso)
        # The rows holding every trigram of the needle (migration 18), then LIKE on those alone. Each trigram is a
        # phrase of one token: the index keeps no positions to match a longer phrase with.
        trigrams = " AND ".join('"' + t.replace('"', '""') + '"' for t in sorted(_trigrams(needle)))
        narrow = "m.seq IN (SELECT rowid FROM memory_trigrams WHERE memory_trigrams MATCH ?) AND " if trigrams else ""
        sql = (f"SELECT {SELECT} FROM memory m WHERE {narrow}{where} AND m.content LIKE ? ESCAPE '\\' "
               f"ORDER BY m.created_at DESC LIMIT ?")
        args = [*([trigrams] if trigrams else []), *params, like_pattern(needle), limit]

        def run() -> list[Memory]:
            with self._read() as db:
                rows = db.execute(sql, args).fetchall()
            return [row_to_memory(r) for r in rows]
        return await anyio.to_thread.run_sync(run)

    def _refresh_vectors(self, part: tuple[str, str], model: str) -> VecCache:
        """The vector cache of one partition: ("u", user) a user's own rows, ("t", team) a team's shared
        rows, ("p", "") public rows. A viewer's candidates are the union of its partitions' caches."""
        key = (part, model)
        kind, name = part
        if kind == "u":
            sql = ("SELECT seq, embedding, embed_gen, created_at FROM memory INDEXED BY memory_vec_gen "
                   "WHERE user_id = ? AND embedding_model = ? AND embed_gen > ? AND embedding IS NOT NULL "
                   "ORDER BY embed_gen")
        else:
            sql = ("SELECT seq, embedding, embed_gen, created_at FROM memory INDEXED BY memory_shared_vec WHERE "
                   "privacy_scope = ? AND team = ? AND embedding_model = ? AND embed_gen > ? AND privacy_scope <> "
                   "'private' AND embed_gen > 0 AND embedding IS NOT NULL ORDER BY embed_gen")
        with self._vec_lock:
            epoch = self._vec_epoch
            cache = self._vec.get(key)
            gen = cache.gen if cache else 0
            params: tuple[Any, ...] = ((name, model, gen) if kind == "u" else
                                       ("team" if kind == "t" else "public", name, model, gen))
            with self._read() as db:
                rows = db.execute(sql, params).fetchall()
            if not rows:
                if cache is None:
                    cache = VecCache.empty()
                    self._keep_vectors(key, cache, epoch)
                return cache
            seqs = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
            mat = np.vstack([np.frombuffer(r[1], dtype=np.float32) for r in rows])
            # Stored as fixed-width ISO text ending in "Z" (gieok.core.dates.iso), which numpy reads without it.
            created = np.array([r[3][:-1] for r in rows], dtype=TIME)
            new_gen = int(rows[-1][2])
            # New rows are appended in place; a re-embedded row's old vector is dropped (vec_cache).
            cache = (VecCache.of(seqs, mat, new_gen, created) if cache is None
                     else cache.extended(seqs, mat, new_gen, created))
            self._keep_vectors(key, cache, epoch)
            return cache

    def _keep_vectors(self, key: tuple[tuple[str, str], str], cache: VecCache, epoch: int) -> None:
        """Keep `cache` for the next search unless the caches were dropped since its refresh began (it may hold
        an erased row's vector: this search uses it, the next one reloads)."""
        if self._vec_epoch == epoch:
            self._vec[key] = cache
            # A drop between the check and the store: the drop counts before it clears, so either it clears
            # this cache after, or the epoch has moved now.
            if self._vec_epoch != epoch:
                self._vec.pop(key, None)

    async def vector_search(self, f: SearchFilters, model: str, query: Vector, limit: int, *,
                            sink: VectorSink | None = None) -> list[tuple[Memory, float]]:
        full_where, params = where_clause(f, "?", tags_sql, iso)
        # The candidates are fetched by rowid; the unary + keeps the planner from preferring the
        # (user_id, …) indexes and scanning every row of the user instead (46 ms → ~1 ms at 100k rows).
        where = full_where.replace("m.user_id = ?", "+m.user_id = ?", 1)

        parts: list[tuple[str, str]] = [("u", f.user_id)]
        if f.viewer is not None:
            parts = [("u", f.viewer.user_id), *(("t", t) for t in f.viewer.teams), ("p", "")]

        def run() -> list[tuple[Memory, float]]:
            seqs, scores, created = self._viewer_scores(parts, model, query.astype(np.float32))
            n = len(seqs)
            if n == 0:
                return []
            if f.since is not None or f.until is not None:
                # A date window ("on 3 June"): rows outside it are never candidates. Masked here, from the
                # cached creation times, rather than found out row by row in SQL by widening (a 3-day window
                # of 100,000 rows took three rounds and 1,800 rows decoded); SQL still applies every filter.
                inside = np.ones(n, dtype=bool)
                if f.since is not None:
                    inside &= created >= _as_time(f.since)
                if f.until is not None:
                    inside &= created < _as_time(f.until)
                scores = np.where(inside, scores, -np.inf)
            # Filters are applied in SQL to an over-sampled top list; widen until enough rows pass or
            # every vector has been considered. The margin is small: most searches filter by owner and
            # liveness only, which nearly every row passes, and each row fetched is one more to decode.
            want = limit + max(8, limit // 8)  # widened below when filters reject rows
            while True:
                if want > 8192:
                    # A selective filter (a rare platform, a narrow date range): ask SQL which rows pass,
                    # using its indexes, and rank only those, instead of widening over most of the matrix.
                    with self._read() as db:
                        allowed = np.fromiter((r[0] for r in db.execute(
                            f"SELECT m.seq FROM memory m WHERE {full_where}", params)), dtype=np.int64)
                    scores = np.where(np.isin(seqs, allowed), scores, -np.inf)
                    want = min(limit, len(allowed))
                    if want == 0:
                        return []
                # A row in two partitions (its owner's, and its team's or the public one) is scored twice:
                # twice as many picks still hold `want` distinct rows.
                k = min(want * (2 if len(parts) > 1 else 1), n)
                top = np.argpartition(-scores, k - 1)[:k] if k < n else np.arange(n)
                top = top[np.argsort(-scores[top])]
                score: dict[int, float] = {}
                for i in top:
                    score.setdefault(int(seqs[i]), float(scores[i]))
                found = self._scored_rows(dict(list(score.items())[:want]), where, params)
                if len(found) >= limit or k >= n or np.isneginf(scores[top[-1]]):
                    found.sort(key=lambda t: -t[1])
                    return found[:limit]
                want *= 8
        return await self._sunk(await anyio.to_thread.run_sync(run), sink)

    async def _sunk(self, found: list[tuple[Memory, float]], sink: VectorSink | None) -> list[tuple[Memory, float]]:
        """`found`, its rows' vectors put in `sink`: read by id from this process's own file, so a second query
        costs little here (PostgreSQL reads them with the rows instead)."""
        if sink is not None and found:
            vecs = await self.get_vectors([m.id for m, _s in found], sink.model)
            sink.put(found, [vecs.get(m.id) for m, _s in found])
        return found

    def _viewer_scores(self, parts: list[tuple[str, str]], model: str,
                       query: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(seqs, cosines, creation times) over the viewer's partitions, each partition scored where its matrix
        lies: stacking them into one matrix would copy every vector at every search. A row may appear twice
        (see vector_search)."""
        caches = [c for c in (self._refresh_vectors(p, model) for p in parts)
                  if c.seqs.size and c.mat.shape[1] == query.shape[0]]
        if not caches:
            return np.zeros(0, np.int64), np.zeros(0, np.float32), np.zeros(0, TIME)
        scores = [c.scores(query) for c in caches]
        if len(caches) == 1:
            return caches[0].seqs, scores[0], caches[0].created
        return (np.concatenate([c.seqs for c in caches]), np.concatenate(scores),
                np.concatenate([c.created for c in caches]))

    async def get_vectors(self, ids: list[str], model: str) -> dict[str, Vector]:
        if not ids:
            return {}
        with self._read() as db:
            rows = db.execute(f"SELECT id, embedding FROM memory WHERE id IN ({','.join('?' * len(ids))}) "
                                   "AND embedding_model = ? AND embedding IS NOT NULL", [*ids, model]).fetchall()
        return {r[0]: np.frombuffer(r[1], dtype=np.float32) for r in rows}

    async def neighbour_vectors(self, f: SearchFilters, ids: list[str], model: str) -> NeighbourVectors:
        where_m, params = where_clause(f, "?", tags_sql, iso, alias="m")
        where_n, _ = where_clause(f, "?", tags_sql, iso, alias="n")
        # Both rows are fetched by id; the unary + keeps the planner from scanning all the user's rows by the
        # (user_id, …) indexes instead (as in vector_search).
        where_m = where_m.replace("m.user_id = ?", "+m.user_id = ?", 1)
        where_n = where_n.replace("n.user_id = ?", "+n.user_id = ?", 1)

        def run() -> NeighbourVectors:
            out: NeighbourVectors = {}
            with self._read() as db:
                for chunk in chunks(ids):
                    for mid, nid, blob in db.execute(neighbour_vectors_sql("?", len(chunk), where_m, where_n),
                                                     [*chunk, *params, model, *params]):
                        out.setdefault(mid, []).append((nid, np.frombuffer(blob, dtype=np.float32)))
            return out
        return await anyio.to_thread.run_sync(run) if ids else {}

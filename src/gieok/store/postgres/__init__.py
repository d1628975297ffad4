"""The organisation backend: PostgreSQL + pgvector, for several server replicas and librarian workers.

Why it looks like this:
- One async code path: psycopg 3's AsyncConnectionPool, connections in autocommit, explicit transactions
  where several statements must hold together. psycopg errors become `StoreError` in one place (`_conn`).
- Vectors: an untyped `vector` column and one partial HNSW expression index per (model, dimension), made
  when the first vector of that model arrives (`_ensure_vector_index`); above 2,000 dimensions the index
  is on a `halfvec` cast, as pgvector's HNSW indexes `vector` only up to 2,000. Vectors of different
  models are never compared: every vector query filters on `embedding_model`.
- Filtered vector search must return full results. HNSW with a selective `WHERE user_id = …` returns
  only the filtered part of its `ef_search` candidates (MEASURED.md: 0.4–0.5 of 10 rows at 1%
  selectivity). So a user with few vectors gets an exact scan (a MATERIALIZED CTE keeps the planner off
  the index), a large one gets HNSW with `hnsw.iterative_scan = relaxed_order`, re-sorted by exact
  distance, and if that still comes back short (a very selective filter) the exact scan answers. Those
  settings are SET LOCAL and the statement runs with `prepare=False`: a plan prepared earlier would
  ignore them.
- The librarian claims with `FOR UPDATE SKIP LOCKED` plus the same lease columns as SQLite, so a crashed
  worker's rows come back when the lease expires; inserts NOTIFY `gieok_pending` (a statement trigger) so
  idle workers wake at once (`wait_for_pending`).

The modules: `connection` (pool, error translation, extensions, migrations, vector indexes, checks), `codec`
(a `Memory` as a row), `memories` (the rows), `search` (BM25, substring, vectors), `queue` (the librarian's
queue, LISTEN/NOTIFY and job leases), `profiles` (profiles, project tags, links, feedback), `auth_tables`
(teams, API keys, audit, erasure), `text` (the BM25 query, its statistics and the neighbour context),
`vectors` (pgvector index naming and k-NN query shape), `migrations`; `browse` (the dashboard's pages).
"""

from __future__ import annotations

from gieok.store.postgres.auth_tables import PostgresAuthTables
from gieok.store.postgres.browse import BrowseMixin
from gieok.store.postgres.code_refs import PostgresCodeRefs
from gieok.store.postgres.connection import HNSW_EF_SEARCH, postgres_conninfo
from gieok.store.postgres.memories import MemoryRowsMixin
from gieok.store.postgres.profiles import ProfilesMixin, RelationsMixin
from gieok.store.postgres.queue import ColdQueueMixin, JobLeasesMixin
from gieok.store.postgres.search import SearchMixin
from gieok.store.postgres.term_vectors import PostgresTermVectors
from gieok.store.postgres.vectors import vector_index_ddl, vector_index_name

__all__ = ["HNSW_EF_SEARCH", "PostgresStore", "postgres_conninfo", "vector_index_ddl", "vector_index_name"]


class PostgresStore(MemoryRowsMixin, BrowseMixin, SearchMixin, ColdQueueMixin, JobLeasesMixin, ProfilesMixin,
                    RelationsMixin, PostgresAuthTables, PostgresCodeRefs, PostgresTermVectors):
    """A `gieok.store.base.Store` on PostgreSQL + pgvector: `PostgresStore("postgresql://user@host/db")`, then
    `await store.open()`."""

"""pgvector specifics: the SQL type and HNSW index of each (embedding model, dimension), and the k-NN query
shape shared by the HNSW and exact searches of gieok.store.postgres."""

from __future__ import annotations

import hashlib

from psycopg import sql

HNSW_MAX_DIMS = 2000          # pgvector indexes `vector` up to 2,000 dims; `halfvec` up to 4,000


def vector_type(dims: int) -> tuple[str, str]:
    """The SQL type a vector of `dims` is indexed and compared as, and its HNSW operator class."""
    if dims > HNSW_MAX_DIMS:
        return f"halfvec({dims})", "halfvec_cosine_ops"
    return f"vector({dims})", "vector_cosine_ops"


def vector_index_name(model: str, dims: int) -> str:
    return "memory_vec_" + hashlib.sha1(f"{model}\0{dims}".encode()).hexdigest()[:12]


def vector_index_ddl(model: str, dims: int, *, concurrently: bool = True) -> sql.Composed:
    """The HNSW index of one (model, dimension): a partial expression index, so it holds only that model's
    vectors and a query names the model and dimension as literals to use it."""
    typ, ops = vector_type(dims)
    return sql.SQL("CREATE INDEX {}IF NOT EXISTS {} ON memory USING hnsw ((embedding::{}) {}) "
                   "WHERE embedding_model = {} AND vector_dims(embedding) = {}").format(
        sql.SQL("CONCURRENTLY " if concurrently else ""), sql.Identifier(vector_index_name(model, dims)),
        sql.SQL(typ), sql.SQL(ops), sql.Literal(model), sql.Literal(dims))


def knn_sql(inner: str, typ: str, select: str) -> str:
    """`inner` yields (id, dist); the outer query re-sorts by exact distance (relaxed_order iterative scans
    may return rows slightly out of order) and fetches the `select` columns and the cosine."""
    return (f"WITH top AS MATERIALIZED ({inner}) SELECT {select}, 1 - top.dist FROM top "
            f"JOIN memory m ON m.id = top.id ORDER BY top.dist")

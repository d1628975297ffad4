"""Numbered PostgreSQL migrations, the same steps as `sqlite_migrations` in Postgres types. Each runs in one
transaction with its `migration_history` row (Postgres DDL is transactional), so a failed migration leaves
the database exactly as it was. Never edit a released migration: add the next one.

Why the schema looks like this:
- `embedding` is an untyped `vector`: the dimension depends on the embedding model, which is not known when
  the schema is made. Each (model, dimension) gets its own partial HNSW expression index when its first
  vector arrives (`PostgresStore._ensure_vector_index`), so vectors of different models are never mixed in
  one index and a model change needs no schema change.
- Full text is indexed from `search_text` (gieok.core.text: stemmed English + Korean bigrams) with the 'simple'
  configuration, so both backends tokenise identically; substring search is ILIKE backed by pg_trgm.
- `seq` keeps insertion order for `iter_memories`, as SQLite's rowid does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from psycopg import AsyncConnection

from gieok.store.browse import BROWSE_INDEXES
from gieok.store.context_sql import CONTEXT_CHARS, rebuild_contexts_sql
from gieok.store.postgres.text import DOC_TOKENS

ROLE_CHECK = "role IN ('user','assistant','system','tool')"
KIND_CHECK = "kind IN ('working','episodic','semantic','procedural')"
STATUS = "('pending','ok','failed')"
# Rows the librarian still has work on: tags, the profile step (migration 007) or a vector.
PENDING_PREDICATE = ("(tag_status <> 'ok' OR profile_status <> 'ok' OR embed_status <> 'ok') "
                     "AND deleted_at IS NULL")
# The pending index as migration 001 made it, before profile_status existed.
_PENDING_PREDICATE_001 = "(tag_status <> 'ok' OR embed_status <> 'ok') AND deleted_at IS NULL"

SESSION_ORDER = "(user_id, session_id, created_at, id)"

# Secondary indexes of the memory table, kept apart so bulk loads (the scale benchmark) can build them
# after COPY, which is several times faster than loading into an indexed table (MEASURED.md).
MEMORY_INDEXES: tuple[tuple[str, str], ...] = (
    ("memory_user_created", "CREATE INDEX memory_user_created ON memory (user_id, created_at)"),
    # A session in its order, (created_at, id): the message before or after a row is one index step away
    # (gieok.store.context_sql; migration 014).
    ("memory_session", f"CREATE INDEX memory_session ON memory {SESSION_ORDER}"),
    ("memory_pinned", "CREATE INDEX memory_pinned ON memory (user_id) WHERE is_pinned"),
    ("memory_pending", f"CREATE INDEX memory_pending ON memory (created_at) WHERE {PENDING_PREDICATE}"),
    ("memory_review", "CREATE INDEX memory_review ON memory (user_id, next_review_at) "
                      "WHERE next_review_at IS NOT NULL"),
    # Lets vector search count a user's rows of one model cheaply (index-only) to pick exact vs HNSW.
    ("memory_user_model", "CREATE INDEX memory_user_model ON memory (user_id, embedding_model) "
                          "WHERE embedding IS NOT NULL"),
    ("memory_p_tags", "CREATE INDEX memory_p_tags ON memory USING gin (p_tags)"),
    ("memory_d_tags", "CREATE INDEX memory_d_tags ON memory USING gin (d_tags)"),
    ("memory_fts", "CREATE INDEX memory_fts ON memory USING gin (search_tsv)"),
    ("memory_trgm", "CREATE INDEX memory_trgm ON memory USING gin (content gin_trgm_ops)"),
)


async def m001_initial(db: AsyncConnection[Any]) -> None:
    await db.execute(f"""
        CREATE TABLE memory (
            seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
            id text PRIMARY KEY,                 -- UUIDv7
            user_id text NOT NULL,
            agent_platform text NOT NULL DEFAULT '',
            agent_model text NOT NULL DEFAULT '',
            is_subagent boolean NOT NULL DEFAULT false,
            subagent_model text NOT NULL DEFAULT '',
            subagent_role text NOT NULL DEFAULT '',
            session_id text NOT NULL DEFAULT '',
            role text NOT NULL CHECK ({ROLE_CHECK}),
            project text NOT NULL DEFAULT '',
            p_tags text[] NOT NULL DEFAULT '{{}}',
            d_tags text[] NOT NULL DEFAULT '{{}}',
            privacy_scope text NOT NULL DEFAULT 'private' CHECK (privacy_scope IN ('private','team','public')),
            kind text NOT NULL DEFAULT 'episodic' CHECK ({KIND_CHECK}),
            title text NOT NULL DEFAULT '',
            content text NOT NULL,
            search_text text NOT NULL DEFAULT '',
            search_tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, search_text)) STORED,
            source text NOT NULL DEFAULT 'chat' CHECK (source IN ('chat','tool','file','url','manual')),
            importance double precision NOT NULL DEFAULT 0.5 CHECK (importance BETWEEN 0 AND 1),
            is_pinned boolean NOT NULL DEFAULT false,
            content_hash text NOT NULL,
            embedding vector,
            embedding_model text NOT NULL DEFAULT '',
            tag_status text NOT NULL DEFAULT 'pending' CHECK (tag_status IN {STATUS}),
            embed_status text NOT NULL DEFAULT 'pending' CHECK (embed_status IN {STATUS}),
            cold_attempts integer NOT NULL DEFAULT 0,
            cold_error text NOT NULL DEFAULT '',
            lease_until timestamptz,
            lease_owner text,
            view_count integer NOT NULL DEFAULT 0,
            cite_count integer NOT NULL DEFAULT 0,
            edit_count integer NOT NULL DEFAULT 0,
            last_accessed_at timestamptz,
            next_review_at timestamptz,
            review_interval_days double precision NOT NULL DEFAULT 0,
            is_active boolean NOT NULL DEFAULT true,
            archived_at timestamptz,
            deleted_at timestamptz,
            created_at timestamptz NOT NULL,
            updated_at timestamptz NOT NULL,
            meta jsonb NOT NULL DEFAULT '{{}}'
        )""")
    # Keep what every search reads in the row. pgvector's types default to EXTERNAL storage: once a row
    # passes ~2 kB (a 384-d vector is 1.5 kB) the vector is the first thing moved out of line, and every
    # exact distance then costs a TOAST fetch (measured 10× slower per row); the tsvector likewise, read
    # by every keyword match for ranking. MAIN keeps them in the row (compressed if need be); content and
    # search_text, read only for the rows returned, are toasted first.
    await db.execute("ALTER TABLE memory ALTER COLUMN embedding SET STORAGE MAIN")
    await db.execute("ALTER TABLE memory ALTER COLUMN search_tsv SET STORAGE MAIN")
    # Re-importing a history must not store it twice.
    await db.execute("CREATE UNIQUE INDEX memory_dedup ON memory (user_id, session_id, content_hash, created_at)")
    for name, ddl in MEMORY_INDEXES:
        if name == "memory_pending":  # as it was in 001; 007 brings it up to date
            ddl = f"CREATE INDEX memory_pending ON memory (created_at) WHERE {_PENDING_PREDICATE_001}"
        await db.execute(ddl)
    # Librarian workers LISTEN on this channel; one notification per inserting statement, not per row.
    await db.execute("""
        CREATE FUNCTION gieok_notify_pending() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN PERFORM pg_notify('gieok_pending', ''); RETURN NULL; END $$""")
    await db.execute("CREATE TRIGGER memory_notify_pending AFTER INSERT ON memory "
                     "FOR EACH STATEMENT EXECUTE FUNCTION gieok_notify_pending()")
    await db.execute("""
        CREATE TABLE embedding_indexes (
            model text NOT NULL,
            dims integer NOT NULL,
            index_name text NOT NULL,
            created_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (model, dims)
        )""")
    await db.execute("""
        CREATE TABLE users (
            user_id text PRIMARY KEY,
            user_name text NOT NULL DEFAULT '',
            core_profile jsonb NOT NULL DEFAULT '[]',
            sub_profile jsonb NOT NULL DEFAULT '[]',
            created_at timestamptz NOT NULL,
            updated_at timestamptz NOT NULL
        )""")
    await db.execute("""
        CREATE TABLE project_tags (
            name text PRIMARY KEY,
            alias_of text REFERENCES project_tags(name) ON DELETE SET NULL,
            description text NOT NULL DEFAULT '',
            created_by text NOT NULL DEFAULT 'librarian' CHECK (created_by IN ('librarian','user')),
            usage_count integer NOT NULL DEFAULT 0,
            created_at timestamptz NOT NULL
        )""")
    await db.execute("""
        CREATE TABLE memory_links (
            src text NOT NULL REFERENCES memory(id) ON DELETE CASCADE,
            dst text NOT NULL REFERENCES memory(id) ON DELETE CASCADE,
            relation text NOT NULL CHECK (relation IN
                ('cause_of','derived_from','duplicates','contradicts','supersedes')),
            created_at timestamptz NOT NULL,
            PRIMARY KEY (src, dst, relation)
        )""")
    await db.execute("CREATE INDEX memory_links_dst ON memory_links (dst)")
    await db.execute("""
        CREATE TABLE feedback_events (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            memory_id text NOT NULL REFERENCES memory(id) ON DELETE CASCADE,
            event text NOT NULL CHECK (event IN ('used','cited','edited','neglected','helpful','not_helpful')),
            score double precision NOT NULL DEFAULT 0,
            ts timestamptz NOT NULL
        )""")
    await db.execute("CREATE INDEX feedback_memory ON feedback_events (memory_id)")


async def m002_librarian_jobs(db: AsyncConnection[Any]) -> None:
    # Periodic librarian work (maintenance, consolidation) must run in one worker at a time even when
    # several share the database, and its cadence must survive restarts: a lease row per job.
    await db.execute("""
        CREATE TABLE librarian_jobs (
            name text PRIMARY KEY,
            owner text,
            lease_until timestamptz,
            last_started_at timestamptz,
            last_finished_at timestamptz,
            last_result jsonb NOT NULL DEFAULT '{}'
        )""")


async def m003_vector_refresh_index(db: AsyncConnection[Any]) -> None:
    # SQLite's 003 indexes its vector-cache refresh; Postgres searches vectors in the database (HNSW), so
    # there is nothing to add. Kept so both backends share one numbering.
    return None


async def m004_fts_vocabulary(db: AsyncConnection[Any]) -> None:
    # SQLite's 004 adds an FTS vocabulary table; Postgres keeps term statistics itself. Shared numbering.
    return None


async def m005_neighbour_context(db: AsyncConnection[Any]) -> None:
    # Each chat row's full-text document also holds its session neighbours' words (gieok.store.context_sql).
    # Existing rows get their context first, then the generated tsvector is rebuilt over both texts (one
    # table rewrite instead of two).
    await db.execute("ALTER TABLE memory ADD COLUMN context_text text NOT NULL DEFAULT ''")
    await db.execute("""
        WITH w AS (SELECT id, lag(right(search_text, 1000)) OVER s AS p, lead(left(search_text, 1000)) OVER s AS n
                   FROM memory WHERE source = 'chat' AND session_id <> '' AND deleted_at IS NULL
                   WINDOW s AS (PARTITION BY user_id, session_id ORDER BY created_at, id))
        UPDATE memory m SET context_text = trim(coalesce(w.p, '') || ' ' || coalesce(w.n, ''))
        FROM w WHERE m.id = w.id AND (w.p IS NOT NULL OR w.n IS NOT NULL)""")
    await db.execute("DROP INDEX IF EXISTS memory_fts")
    await db.execute("ALTER TABLE memory DROP COLUMN search_tsv")
    # The row's own lexemes are labelled A, the neighbours' D: keyword search weighs D at half (ts_rank_cd).
    await db.execute("ALTER TABLE memory ADD COLUMN search_tsv tsvector GENERATED ALWAYS AS "
                     "(setweight(to_tsvector('simple'::regconfig, search_text), 'A') || "
                     "to_tsvector('simple'::regconfig, context_text)) STORED")
    await db.execute("ALTER TABLE memory ALTER COLUMN search_tsv SET STORAGE MAIN")
    await db.execute("CREATE INDEX memory_fts ON memory USING gin (search_tsv)")


async def m006_team_server(db: AsyncConnection[Any]) -> None:
    # The team server (ARCHITECTURE §13), as SQLite's 006: a `team` for team-scoped rows, teams and members,
    # API keys (only a hash of the secret), and the audit log. A viewer's candidates are its own rows (the
    # user indexes) OR team/public rows (the partial index below), which PostgreSQL combines in a BitmapOr.
    await db.execute("ALTER TABLE memory ADD COLUMN team text NOT NULL DEFAULT ''")
    await db.execute("CREATE INDEX memory_shared ON memory (privacy_scope, team, created_at) "
                     "WHERE privacy_scope <> 'private'")
    await db.execute("""
        CREATE TABLE teams (
            name text PRIMARY KEY,
            description text NOT NULL DEFAULT '',
            created_at timestamptz NOT NULL
        )""")
    await db.execute("""
        CREATE TABLE team_members (
            team text NOT NULL REFERENCES teams(name) ON DELETE CASCADE,
            user_id text NOT NULL,
            source text NOT NULL DEFAULT 'admin',
            added_at timestamptz NOT NULL,
            PRIMARY KEY (team, user_id)
        )""")
    await db.execute("CREATE INDEX team_members_user ON team_members (user_id)")
    await db.execute("""
        CREATE TABLE api_keys (
            key_id text PRIMARY KEY,
            secret_hash text NOT NULL,
            user_id text NOT NULL,
            name text NOT NULL DEFAULT '',
            role text NOT NULL CHECK (role IN ('viewer','editor','admin')),
            teams text[] NOT NULL DEFAULT '{}',
            created_at timestamptz NOT NULL,
            expires_at timestamptz,
            revoked_at timestamptz,
            last_used_at timestamptz
        )""")
    await db.execute("CREATE INDEX api_keys_user ON api_keys (user_id)")
    await db.execute("""
        CREATE TABLE audit_log (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            ts timestamptz NOT NULL,
            actor text NOT NULL,
            on_behalf text NOT NULL DEFAULT '',
            key_id text NOT NULL DEFAULT '',
            via text NOT NULL DEFAULT '',
            client text NOT NULL DEFAULT '',
            action text NOT NULL,
            outcome text NOT NULL,
            memory_ids text[] NOT NULL DEFAULT '{}',
            owners text[] NOT NULL DEFAULT '{}',
            detail text NOT NULL DEFAULT '',
            remote text NOT NULL DEFAULT ''
        )""")
    await db.execute("CREATE INDEX audit_ts ON audit_log (ts)")
    await db.execute("CREATE INDEX audit_actor ON audit_log (actor, ts)")


async def m007_profile_status(db: AsyncConnection[Any]) -> None:
    # Profile promotion is a step of the cold path like tagging and embedding: a row whose facts could not be
    # read (an LLM outage) keeps `profile_status` pending and comes back to the librarian. Existing rows owe
    # nothing (a constant default: no table rewrite). The pending index covers the new step.
    await db.execute(f"ALTER TABLE memory ADD COLUMN profile_status text NOT NULL DEFAULT 'ok' "
                     f"CHECK (profile_status IN {STATUS})")
    await db.execute("DROP INDEX memory_pending")
    await db.execute(f"CREATE INDEX memory_pending ON memory (created_at) WHERE {PENDING_PREDICATE}")


async def m008_browse_indexes(db: AsyncConnection[Any]) -> None:
    # The dashboard's archived/forgotten timelines, activity chart and filter menus (gieok.store.browse).
    for _, ddl in BROWSE_INDEXES:
        await db.execute(ddl)


async def m009_shown_count(db: AsyncConnection[Any]) -> None:
    # As in SQLite: search appearances get their own counter; until now every view_count was one.
    await db.execute("ALTER TABLE memory ADD COLUMN shown_count integer NOT NULL DEFAULT 0")
    await db.execute("UPDATE memory SET shown_count = view_count, view_count = 0 WHERE view_count <> 0")


async def m010_code_refs(db: AsyncConnection[Any]) -> None:
    # What memories say about code (gieok.store.code_refs): file anchors with their last staleness check, and
    # error fingerprints. Own tables, so the hot path's insert stays one row; rows go with their memory.
    await db.execute("""
        CREATE TABLE memory_anchors (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            memory_id text NOT NULL REFERENCES memory(id) ON DELETE CASCADE,
            repo_root text NOT NULL DEFAULT '',
            repo_remote text NOT NULL DEFAULT '',
            repo_name text NOT NULL DEFAULT '',
            path text NOT NULL,
            commit_id text NOT NULL DEFAULT '',
            blob text NOT NULL DEFAULT '',
            line_start integer,
            line_end integer,
            symbol text NOT NULL DEFAULT '',
            via text NOT NULL DEFAULT 'mention',
            status text NOT NULL DEFAULT 'unchecked' CHECK (status IN
                ('unchecked','unchanged','changed','moved','deleted','unknown')),
            detail text NOT NULL DEFAULT '',
            current_path text NOT NULL DEFAULT '',
            checked_head text NOT NULL DEFAULT '',
            checked_blob text NOT NULL DEFAULT '',
            checked_at timestamptz,
            UNIQUE (memory_id, repo_root, path)
        )""")
    await db.execute("CREATE INDEX memory_anchors_repo ON memory_anchors (repo_root, id)")
    await db.execute("CREATE INDEX memory_anchors_remote ON memory_anchors (repo_remote, id) WHERE repo_remote <> ''")
    await db.execute("CREATE INDEX memory_anchors_stale ON memory_anchors (memory_id) "
                     "WHERE status IN ('changed','moved','deleted')")
    await db.execute("""
        CREATE TABLE memory_fingerprints (
            memory_id text NOT NULL REFERENCES memory(id) ON DELETE CASCADE,
            digest text NOT NULL,
            signature text NOT NULL,
            language text NOT NULL DEFAULT '',
            error_type text NOT NULL DEFAULT '',
            message text NOT NULL DEFAULT '',
            frames text NOT NULL DEFAULT '[]',
            PRIMARY KEY (memory_id, digest)
        )""")
    await db.execute("CREATE INDEX memory_fingerprints_digest ON memory_fingerprints (digest)")
    await db.execute("CREATE INDEX memory_fingerprints_signature ON memory_fingerprints (signature)")


async def m011_request_keys(db: AsyncConnection[Any]) -> None:
    # Idempotency-Key of POST /v1/messages (as in SQLite): the ids a request stored, in its own transaction.
    await db.execute("""CREATE TABLE request_keys (user_id text NOT NULL, key text NOT NULL, fingerprint text NOT NULL,
        result jsonb NOT NULL DEFAULT '[]', created_at timestamptz NOT NULL, PRIMARY KEY (user_id, key))""")
    await db.execute("CREATE INDEX request_keys_created ON request_keys (created_at)")



async def m012_term_vectors(db: AsyncConnection[Any]) -> None:
    # Each user's English words with their vectors (as in SQLite): float32 bytes, read whole into a process.
    await db.execute("""CREATE TABLE term_vectors (seq bigserial PRIMARY KEY, user_id text NOT NULL,
        model text NOT NULL, term text NOT NULL, vector bytea NOT NULL, UNIQUE (user_id, model, term))""")
    await db.execute("CREATE INDEX term_vectors_user_seq ON term_vectors (user_id, model, seq)")


async def m013_context_two_before(db: AsyncConnection[Any]) -> None:
    # As SQLite's 013: each chat row's context also holds the message two before it; the generated tsvector
    # follows the rows that change.
    await db.execute(rebuild_contexts_sql(lambda c: f"right({c}, {CONTEXT_CHARS})",
                                          lambda c: f"left({c}, {CONTEXT_CHARS})"))


async def m014_session_order(db: AsyncConnection[Any]) -> None:
    # The session index gains the id that breaks created_at ties: finding a row's previous and next messages
    # (search's neighbour cosines, the librarian's context) no longer sorts each session's rows around it
    # (60 candidates' neighbours at 100,000 memories: execution 4.9 → 1.7 ms).
    await db.execute("DROP INDEX IF EXISTS memory_session")
    await db.execute(f"CREATE INDEX memory_session ON memory {SESSION_ORDER}")


async def m015_document_tokens(db: AsyncConnection[Any]) -> None:
    # BM25's document length in tokens, as FTS5 counts it (gieok.store.postgres.text.DOC_TOKENS), instead of
    # bytes: a Hangul bigram is six bytes and most English words fewer, so a Korean row scored below an English
    # one of as many words. Stored, since counting at query time reads every matching row's text.
    await db.execute(f"ALTER TABLE memory ADD COLUMN doc_tokens integer GENERATED ALWAYS AS ({DOC_TOKENS}) STORED")


async def m016_archived_index(db: AsyncConnection[Any]) -> None:
    # As SQLite's 016: whether a user has any archived row (Store.has_archived) is one step of a small index.
    await db.execute("CREATE INDEX memory_archived ON memory (user_id) WHERE NOT is_active AND deleted_at IS NULL")


async def m017_archived_shared_index(db: AsyncConnection[Any]) -> None:
    # As SQLite's 017: a teammate's check for archived rows they may see, from small indexes.
    await db.execute("CREATE INDEX memory_archived_shared ON memory (privacy_scope, team) "
                     "WHERE NOT is_active AND deleted_at IS NULL")


async def m018_substring_index(db: AsyncConnection[Any]) -> None:
    # SQLite's 018 indexes trigrams for substring search; here pg_trgm has done so since the first migration.
    del db


Migration = Callable[[AsyncConnection[Any]], Awaitable[None]]

MIGRATIONS: list[tuple[int, str, Migration]] = [
    (1, "initial", m001_initial),
    (2, "librarian_jobs", m002_librarian_jobs),
    (3, "vector_refresh_index", m003_vector_refresh_index),
    (4, "fts_vocabulary", m004_fts_vocabulary),
    (5, "neighbour_context", m005_neighbour_context),
    (6, "team_server", m006_team_server),
    (7, "profile_status", m007_profile_status),
    (8, "browse_indexes", m008_browse_indexes),
    (9, "shown_count", m009_shown_count),
    (10, "code_refs", m010_code_refs),
    (11, "request_keys", m011_request_keys),
    (12, "term_vectors", m012_term_vectors),
    (13, "context_two_before", m013_context_two_before),
    (14, "session_order", m014_session_order),
    (15, "document_tokens", m015_document_tokens),
    (16, "archived_index", m016_archived_index),
    (17, "archived_shared_index", m017_archived_shared_index),
    (18, "substring_index", m018_substring_index),
]

# Extensions are created before the migrations, outside their transactions: on a managed server the
# application role may not be allowed to create them, and the error must say who has to.
EXTENSIONS = ("vector", "pg_trgm")

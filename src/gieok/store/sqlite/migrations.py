"""Numbered SQLite migrations. Each runs in one transaction with its `migration_history` row, so a failed
migration leaves the database exactly as it was. Never edit a released migration: add the next one."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from gieok.store.browse import BROWSE_INDEXES
from gieok.store.context_sql import CONTEXT_CHARS, rebuild_contexts_sql

ROLE_CHECK = "role IN ('user','assistant','system','tool')"
KIND_CHECK = "kind IN ('working','episodic','semantic','procedural')"
STATUS = "('pending','ok','failed')"


def m001_initial(db: sqlite3.Connection) -> None:
    db.execute(f"""
        CREATE TABLE memory (
            seq INTEGER PRIMARY KEY,          -- stable rowid for the external-content FTS index
            id TEXT NOT NULL UNIQUE,          -- UUIDv7
            user_id TEXT NOT NULL,
            agent_platform TEXT NOT NULL DEFAULT '',
            agent_model TEXT NOT NULL DEFAULT '',
            is_subagent INTEGER NOT NULL DEFAULT 0,
            subagent_model TEXT NOT NULL DEFAULT '',
            subagent_role TEXT NOT NULL DEFAULT '',
            session_id TEXT NOT NULL DEFAULT '',
            role TEXT NOT NULL CHECK ({ROLE_CHECK}),
            project TEXT NOT NULL DEFAULT '',
            p_tags TEXT NOT NULL DEFAULT '[]',
            d_tags TEXT NOT NULL DEFAULT '[]',
            privacy_scope TEXT NOT NULL DEFAULT 'private' CHECK (privacy_scope IN ('private','team','public')),
            kind TEXT NOT NULL DEFAULT 'episodic' CHECK ({KIND_CHECK}),
            title TEXT NOT NULL DEFAULT '',
            content TEXT NOT NULL,
            search_text TEXT NOT NULL DEFAULT '',
            source TEXT NOT NULL DEFAULT 'chat' CHECK (source IN ('chat','tool','file','url','manual')),
            importance REAL NOT NULL DEFAULT 0.5 CHECK (importance BETWEEN 0 AND 1),
            is_pinned INTEGER NOT NULL DEFAULT 0,
            content_hash TEXT NOT NULL,
            embedding BLOB,
            embedding_model TEXT NOT NULL DEFAULT '',
            embed_gen INTEGER NOT NULL DEFAULT 0,   -- bumped on every new vector: lets readers refresh caches
            tag_status TEXT NOT NULL DEFAULT 'pending' CHECK (tag_status IN {STATUS}),
            embed_status TEXT NOT NULL DEFAULT 'pending' CHECK (embed_status IN {STATUS}),
            cold_attempts INTEGER NOT NULL DEFAULT 0,
            cold_error TEXT NOT NULL DEFAULT '',
            lease_until TEXT,
            lease_owner TEXT,
            view_count INTEGER NOT NULL DEFAULT 0,
            cite_count INTEGER NOT NULL DEFAULT 0,
            edit_count INTEGER NOT NULL DEFAULT 0,
            last_accessed_at TEXT,
            next_review_at TEXT,
            review_interval_days REAL NOT NULL DEFAULT 0,
            is_active INTEGER NOT NULL DEFAULT 1,
            archived_at TEXT,
            deleted_at TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            meta TEXT NOT NULL DEFAULT '{{}}'
        )""")
    db.execute("CREATE INDEX memory_user_created ON memory (user_id, created_at)")
    db.execute("CREATE INDEX memory_session ON memory (user_id, session_id, created_at)")
    # Re-importing a history must not store it twice.
    db.execute("CREATE UNIQUE INDEX memory_dedup ON memory (user_id, session_id, content_hash, created_at)")
    db.execute("CREATE INDEX memory_pinned ON memory (user_id) WHERE is_pinned = 1")
    db.execute("CREATE INDEX memory_pending ON memory (created_at) "
               "WHERE tag_status <> 'ok' OR embed_status <> 'ok'")
    db.execute("CREATE INDEX memory_embed_gen ON memory (embed_gen) WHERE embed_gen > 0")
    db.execute("CREATE INDEX memory_review ON memory (user_id, next_review_at) WHERE next_review_at IS NOT NULL")
    db.execute("""CREATE VIRTUAL TABLE memory_fts USING fts5(
        search_text, content='memory', content_rowid='seq', tokenize='unicode61 remove_diacritics 2')""")
    db.execute("""CREATE TRIGGER memory_fts_ai AFTER INSERT ON memory BEGIN
        INSERT INTO memory_fts(rowid, search_text) VALUES (new.seq, new.search_text); END""")
    db.execute("""CREATE TRIGGER memory_fts_ad AFTER DELETE ON memory BEGIN
        INSERT INTO memory_fts(memory_fts, rowid, search_text) VALUES ('delete', old.seq, old.search_text); END""")
    db.execute("""CREATE TRIGGER memory_fts_au AFTER UPDATE OF search_text ON memory BEGIN
        INSERT INTO memory_fts(memory_fts, rowid, search_text) VALUES ('delete', old.seq, old.search_text);
        INSERT INTO memory_fts(rowid, search_text) VALUES (new.seq, new.search_text); END""")
    db.execute("""
        CREATE TABLE users (
            user_id TEXT PRIMARY KEY,
            user_name TEXT NOT NULL DEFAULT '',
            core_profile TEXT NOT NULL DEFAULT '[]',
            sub_profile TEXT NOT NULL DEFAULT '[]',
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        )""")
    db.execute("""
        CREATE TABLE project_tags (
            name TEXT PRIMARY KEY,
            alias_of TEXT REFERENCES project_tags(name) ON DELETE SET NULL,
            description TEXT NOT NULL DEFAULT '',
            created_by TEXT NOT NULL DEFAULT 'librarian' CHECK (created_by IN ('librarian','user')),
            usage_count INTEGER NOT NULL DEFAULT 0,
            created_at TEXT NOT NULL
        )""")
    db.execute("""
        CREATE TABLE memory_links (
            src TEXT NOT NULL REFERENCES memory(id) ON DELETE CASCADE,
            dst TEXT NOT NULL REFERENCES memory(id) ON DELETE CASCADE,
            relation TEXT NOT NULL CHECK (relation IN
                ('cause_of','derived_from','duplicates','contradicts','supersedes')),
            created_at TEXT NOT NULL,
            PRIMARY KEY (src, dst, relation)
        )""")
    db.execute("CREATE INDEX memory_links_dst ON memory_links (dst)")
    db.execute("""
        CREATE TABLE feedback_events (
            id INTEGER PRIMARY KEY,
            memory_id TEXT NOT NULL REFERENCES memory(id) ON DELETE CASCADE,
            event TEXT NOT NULL CHECK (event IN ('used','cited','edited','neglected','helpful','not_helpful')),
            score REAL NOT NULL DEFAULT 0,
            ts TEXT NOT NULL
        )""")
    db.execute("CREATE INDEX feedback_memory ON feedback_events (memory_id)")


def m002_librarian_jobs(db: sqlite3.Connection) -> None:
    # Periodic librarian work (maintenance, consolidation) must run in one worker at a time even when
    # several share the database, and its cadence must survive restarts: a lease row per job.
    db.execute("""
        CREATE TABLE librarian_jobs (
            name TEXT PRIMARY KEY,
            owner TEXT,
            lease_until TEXT,
            last_started_at TEXT,
            last_finished_at TEXT,
            last_result TEXT NOT NULL DEFAULT '{}'
        )""")


def m003_vector_refresh_index(db: sqlite3.Connection) -> None:
    # The per-(user, model) vector cache asks "what changed since generation G?" before every vector
    # search; without this index SQLite answered it by scanning all of the user's rows (≈200 ms at 100k).
    db.execute("CREATE INDEX memory_vec_gen ON memory (user_id, embedding_model, embed_gen)")


def m004_fts_vocabulary(db: sqlite3.Connection) -> None:
    # Document frequencies of indexed tokens, read by keyword search to bound its work on huge stores.
    db.execute("CREATE VIRTUAL TABLE memory_fts_vocab USING fts5vocab(memory_fts, 'row')")


def m005_neighbour_context(db: sqlite3.Connection) -> None:
    # Each chat row's full-text document also holds its session neighbours' words (gieok.store.context_sql):
    # a second FTS column. The FTS table, its triggers and its vocabulary are rebuilt around it, and existing
    # rows get their context here (the librarian keeps it up to date from now on).
    for trigger in ("memory_fts_ai", "memory_fts_ad", "memory_fts_au"):
        db.execute(f"DROP TRIGGER {trigger}")
    db.execute("DROP TABLE memory_fts_vocab")
    db.execute("DROP TABLE memory_fts")
    db.execute("ALTER TABLE memory ADD COLUMN context_text TEXT NOT NULL DEFAULT ''")
    chat = "source = 'chat' AND session_id <> '' AND deleted_at IS NULL"
    db.execute(f"""
        WITH w AS (SELECT id, lag(substr(search_text, -1000)) OVER s AS p,
                          lead(substr(search_text, 1, 1000)) OVER s AS n
                   FROM memory WHERE {chat}
                   WINDOW s AS (PARTITION BY user_id, session_id ORDER BY created_at, id))
        UPDATE memory SET context_text = trim(coalesce(w.p, '') || ' ' || coalesce(w.n, ''))
        FROM w WHERE memory.id = w.id AND (w.p IS NOT NULL OR w.n IS NOT NULL)""")
    db.execute("""CREATE VIRTUAL TABLE memory_fts USING fts5(search_text, context_text, content='memory',
        content_rowid='seq', tokenize='unicode61 remove_diacritics 2')""")
    db.execute("INSERT INTO memory_fts(memory_fts) VALUES ('rebuild')")
    # `rank` (what keyword search orders by) weighs a neighbour's words half as much as the row's own.
    db.execute("INSERT INTO memory_fts(memory_fts, rank) VALUES ('rank', 'bm25(1.0, 0.5)')")
    db.execute("""CREATE TRIGGER memory_fts_ai AFTER INSERT ON memory BEGIN
        INSERT INTO memory_fts(rowid, search_text, context_text) VALUES (new.seq, new.search_text, new.context_text);
        END""")
    db.execute("""CREATE TRIGGER memory_fts_ad AFTER DELETE ON memory BEGIN
        INSERT INTO memory_fts(memory_fts, rowid, search_text, context_text)
        VALUES ('delete', old.seq, old.search_text, old.context_text); END""")
    db.execute("""CREATE TRIGGER memory_fts_au AFTER UPDATE OF search_text, context_text ON memory BEGIN
        INSERT INTO memory_fts(memory_fts, rowid, search_text, context_text)
        VALUES ('delete', old.seq, old.search_text, old.context_text);
        INSERT INTO memory_fts(rowid, search_text, context_text) VALUES (new.seq, new.search_text, new.context_text);
        END""")
    db.execute("CREATE VIRTUAL TABLE memory_fts_vocab USING fts5vocab(memory_fts, 'row')")


def m006_team_server(db: sqlite3.Connection) -> None:
    # The team server (ARCHITECTURE §13): a `team` for team-scoped rows, teams and their members, API keys
    # (only a hash of the secret), and the audit log. Shared rows get their own indexes: a viewer's
    # candidates are its own rows (the user indexes) OR team/public rows (these).
    db.execute("ALTER TABLE memory ADD COLUMN team TEXT NOT NULL DEFAULT ''")
    db.execute("CREATE INDEX memory_shared ON memory (privacy_scope, team, created_at) "
               "WHERE privacy_scope <> 'private'")
    # The vector cache of shared rows refreshes like the per-user one (by embed_gen).
    db.execute("CREATE INDEX memory_shared_vec ON memory (privacy_scope, team, embedding_model, embed_gen) "
               "WHERE privacy_scope <> 'private' AND embed_gen > 0")
    db.execute("""
        CREATE TABLE teams (
            name TEXT PRIMARY KEY,
            description TEXT NOT NULL DEFAULT '',
            created_at TEXT NOT NULL
        )""")
    db.execute("""
        CREATE TABLE team_members (
            team TEXT NOT NULL REFERENCES teams(name) ON DELETE CASCADE,
            user_id TEXT NOT NULL,
            source TEXT NOT NULL DEFAULT 'admin',   -- admin | key | claims
            added_at TEXT NOT NULL,
            PRIMARY KEY (team, user_id)
        )""")
    db.execute("CREATE INDEX team_members_user ON team_members (user_id)")
    db.execute("""
        CREATE TABLE api_keys (
            key_id TEXT PRIMARY KEY,
            secret_hash TEXT NOT NULL,
            user_id TEXT NOT NULL,
            name TEXT NOT NULL DEFAULT '',
            role TEXT NOT NULL CHECK (role IN ('viewer','editor','admin')),
            teams TEXT NOT NULL DEFAULT '[]',
            created_at TEXT NOT NULL,
            expires_at TEXT,
            revoked_at TEXT,
            last_used_at TEXT
        )""")
    db.execute("CREATE INDEX api_keys_user ON api_keys (user_id)")
    db.execute("""
        CREATE TABLE audit_log (
            id INTEGER PRIMARY KEY,
            ts TEXT NOT NULL,
            actor TEXT NOT NULL,                 -- the verified principal (the admin, when acting for someone)
            on_behalf TEXT NOT NULL DEFAULT '',  -- the user an admin acted for
            key_id TEXT NOT NULL DEFAULT '',
            via TEXT NOT NULL DEFAULT '',
            client TEXT NOT NULL DEFAULT '',
            action TEXT NOT NULL,
            outcome TEXT NOT NULL,
            memory_ids TEXT NOT NULL DEFAULT '[]',
            owners TEXT NOT NULL DEFAULT '[]',   -- whose memories a cross-user read returned
            detail TEXT NOT NULL DEFAULT '',
            remote TEXT NOT NULL DEFAULT ''
        )""")
    db.execute("CREATE INDEX audit_ts ON audit_log (ts)")
    db.execute("CREATE INDEX audit_actor ON audit_log (actor, ts)")


def m007_profile_status(db: sqlite3.Connection) -> None:
    # Profile promotion is a step of the cold path like tagging and embedding: a row whose facts could not be
    # read (an LLM outage) keeps `profile_status` pending and comes back to the librarian. Existing rows owe
    # nothing. The pending index covers the new step; its predicate is spelled the way the queries spell it
    # (SQLite matches partial-index predicates by their terms).
    db.execute(f"ALTER TABLE memory ADD COLUMN profile_status TEXT NOT NULL DEFAULT 'ok' "
               f"CHECK (profile_status IN {STATUS})")
    db.execute("DROP INDEX memory_pending")
    db.execute("CREATE INDEX memory_pending ON memory (created_at) "
               "WHERE (tag_status <> 'ok' OR profile_status <> 'ok') OR embed_status <> 'ok'")


def m008_browse_indexes(db: sqlite3.Connection) -> None:
    # The dashboard's archived/forgotten timelines, activity chart and filter menus (gieok.store.browse).
    for _, ddl in BROWSE_INDEXES:
        db.execute(ddl)


def m009_shown_count(db: sqlite3.Connection) -> None:
    # Appearing in search results is counted apart from explicit opens (view_count): ranking weighs a mere
    # appearance far less, so a memory is not made "used" by being shown.
    db.execute("ALTER TABLE memory ADD COLUMN shown_count INTEGER NOT NULL DEFAULT 0")
    db.execute("UPDATE memory SET shown_count = view_count, view_count = 0")


def m010_code_refs(db: sqlite3.Connection) -> None:
    # What memories say about code (gieok.store.code_refs): file anchors with their last staleness check, and
    # error fingerprints. Own tables, so the hot path's insert stays one row; rows go with their memory.
    db.execute("""
        CREATE TABLE memory_anchors (
            id INTEGER PRIMARY KEY,
            memory_id TEXT NOT NULL REFERENCES memory(id) ON DELETE CASCADE,
            repo_root TEXT NOT NULL DEFAULT '',
            repo_remote TEXT NOT NULL DEFAULT '',
            repo_name TEXT NOT NULL DEFAULT '',
            path TEXT NOT NULL,
            commit_id TEXT NOT NULL DEFAULT '',
            blob TEXT NOT NULL DEFAULT '',
            line_start INTEGER,
            line_end INTEGER,
            symbol TEXT NOT NULL DEFAULT '',
            via TEXT NOT NULL DEFAULT 'mention',
            status TEXT NOT NULL DEFAULT 'unchecked' CHECK (status IN
                ('unchecked','unchanged','changed','moved','deleted','unknown')),
            detail TEXT NOT NULL DEFAULT '',
            current_path TEXT NOT NULL DEFAULT '',
            checked_head TEXT NOT NULL DEFAULT '',
            checked_blob TEXT NOT NULL DEFAULT '',
            checked_at TEXT,
            UNIQUE (memory_id, repo_root, path)
        )""")
    db.execute("CREATE INDEX memory_anchors_repo ON memory_anchors (repo_root, id)")
    db.execute("CREATE INDEX memory_anchors_remote ON memory_anchors (repo_remote, id) WHERE repo_remote <> ''")
    db.execute("CREATE INDEX memory_anchors_stale ON memory_anchors (memory_id) "
               "WHERE status IN ('changed','moved','deleted')")
    db.execute("""
        CREATE TABLE memory_fingerprints (
            memory_id TEXT NOT NULL REFERENCES memory(id) ON DELETE CASCADE,
            digest TEXT NOT NULL,
            signature TEXT NOT NULL,
            language TEXT NOT NULL DEFAULT '',
            error_type TEXT NOT NULL DEFAULT '',
            message TEXT NOT NULL DEFAULT '',
            frames TEXT NOT NULL DEFAULT '[]',
            PRIMARY KEY (memory_id, digest)
        )""")
    db.execute("CREATE INDEX memory_fingerprints_digest ON memory_fingerprints (digest)")
    db.execute("CREATE INDEX memory_fingerprints_signature ON memory_fingerprints (signature)")


def m011_request_keys(db: sqlite3.Connection) -> None:
    # Idempotency-Key of POST /v1/messages: the ids a request stored, written in the same transaction as its
    # rows, so a retry after a timeout or a crash gets the same answer instead of a second copy.
    db.execute("""CREATE TABLE request_keys (user_id TEXT NOT NULL, key TEXT NOT NULL, fingerprint TEXT NOT NULL,
        result TEXT NOT NULL DEFAULT '[]', created_at TEXT NOT NULL, PRIMARY KEY (user_id, key))""")
    db.execute("CREATE INDEX request_keys_created ON request_keys (created_at)")



def m012_term_vectors(db: sqlite3.Connection) -> None:
    # Each user's English words with their vectors (gieok.retrieval.bridge): a Korean query word's nearest
    # English words join its full-text query. Appended only; `seq` lets a process load just what is new.
    db.execute("""CREATE TABLE term_vectors (seq INTEGER PRIMARY KEY AUTOINCREMENT, user_id TEXT NOT NULL,
        model TEXT NOT NULL, term TEXT NOT NULL, vector BLOB NOT NULL, UNIQUE (user_id, model, term))""")
    db.execute("CREATE INDEX term_vectors_user_seq ON term_vectors (user_id, model, seq)")


def m013_context_two_before(db: sqlite3.Connection) -> None:
    # A chat row's context now also holds the message two before it (gieok.store.context_sql): existing rows
    # get theirs here, as the librarian would write it; the FTS trigger reindexes the rows that change.
    db.execute(rebuild_contexts_sql(lambda c: f"substr({c}, -{CONTEXT_CHARS})",
                                    lambda c: f"substr({c}, 1, {CONTEXT_CHARS})"))


def m014_session_order(db: sqlite3.Connection) -> None:
    # As PostgreSQL's 014: the session index gains the id that breaks created_at ties, so a row's previous and
    # next messages are one index step away instead of a sort of the session's rows around it.
    db.execute("DROP INDEX IF EXISTS memory_session")
    db.execute("CREATE INDEX memory_session ON memory (user_id, session_id, created_at, id)")


def m015_document_tokens(db: sqlite3.Connection) -> None:
    # PostgreSQL's 015 stores each row's full-text length in tokens, which FTS5 counts for itself: nothing to do
    # here but keep the two backends' numbered steps the same.
    del db


def m016_archived_index(db: sqlite3.Connection) -> None:
    # A search that finds nothing active close asks the archive too, when the user has one (Store.has_archived):
    # answered from this small index rather than by reading every row of the user's.
    db.execute("CREATE INDEX memory_archived ON memory (user_id) WHERE is_active = 0 AND deleted_at IS NULL")


def m017_archived_shared_index(db: sqlite3.Connection) -> None:
    # The same for a teammate's search (Store.has_archived with a viewer): the team and public rows of the archive,
    # so that a viewer with no archived row of their own is answered by index lookups (one EXISTS per way a row is
    # visible), not by reading every archived row of every user.
    db.execute("CREATE INDEX memory_archived_shared ON memory (privacy_scope, team) "
               "WHERE is_active = 0 AND deleted_at IS NULL")


def m018_substring_index(db: sqlite3.Connection) -> None:
    # A needle inside a word ("Service" of RefundService, part of a path) is looked for with LIKE, which read
    # every row of the user's: 159 ms at 100,000 memories, the rows holding their vectors. The trigrams of each
    # row's content, without positions (detail=none: about as big as the text itself, 15 MB for 100,000 chat
    # turns), narrow it to the rows holding every trigram of the needle, which LIKE then checks (a one-piece
    # fallback at 100,000 memories: p95 251 → 30 ms, the whole search).
    db.execute("""CREATE VIRTUAL TABLE memory_trigrams USING fts5(content, content='memory', content_rowid='seq',
        tokenize='trigram', detail=none)""")
    db.execute("INSERT INTO memory_trigrams(memory_trigrams) VALUES ('rebuild')")
    db.execute("""CREATE TRIGGER memory_trigrams_ai AFTER INSERT ON memory BEGIN
        INSERT INTO memory_trigrams(rowid, content) VALUES (new.seq, new.content); END""")
    db.execute("""CREATE TRIGGER memory_trigrams_ad AFTER DELETE ON memory BEGIN
        INSERT INTO memory_trigrams(memory_trigrams, rowid, content) VALUES ('delete', old.seq, old.content); END""")
    db.execute("""CREATE TRIGGER memory_trigrams_au AFTER UPDATE OF content ON memory BEGIN
        INSERT INTO memory_trigrams(memory_trigrams, rowid, content) VALUES ('delete', old.seq, old.content);
        INSERT INTO memory_trigrams(rowid, content) VALUES (new.seq, new.content); END""")


MIGRATIONS: list[tuple[int, str, Callable[[sqlite3.Connection], None]]] = [
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

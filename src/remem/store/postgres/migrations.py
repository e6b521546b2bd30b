"""Forward-only migrations of the PostgreSQL engine, recorded in ``schema_migrations`` like SQLite's.

``p001_schema`` creates the schema SQLite reaches after its own m001–m010 (same tables and columns,
so the shared SQL of the areas runs on both), with PostgreSQL's types, identity columns, PL/pgSQL
triggers for what SQLite's triggers do (error signature rows, the vector delete log, plausible times,
forgetting a turn cascading into learned memories), the text index of ``store/postgres/text.py``
(remem's own tokens with their weighted counts: bm25 with real document frequencies) and pg_trgm
for substrings. Add a new function at the end; never edit an applied one.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .db import PgConnection

Migration = Callable[["PgConnection"], None]
MIGRATIONS: list[Migration] = []
migration = MIGRATIONS.append

# migrations run one at a time per database: several daemons may start at once
_LOCK_KEY = 0x72656D656D  # "remem"


def migrate(db: PgConnection, extra: Sequence[tuple[str, Migration]] = ()) -> list[str]:
    """Apply pending migrations in order (one transaction each, under an advisory lock), then ``extra``."""
    applied: list[str] = []
    with db.transaction():
        db.native("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
        db.native("CREATE TABLE IF NOT EXISTS schema_migrations (id BIGSERIAL PRIMARY KEY, "
                  "name TEXT NOT NULL UNIQUE, applied_at DOUBLE PRECISION NOT NULL)")
        done = {r[0] for r in db.native("SELECT name FROM schema_migrations")}
        for name, fn in [(f.__name__, f) for f in MIGRATIONS] + list(extra):
            if name in done:
                continue
            fn(db)
            db.native("INSERT INTO schema_migrations (name, applied_at) VALUES (%s, %s)", (name, time.time()))
            applied.append(name)
    return applied


def script(db: PgConnection, sql: str) -> None:
    """A multi-statement script in PostgreSQL syntax (no parameters)."""
    db.raw.execute(sql)  # type: ignore[arg-type]


_NOW = "extract(epoch from clock_timestamp())"


@migration
def p001_schema(db: PgConnection) -> None:
    script(db, """
    CREATE EXTENSION IF NOT EXISTS pg_trgm;

    -- SQLite's scalar functions that the SQL shared by both engines calls
    CREATE OR REPLACE FUNCTION max(a double precision, b double precision) RETURNS double precision
        LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT greatest(a, b) $$;
    CREATE OR REPLACE FUNCTION min(a double precision, b double precision) RETURNS double precision
        LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT least(a, b) $$;
    CREATE OR REPLACE FUNCTION instr(a text, b text) RETURNS integer
        LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT strpos(a, b) $$;
    CREATE OR REPLACE FUNCTION remem_concat(acc text, v text) RETURNS text
        LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT CASE WHEN acc IS NULL THEN v ELSE acc || ',' || v END $$;
    CREATE AGGREGATE group_concat(text) (SFUNC = remem_concat, STYPE = text);

    CREATE TABLE sources (
        name TEXT PRIMARY KEY, agent TEXT NOT NULL, path TEXT NOT NULL DEFAULT '',
        format TEXT NOT NULL DEFAULT '', status TEXT NOT NULL DEFAULT 'active',
        rules TEXT NOT NULL DEFAULT '{}', cursor DOUBLE PRECISION, baseline DOUBLE PRECISION,
        boundary DOUBLE PRECISION, last_scan_at DOUBLE PRECISION, last_sync_at DOUBLE PRECISION,
        last_result TEXT NOT NULL DEFAULT '{}', created_at DOUBLE PRECISION NOT NULL);
    CREATE TABLE checkpoints (
        source TEXT NOT NULL, unit TEXT NOT NULL, path TEXT NOT NULL DEFAULT '',
        size BIGINT, mtime DOUBLE PRECISION, last_ts DOUBLE PRECISION, last_msg_id TEXT, content_hash TEXT,
        updated_at DOUBLE PRECISION NOT NULL, PRIMARY KEY (source, unit));
    CREATE TABLE sessions (
        id TEXT PRIMARY KEY, owner TEXT NOT NULL, agent TEXT NOT NULL, project TEXT NOT NULL DEFAULT '',
        title TEXT NOT NULL DEFAULT '', started_at DOUBLE PRECISION, updated_at DOUBLE PRECISION,
        turn_count INTEGER NOT NULL DEFAULT 0);
    CREATE INDEX sessions_scope ON sessions(owner, agent, project);
    CREATE INDEX sessions_time ON sessions(owner, updated_at);

    CREATE TABLE turns (
        rowid BIGSERIAL PRIMARY KEY,
        id TEXT NOT NULL UNIQUE, source_key TEXT NOT NULL,
        owner TEXT NOT NULL, agent TEXT NOT NULL, project TEXT NOT NULL DEFAULT '',
        session_id TEXT NOT NULL DEFAULT '', source_name TEXT NOT NULL DEFAULT '',
        kind TEXT NOT NULL DEFAULT 'turn',
        request TEXT NOT NULL DEFAULT '', reply TEXT NOT NULL DEFAULT '', actions TEXT NOT NULL DEFAULT '',
        actions_json TEXT NOT NULL DEFAULT '[]',
        status TEXT NOT NULL DEFAULT 'succeeded' CHECK (status IN ('succeeded','failed','cancelled')),
        started_at DOUBLE PRECISION, ended_at DOUBLE PRECISION,
        created_at DOUBLE PRECISION NOT NULL, updated_at DOUBLE PRECISION NOT NULL,
        model TEXT NOT NULL DEFAULT '', size INTEGER NOT NULL DEFAULT 0,
        content_hash TEXT NOT NULL, request_hash TEXT NOT NULL DEFAULT '',
        summary TEXT NOT NULL DEFAULT '', tags TEXT NOT NULL DEFAULT '[]', error_sigs TEXT NOT NULL DEFAULT '[]',
        importance DOUBLE PRECISION NOT NULL DEFAULT 0.5, access_count INTEGER NOT NULL DEFAULT 0,
        last_access DOUBLE PRECISION, archived INTEGER NOT NULL DEFAULT 0, deleted INTEGER NOT NULL DEFAULT 0,
        cjk TEXT NOT NULL DEFAULT '', embed_state TEXT NOT NULL DEFAULT 'pending',
        trgm INTEGER NOT NULL DEFAULT 0,
        tlen INTEGER NOT NULL DEFAULT 0,        -- tokens in the word index (bm25 document length)
        tindexed INTEGER NOT NULL DEFAULT 0,    -- 1 once its words are in turn_terms
        UNIQUE (owner, source_key));
    CREATE INDEX turns_scope ON turns(owner, agent, project, ended_at);
    CREATE INDEX turns_session ON turns(session_id, started_at);
    CREATE INDEX turns_embed ON turns(embed_state);
    CREATE INDEX turns_trgm_todo ON turns(trgm) WHERE trgm = 0;
    CREATE INDEX turns_words_todo ON turns(tindexed) WHERE tindexed = 0;
    CREATE INDEX turns_reqhash ON turns(owner, agent, session_id, request_hash);
    CREATE INDEX turns_owner_time ON turns(owner, (coalesce(started_at, created_at)));
    -- substrings (pg_trgm; the cluster's UTF-8 locale lets it take trigrams of Chinese text)
    CREATE INDEX turns_trgm_request ON turns USING gin (request gin_trgm_ops);
    CREATE INDEX turns_trgm_actions ON turns USING gin (actions gin_trgm_ops);

    -- the word index: one row per (term, turn) with the bm25 column weights applied to its counts
    CREATE TABLE turn_terms (
        term TEXT NOT NULL,
        turn BIGINT NOT NULL REFERENCES turns(rowid) ON DELETE CASCADE,
        tf REAL NOT NULL,
        PRIMARY KEY (term, turn));
    CREATE INDEX turn_terms_turn ON turn_terms(turn);
    CREATE INDEX turn_terms_prefix ON turn_terms(term text_pattern_ops);

    CREATE TABLE messages (
        source TEXT NOT NULL, source_msg_id TEXT NOT NULL, owner TEXT NOT NULL,
        session_id TEXT NOT NULL DEFAULT '', turn_id TEXT REFERENCES turns(id) ON DELETE CASCADE,
        role TEXT NOT NULL DEFAULT '', ts DOUBLE PRECISION, PRIMARY KEY (source, source_msg_id));
    CREATE INDEX messages_turn ON messages(turn_id);

    CREATE TABLE embeddings (
        row_kind TEXT NOT NULL, row_id TEXT NOT NULL, field TEXT NOT NULL, model_id TEXT NOT NULL,
        dim INTEGER NOT NULL, vector BYTEA NOT NULL, content_hash TEXT NOT NULL,
        owner TEXT NOT NULL, agent TEXT NOT NULL DEFAULT '', project TEXT NOT NULL DEFAULT '',
        created_at DOUBLE PRECISION NOT NULL,
        rowid BIGSERIAL UNIQUE,                 -- last: the columns before it are SQLite's, in order
        PRIMARY KEY (row_kind, row_id, field, model_id));
    CREATE INDEX embeddings_model ON embeddings(model_id, field, owner);
    CREATE INDEX embeddings_created ON embeddings(model_id, field, created_at);
    CREATE TABLE embedding_deletes (
        seq BIGSERIAL PRIMARY KEY, row_kind TEXT NOT NULL, row_id TEXT NOT NULL, field TEXT NOT NULL,
        model_id TEXT NOT NULL);

    CREATE TABLE entities (
        id BIGSERIAL PRIMARY KEY, owner TEXT NOT NULL, kind TEXT NOT NULL, name TEXT NOT NULL,
        UNIQUE (owner, kind, name));
    CREATE TABLE entity_mentions (
        entity_id BIGINT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
        turn_id TEXT NOT NULL REFERENCES turns(id) ON DELETE CASCADE,
        owner TEXT NOT NULL, PRIMARY KEY (entity_id, turn_id));
    CREATE INDEX entity_mentions_turn ON entity_mentions(turn_id);
    CREATE TABLE entity_edges (
        owner TEXT NOT NULL,
        src BIGINT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
        dst BIGINT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
        weight DOUBLE PRECISION NOT NULL DEFAULT 1, PRIMARY KEY (owner, src, dst));

    CREATE TABLE audit (
        id BIGSERIAL PRIMARY KEY, ts DOUBLE PRECISION NOT NULL, action TEXT NOT NULL,
        owner TEXT NOT NULL DEFAULT '', target TEXT NOT NULL DEFAULT '', detail TEXT NOT NULL DEFAULT '{}');
    CREATE TABLE jobs (
        id BIGSERIAL PRIMARY KEY, kind TEXT NOT NULL, dedup_key TEXT UNIQUE,
        payload TEXT NOT NULL DEFAULT '{}', status TEXT NOT NULL DEFAULT 'queued',
        attempts INTEGER NOT NULL DEFAULT 0, run_after DOUBLE PRECISION NOT NULL DEFAULT 0,
        progress TEXT NOT NULL DEFAULT '{}', last_error TEXT NOT NULL DEFAULT '',
        created_at DOUBLE PRECISION NOT NULL, updated_at DOUBLE PRECISION NOT NULL);
    CREATE INDEX jobs_status ON jobs(status, run_after);

    CREATE TABLE turn_errors (
        sig TEXT NOT NULL, head TEXT NOT NULL,
        turn_id TEXT NOT NULL REFERENCES turns(id) ON DELETE CASCADE,
        owner TEXT NOT NULL, at DOUBLE PRECISION NOT NULL DEFAULT 0, PRIMARY KEY (sig, turn_id));
    CREATE INDEX turn_errors_turn ON turn_errors(turn_id);
    CREATE INDEX turn_errors_sig_at ON turn_errors(sig, at);
    CREATE INDEX turn_errors_head_at ON turn_errors(head, at);

    CREATE TABLE tombstones (
        id BIGSERIAL PRIMARY KEY, owner TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('turn','session','source')), key TEXT NOT NULL,
        turn_id TEXT NOT NULL DEFAULT '', agent TEXT NOT NULL DEFAULT '', session_id TEXT NOT NULL DEFAULT '',
        request_hash TEXT NOT NULL DEFAULT '', source_name TEXT NOT NULL DEFAULT '',
        until DOUBLE PRECISION, created_at DOUBLE PRECISION NOT NULL, UNIQUE (owner, kind, key));
    CREATE INDEX tombstones_twin ON tombstones(owner, session_id, request_hash) WHERE kind = 'turn';
    CREATE INDEX tombstones_turn_id ON tombstones(turn_id) WHERE kind = 'turn';

    CREATE TABLE learned (
        owner TEXT NOT NULL, id TEXT NOT NULL, project TEXT NOT NULL DEFAULT '',
        layer TEXT NOT NULL DEFAULT 'L2' CHECK (layer IN ('L2','L3')), kind TEXT NOT NULL,
        slot TEXT NOT NULL DEFAULT '', value TEXT NOT NULL DEFAULT '', text TEXT NOT NULL DEFAULT '',
        status TEXT NOT NULL DEFAULT 'candidate'
            CHECK (status IN ('candidate','active','superseded','archived','rejected')),
        confidence DOUBLE PRECISION NOT NULL DEFAULT 0, support_sessions INTEGER NOT NULL DEFAULT 0,
        support_turns INTEGER NOT NULL DEFAULT 0, locked INTEGER NOT NULL DEFAULT 0,
        edited INTEGER NOT NULL DEFAULT 0, decided TEXT NOT NULL DEFAULT '', polarity INTEGER NOT NULL DEFAULT 1,
        scope TEXT NOT NULL DEFAULT 'project', data TEXT NOT NULL DEFAULT '{}', stale INTEGER NOT NULL DEFAULT 0,
        created_at DOUBLE PRECISION NOT NULL, updated_at DOUBLE PRECISION NOT NULL,
        superseded_by TEXT NOT NULL DEFAULT '', PRIMARY KEY (owner, id));
    CREATE INDEX learned_scope ON learned(owner, project, status, kind);
    CREATE INDEX learned_stale ON learned(owner, stale);
    CREATE TABLE learned_evidence (
        owner TEXT NOT NULL, learned_id TEXT NOT NULL, turn_id TEXT NOT NULL,
        session_id TEXT NOT NULL DEFAULT '', against INTEGER NOT NULL DEFAULT 0, pos INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (owner, learned_id, turn_id));
    CREATE INDEX learned_evidence_turn ON learned_evidence(turn_id);
    CREATE TABLE learned_events (
        id BIGSERIAL PRIMARY KEY, owner TEXT NOT NULL, learned_id TEXT NOT NULL, ts DOUBLE PRECISION NOT NULL,
        action TEXT NOT NULL, before_json TEXT, after_json TEXT, actor TEXT NOT NULL DEFAULT 'learner');
    CREATE INDEX learned_events_memory ON learned_events(owner, learned_id, id);
    CREATE TABLE learned_cursor (
        owner TEXT NOT NULL, project TEXT NOT NULL, turns INTEGER NOT NULL DEFAULT 0,
        last_rowid BIGINT NOT NULL DEFAULT 0, last_update DOUBLE PRECISION NOT NULL DEFAULT 0,
        learned_at DOUBLE PRECISION NOT NULL DEFAULT 0, dirty INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (owner, project));
    """)
    script(db, _TRIGGERS)


_TRIGGERS = f"""
-- error signatures as rows (the structural channel), kept in step with turns.error_sigs
CREATE FUNCTION remem_turn_errors() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        IF NEW.error_sigs IS NOT DISTINCT FROM OLD.error_sigs THEN
            IF NEW.error_sigs <> '[]' AND (NEW.ended_at IS DISTINCT FROM OLD.ended_at
                                           OR NEW.created_at IS DISTINCT FROM OLD.created_at) THEN
                UPDATE turn_errors SET at = coalesce(NEW.ended_at, NEW.created_at) WHERE turn_id = NEW.id;
            END IF;
            RETURN NULL;
        END IF;
        DELETE FROM turn_errors WHERE turn_id = OLD.id;
    END IF;
    IF NEW.error_sigs <> '[]' THEN
        INSERT INTO turn_errors (sig, head, turn_id, owner, at)
            SELECT v, trim(split_part(v, ':', 1)), NEW.id, NEW.owner, coalesce(NEW.ended_at, NEW.created_at)
            FROM jsonb_array_elements_text(NEW.error_sigs::jsonb) AS v
        ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER turn_errors_sync AFTER INSERT OR UPDATE ON turns FOR EACH ROW EXECUTE FUNCTION remem_turn_errors();

-- what the in-memory vector index must drop (it reads the log from its last position)
CREATE FUNCTION remem_embedding_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO embedding_deletes (row_kind, row_id, field, model_id)
        VALUES (OLD.row_kind, OLD.row_id, OLD.field, OLD.model_id);
    RETURN NULL;
END $$;
CREATE TRIGGER embeddings_ad AFTER DELETE ON embeddings FOR EACH ROW EXECUTE FUNCTION remem_embedding_deleted();
CREATE FUNCTION remem_embedding_deletes_trim() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM embedding_deletes WHERE seq < (SELECT max(seq) FROM embedding_deletes) - 100000;
    RETURN NULL;
END $$;
CREATE TRIGGER embeddings_ad_trim AFTER DELETE ON embeddings FOR EACH STATEMENT
    EXECUTE FUNCTION remem_embedding_deletes_trim();

-- plausible times in the database itself (as SQLite's m008): a time before 2000 or more than a
-- day ahead is replaced, never stored
CREATE FUNCTION remem_bad_time(t double precision) RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT t IS NOT NULL AND (t = 'NaN'::float8 OR t < 946684800 OR t > {_NOW} + 86400) $$;
CREATE FUNCTION remem_turn_times() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    now_s double precision := {_NOW};
    created double precision;
    bad_start boolean := remem_bad_time(NEW.started_at);
    bad_end boolean := remem_bad_time(NEW.ended_at);
BEGIN
    created := CASE WHEN NEW.created_at IS NULL OR remem_bad_time(NEW.created_at) THEN now_s ELSE NEW.created_at END;
    IF bad_start THEN
        NEW.started_at := CASE WHEN bad_end THEN created ELSE NEW.ended_at END;
    END IF;
    IF bad_end THEN
        NEW.ended_at := CASE WHEN bad_start THEN created ELSE NEW.started_at END;
    END IF;
    NEW.created_at := created;
    IF NEW.updated_at IS NULL OR remem_bad_time(NEW.updated_at) THEN NEW.updated_at := now_s; END IF;
    IF remem_bad_time(NEW.last_access) THEN NEW.last_access := NULL; END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER turns_times BEFORE INSERT OR UPDATE ON turns FOR EACH ROW EXECUTE FUNCTION remem_turn_times();
CREATE FUNCTION remem_session_times() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF remem_bad_time(NEW.started_at) THEN NEW.started_at := NULL; END IF;
    IF remem_bad_time(NEW.updated_at) THEN NEW.updated_at := NULL; END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER sessions_times BEFORE INSERT OR UPDATE ON sessions FOR EACH ROW
    EXECUTE FUNCTION remem_session_times();

-- forgetting a turn: learned memories lose it as evidence; what only it supported goes, what a user
-- decided keeps the decision without the text (SQLite's m009 trigger, step by step)
CREATE FUNCTION remem_learned_turn_forgotten() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM learned_evidence WHERE turn_id = OLD.id) THEN
        RETURN NULL;
    END IF;
    UPDATE learned SET stale = 1 WHERE owner = OLD.owner AND id IN
        (SELECT learned_id FROM learned_evidence WHERE owner = OLD.owner AND turn_id = OLD.id);
    DELETE FROM learned_evidence WHERE owner = OLD.owner AND turn_id = OLD.id;
    DELETE FROM learned_events WHERE owner = OLD.owner AND learned_id IN
        (SELECT id FROM learned WHERE owner = OLD.owner AND stale = 1);
    INSERT INTO learned_events (owner, learned_id, ts, action, before_json, after_json, actor)
        SELECT owner, id, {_NOW}, 'forgotten',
               json_build_object('reason', 'an evidence turn was forgotten', 'kind', kind, 'status', status)::text,
               NULL, 'forget'
        FROM learned WHERE owner = OLD.owner AND stale = 1;
    UPDATE learned SET stale = 3 WHERE owner = OLD.owner AND stale = 1 AND (
        (locked = 0 AND decided = '') OR NOT EXISTS (SELECT 1 FROM learned_evidence e
            WHERE e.owner = learned.owner AND e.learned_id = learned.id AND e.against = 0));
    DELETE FROM learned_evidence WHERE owner = OLD.owner AND learned_id IN
        (SELECT id FROM learned WHERE owner = OLD.owner AND stale = 3);
    DELETE FROM learned WHERE owner = OLD.owner AND stale = 3;
    UPDATE learned SET text = CASE WHEN edited = 1 THEN text ELSE '' END, stale = 2,
        data = json_build_object('decided_on', coalesce(data::jsonb -> 'decided_on', '[]'::jsonb))::text
        WHERE owner = OLD.owner AND stale = 1;
    INSERT INTO learned_cursor (owner, project, dirty) VALUES (OLD.owner, OLD.project, 1)
        ON CONFLICT (owner, project) DO UPDATE SET dirty = 1;
    RETURN NULL;
END $$;
CREATE TRIGGER learned_turn_forgotten AFTER DELETE ON turns FOR EACH ROW
    EXECUTE FUNCTION remem_learned_turn_forgotten();
"""


@migration
def p002_packets(db: PgConnection) -> None:
    """What each packet handed to an agent contained (SQLite's m011_packets)."""
    script(db, """
    CREATE TABLE packets (
        id BIGSERIAL PRIMARY KEY, owner TEXT NOT NULL, project TEXT NOT NULL DEFAULT '',
        agent TEXT NOT NULL DEFAULT '', session_id TEXT NOT NULL DEFAULT '', entry TEXT NOT NULL,
        prompt_hash TEXT NOT NULL DEFAULT '', turn_ids TEXT NOT NULL DEFAULT '[]',
        learned_ids TEXT NOT NULL DEFAULT '[]', created_at DOUBLE PRECISION NOT NULL,
        outcome TEXT NOT NULL DEFAULT '', turn_id TEXT NOT NULL DEFAULT '', judged_at DOUBLE PRECISION,
        votes TEXT NOT NULL DEFAULT '{}');
    CREATE INDEX packets_owner_time ON packets(owner, created_at);
    CREATE INDEX packets_open ON packets(owner, project, judged_at);
    """)


@migration
def p003_pgvector(db: PgConnection) -> None:
    """Vectors as pgvector's ``vector`` (``embeddings.vec``), searched in SQL through HNSW indexes
    (``store/postgres/vectors.py``); the bytes SQLite keeps move over and their column stays empty."""
    from ..errors import StoreError
    from .vectors import NEEDS_PGVECTOR, ensure_index, register, to_vector

    try:
        with db.raw.transaction():  # a savepoint: the reason survives a missing extension
            db.native("CREATE EXTENSION IF NOT EXISTS vector")
    except StoreError as e:
        raise StoreError(f"{NEEDS_PGVECTOR} ({e})") from None
    db.native("ALTER TABLE embeddings ADD COLUMN IF NOT EXISTS vec vector")
    register(db)
    while True:
        rows = db.native("SELECT rowid, dim, vector FROM embeddings WHERE vec IS NULL AND length(vector) > 0 "
                         "ORDER BY rowid LIMIT 2000").fetchall()
        if not rows:
            break
        db.raw.cursor().executemany("UPDATE embeddings SET vec = %s, vector = ''::bytea WHERE rowid = %s",
                                    [(to_vector(bytes(v)), rid) for rid, _dim, v in rows])
    for model_id, field, dim in db.native("SELECT DISTINCT model_id, field, dim FROM embeddings").fetchall():
        ensure_index(db, model_id, field, int(dim))


@migration
def p004_retention(db: PgConnection) -> None:
    """A learned memory may be soft-deleted: status ``deleted`` (SQLite's m012_retention)."""
    script(db, """
    ALTER TABLE learned DROP CONSTRAINT IF EXISTS learned_status_check;
    ALTER TABLE learned ADD CONSTRAINT learned_status_check
        CHECK (status IN ('candidate','active','superseded','archived','rejected','deleted'));
    """)


@migration
def p006_team(db: PgConnection) -> None:
    """The server's users, their token hashes and teams (SQLite's m014_team)."""
    script(db, """
    CREATE TABLE users (name TEXT PRIMARY KEY, created_at DOUBLE PRECISION NOT NULL);
    CREATE TABLE user_tokens (
        token_hash TEXT PRIMARY KEY, session_hash TEXT NOT NULL UNIQUE,
        user_name TEXT NOT NULL REFERENCES users(name), created_at DOUBLE PRECISION NOT NULL);
    CREATE INDEX user_tokens_user ON user_tokens(user_name);
    CREATE TABLE teams (name TEXT PRIMARY KEY, created_at DOUBLE PRECISION NOT NULL);
    CREATE TABLE team_members (
        team TEXT NOT NULL REFERENCES teams(name), user_name TEXT NOT NULL REFERENCES users(name),
        added_at DOUBLE PRECISION NOT NULL, PRIMARY KEY (team, user_name));
    CREATE INDEX team_members_user ON team_members(user_name);
    """)


@migration
def p009_sync_order(db: PgConnection) -> None:
    """Team sync pages an owner's turns by (updated_at, id) (SQLite's m017_sync_order)."""
    script(db, "CREATE INDEX IF NOT EXISTS turns_owner_changed ON turns(owner, updated_at, id);")


@migration
def p010_term_doc_lengths(db: PgConnection) -> None:
    """Each word row carries its turn's length (``turn_terms.dl``, the turn's ``tlen``): bm25 ranks the
    matches from the word rows alone and checks the scope of the best few after, as SQLite's
    ``_fts_first`` does (joining every match with its turn read the whole turns table). The primary
    key carries ``tf`` and ``dl`` (INCLUDE): a term's rows are read from the index alone (13 → 4 ms for
    a three-word query at 10k turns), with no second index to keep up."""
    script(db, """
    ALTER TABLE turn_terms ADD COLUMN dl INTEGER NOT NULL DEFAULT 0;
    UPDATE turn_terms tt SET dl = t.tlen FROM turns t WHERE t.rowid = tt.turn AND t.tlen <> 0;
    ALTER TABLE turn_terms DROP CONSTRAINT turn_terms_pkey;
    ALTER TABLE turn_terms ADD CONSTRAINT turn_terms_pkey PRIMARY KEY (term, turn) INCLUDE (tf, dl);
    """)


@migration
def p011_turn_time_order(db: PgConnection) -> None:
    """Recall reads an owner's turns newest first by their end time (SQLite's m018_turn_read_indexes;
    its id → scope index is SQLite's alone: PostgreSQL keeps long texts out of line (TOAST), so a row's
    small columns are read without them)."""
    script(db, "CREATE INDEX IF NOT EXISTS turns_owner_ended ON turns(owner, (coalesce(ended_at, started_at, created_at)));")


@migration
def p012_learner_version(db: PgConnection) -> None:
    """The learner that wrote a project's learn cursor (SQLite's m019_learner_version)."""
    script(db, "ALTER TABLE learned_cursor ADD COLUMN IF NOT EXISTS learner TEXT NOT NULL DEFAULT '';")

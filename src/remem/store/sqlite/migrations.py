"""Forward-only migrations: ordered functions, one transaction each, recorded in a table.

Add a new ``@migration`` function at the end; never edit or remove an applied one and
never drop data.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Sequence

from .db import script, transaction
from .schema_v1 import CORE

Migration = Callable[[sqlite3.Connection], None]
MIGRATIONS: list[Migration] = []
migration = MIGRATIONS.append

_FTS_COLS = "request, reply, actions, summary"


@migration
def m001_core(db: sqlite3.Connection) -> None:
    script(db, CORE)
    script(
        db,
        f"""
        CREATE VIRTUAL TABLE turns_fts USING fts5({_FTS_COLS}, cjk,
            content='turns', content_rowid='rowid', tokenize='unicode61 remove_diacritics 2');
        CREATE VIRTUAL TABLE turns_trgm USING fts5(request, actions,
            content='turns', content_rowid='rowid', tokenize='trigram');
        -- the word index follows every write; the trigram index (costly on write) is filled by a
        -- background index job (turns.trgm = 1 once indexed), so imports stay fast
        CREATE TRIGGER turns_ai AFTER INSERT ON turns BEGIN
            INSERT INTO turns_fts(rowid, {_FTS_COLS}, cjk)
                VALUES (new.rowid, new.request, new.reply, new.actions, new.summary, new.cjk);
        END;
        CREATE TRIGGER turns_ad AFTER DELETE ON turns BEGIN
            INSERT INTO turns_fts(turns_fts, rowid, {_FTS_COLS}, cjk)
                VALUES ('delete', old.rowid, old.request, old.reply, old.actions, old.summary, old.cjk);
        END;
        CREATE TRIGGER turns_ad_trgm AFTER DELETE ON turns WHEN old.trgm = 1 BEGIN
            INSERT INTO turns_trgm(turns_trgm, rowid, request, actions)
                VALUES ('delete', old.rowid, old.request, old.actions);
        END;
        CREATE TRIGGER turns_au AFTER UPDATE OF request, reply, actions, summary, cjk ON turns BEGIN
            INSERT INTO turns_fts(turns_fts, rowid, {_FTS_COLS}, cjk)
                VALUES ('delete', old.rowid, old.request, old.reply, old.actions, old.summary, old.cjk);
            INSERT INTO turns_fts(rowid, {_FTS_COLS}, cjk)
                VALUES (new.rowid, new.request, new.reply, new.actions, new.summary, new.cjk);
        END;
        CREATE TRIGGER turns_au_trgm AFTER UPDATE OF request, actions ON turns WHEN old.trgm = 1 BEGIN
            INSERT INTO turns_trgm(turns_trgm, rowid, request, actions)
                VALUES ('delete', old.rowid, old.request, old.actions);
            UPDATE turns SET trgm = 0 WHERE rowid = new.rowid;
        END;
        """
    )
    script(
        db,
        """
        CREATE TABLE memories (                -- L2 distilled, L3 world model, skills
            rowid INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            owner TEXT NOT NULL, agent TEXT NOT NULL DEFAULT '', project TEXT NOT NULL DEFAULT '',
            layer TEXT NOT NULL DEFAULT 'L2' CHECK (layer IN ('L2','L3','skill')),
            kind TEXT NOT NULL,                  -- fact | preference | procedure | world | skill
            text TEXT NOT NULL,
            confidence REAL NOT NULL DEFAULT 0.5,
            status TEXT NOT NULL DEFAULT 'active',  -- active | superseded | archived
            eta REAL,                            -- skills: reliability
            content_hash TEXT NOT NULL,
            cjk TEXT NOT NULL DEFAULT '',
            created_at REAL NOT NULL, updated_at REAL NOT NULL,
            UNIQUE (owner, content_hash)
        );
        CREATE INDEX memories_scope ON memories(owner, agent, project, kind);
        CREATE TABLE memory_links (            -- provenance: which turns a memory came from
            memory_id TEXT NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
            turn_id TEXT NOT NULL REFERENCES turns(id) ON DELETE CASCADE,
            PRIMARY KEY (memory_id, turn_id)
        ) WITHOUT ROWID;
        CREATE INDEX memory_links_turn ON memory_links(turn_id);
        CREATE VIRTUAL TABLE memories_fts USING fts5(text, cjk,
            content='memories', content_rowid='rowid', tokenize='unicode61 remove_diacritics 2');
        CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
            INSERT INTO memories_fts(rowid, text, cjk) VALUES (new.rowid, new.text, new.cjk);
        END;
        CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, text, cjk)
                VALUES ('delete', old.rowid, old.text, old.cjk);
        END;
        CREATE TRIGGER memories_au AFTER UPDATE OF text, cjk ON memories BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, text, cjk)
                VALUES ('delete', old.rowid, old.text, old.cjk);
            INSERT INTO memories_fts(rowid, text, cjk) VALUES (new.rowid, new.text, new.cjk);
        END;

        CREATE TABLE embeddings (
            row_kind TEXT NOT NULL,              -- turn | memory
            row_id TEXT NOT NULL,
            field TEXT NOT NULL,                 -- summary | actions | text
            model_id TEXT NOT NULL,
            dim INTEGER NOT NULL,
            vector BLOB NOT NULL,                -- float32 little endian
            content_hash TEXT NOT NULL,
            owner TEXT NOT NULL, agent TEXT NOT NULL DEFAULT '', project TEXT NOT NULL DEFAULT '',
            created_at REAL NOT NULL,
            PRIMARY KEY (row_kind, row_id, field, model_id)
        );
        CREATE INDEX embeddings_model ON embeddings(model_id, field, owner);

        CREATE TABLE entities (
            id INTEGER PRIMARY KEY,
            owner TEXT NOT NULL,
            kind TEXT NOT NULL,                  -- path | symbol | package | command | error | name
            name TEXT NOT NULL,
            UNIQUE (owner, kind, name)
        );
        CREATE TABLE entity_mentions (
            entity_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
            turn_id TEXT NOT NULL REFERENCES turns(id) ON DELETE CASCADE,
            owner TEXT NOT NULL,
            PRIMARY KEY (entity_id, turn_id)
        ) WITHOUT ROWID;
        CREATE INDEX entity_mentions_turn ON entity_mentions(turn_id);
        CREATE TABLE entity_edges (             -- co-occurrence
            owner TEXT NOT NULL,
            src INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
            dst INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
            weight REAL NOT NULL DEFAULT 1,
            PRIMARY KEY (owner, src, dst)
        ) WITHOUT ROWID;

        CREATE TABLE audit (
            id INTEGER PRIMARY KEY,
            ts REAL NOT NULL,
            action TEXT NOT NULL,
            owner TEXT NOT NULL DEFAULT '',
            target TEXT NOT NULL DEFAULT '',
            detail TEXT NOT NULL DEFAULT '{}'
        );
        CREATE TABLE jobs (
            id INTEGER PRIMARY KEY,
            kind TEXT NOT NULL,                  -- sync | embed | ...
            dedup_key TEXT UNIQUE,               -- one queued job per key
            payload TEXT NOT NULL DEFAULT '{}',
            status TEXT NOT NULL DEFAULT 'queued',  -- queued | running | paused | done | failed | stopped
            attempts INTEGER NOT NULL DEFAULT 0,
            run_after REAL NOT NULL DEFAULT 0,
            progress TEXT NOT NULL DEFAULT '{}',
            last_error TEXT NOT NULL DEFAULT '',
            created_at REAL NOT NULL, updated_at REAL NOT NULL
        );
        CREATE INDEX jobs_status ON jobs(status, run_after);
        """
    )


def migrate(db: sqlite3.Connection, extra: Sequence[tuple[str, Migration]] = ()) -> list[str]:
    """Apply pending migrations in order, then ``extra`` ((recorded name, function): a plugin layer's
    own steps, named ``"<layer>:<function>"``); returns the names applied now."""
    db.execute("CREATE TABLE IF NOT EXISTS schema_migrations (id INTEGER PRIMARY KEY, "
               "name TEXT NOT NULL UNIQUE, applied_at REAL NOT NULL)")
    done = {r[0] for r in db.execute("SELECT name FROM schema_migrations")}
    applied = []
    steps: list[tuple[str, Migration, int | None]] = [(fn.__name__, fn, i) for i, fn in enumerate(MIGRATIONS, start=1)]
    steps += [(name, fn, None) for name, fn in extra]
    for name, fn, i in steps:
        if name in done:
            continue
        with transaction(db):
            # re-check inside the write lock: another process may have migrated meanwhile
            if db.execute("SELECT 1 FROM schema_migrations WHERE name = ?", (name,)).fetchone():
                continue
            fn(db)
            db.execute("INSERT INTO schema_migrations(id, name, applied_at) VALUES (?,?,?)",
                       (i, name, time.time()))
        applied.append(name)
    return applied


@migration
def m002_recall_indexes(db: sqlite3.Connection) -> None:
    """Recall: error signatures as rows (structural channel), and change tracking for the
    in-memory vector index (new/updated vectors by time, deletions by a small log)."""
    script(
        db,
        """
        CREATE TABLE turn_errors (              -- one row per error signature of a turn
            sig TEXT NOT NULL,
            head TEXT NOT NULL,                 -- the error type: text before the first ':'
            turn_id TEXT NOT NULL REFERENCES turns(id) ON DELETE CASCADE,
            owner TEXT NOT NULL,
            PRIMARY KEY (sig, turn_id)
        ) WITHOUT ROWID;
        CREATE INDEX turn_errors_head ON turn_errors(head);
        CREATE INDEX turn_errors_turn ON turn_errors(turn_id);
        CREATE TRIGGER turn_errors_ai AFTER INSERT ON turns WHEN new.error_sigs != '[]' BEGIN
            INSERT OR IGNORE INTO turn_errors (sig, head, turn_id, owner)
                SELECT value, trim(substr(value, 1, instr(value || ':', ':') - 1)), new.id, new.owner
                FROM json_each(new.error_sigs);
        END;
        CREATE TRIGGER turn_errors_au AFTER UPDATE OF error_sigs ON turns BEGIN
            DELETE FROM turn_errors WHERE turn_id = old.id;
            INSERT OR IGNORE INTO turn_errors (sig, head, turn_id, owner)
                SELECT value, trim(substr(value, 1, instr(value || ':', ':') - 1)), new.id, new.owner
                FROM json_each(new.error_sigs);
        END;
        CREATE TRIGGER turn_errors_ad AFTER DELETE ON turns BEGIN
            DELETE FROM turn_errors WHERE turn_id = old.id;
        END;
        INSERT OR IGNORE INTO turn_errors (sig, head, turn_id, owner)
            SELECT j.value, trim(substr(j.value, 1, instr(j.value || ':', ':') - 1)), t.id, t.owner
            FROM turns t, json_each(t.error_sigs) j WHERE t.error_sigs != '[]';

        CREATE INDEX embeddings_created ON embeddings(model_id, field, created_at);
        CREATE TABLE embedding_deletes (        -- deleted vectors, for in-memory index refresh
            seq INTEGER PRIMARY KEY,
            row_kind TEXT NOT NULL, row_id TEXT NOT NULL, field TEXT NOT NULL, model_id TEXT NOT NULL
        );
        CREATE TRIGGER embeddings_ad AFTER DELETE ON embeddings BEGIN
            INSERT INTO embedding_deletes (row_kind, row_id, field, model_id)
                VALUES (old.row_kind, old.row_id, old.field, old.model_id);
            DELETE FROM embedding_deletes WHERE seq < (SELECT max(seq) FROM embedding_deletes) - 100000;
        END;
        """
    )


@migration
def m003_time_order(db: sqlite3.Connection) -> None:
    """Lists are newest first by start time: index that order instead of sorting every row."""
    script(
        db,
        """
        CREATE INDEX turns_owner_time ON turns(owner, coalesce(started_at, created_at));
        CREATE INDEX sessions_time ON sessions(owner, updated_at);
        """
    )


@migration
def m004_fts_vocabulary(db: sqlite3.Connection) -> None:
    """Document frequency per word (read-only view over turns_fts): recall leaves out words
    that occur in most turns, which cost bm25 the most and rank the least."""
    db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS turns_fts_vocab USING fts5vocab(turns_fts, 'row')")


@migration
def m005_fts_automerge(db: sqlite3.Connection) -> None:
    """Merge FTS segments in larger steps: fewer merges per bulk insert (measured ~10–20 % faster
    imports, src/remem/bench/write_throughput.py), queries unaffected once the index settles."""
    db.execute("INSERT INTO turns_fts(turns_fts, rank) VALUES ('automerge', 8)")


@migration
def m006_error_time(db: sqlite3.Connection) -> None:
    """Error signatures carry their turn's time, indexed by signature and by error type, so
    "the same error before" reads the newest matches from the index instead of joining and
    sorting every turn that ever had that error (a common error type has thousands)."""
    script(
        db,
        """
        ALTER TABLE turn_errors ADD COLUMN at REAL NOT NULL DEFAULT 0;
        UPDATE turn_errors SET at = coalesce(
            (SELECT coalesce(t.ended_at, t.created_at) FROM turns t WHERE t.id = turn_errors.turn_id), 0);
        DROP INDEX turn_errors_head;
        CREATE INDEX turn_errors_sig_at ON turn_errors(sig, at);
        CREATE INDEX turn_errors_head_at ON turn_errors(head, at);
        DROP TRIGGER turn_errors_ai;
        DROP TRIGGER turn_errors_au;
        CREATE TRIGGER turn_errors_ai AFTER INSERT ON turns WHEN new.error_sigs != '[]' BEGIN
            INSERT OR IGNORE INTO turn_errors (sig, head, turn_id, owner, at)
                SELECT value, trim(substr(value, 1, instr(value || ':', ':') - 1)), new.id, new.owner,
                       coalesce(new.ended_at, new.created_at)
                FROM json_each(new.error_sigs);
        END;
        CREATE TRIGGER turn_errors_au AFTER UPDATE OF error_sigs ON turns BEGIN
            DELETE FROM turn_errors WHERE turn_id = old.id;
            INSERT OR IGNORE INTO turn_errors (sig, head, turn_id, owner, at)
                SELECT value, trim(substr(value, 1, instr(value || ':', ':') - 1)), new.id, new.owner,
                       coalesce(new.ended_at, new.created_at)
                FROM json_each(new.error_sigs);
        END;
        CREATE TRIGGER turn_errors_time AFTER UPDATE OF ended_at, created_at ON turns
        WHEN new.error_sigs != '[]' BEGIN
            UPDATE turn_errors SET at = coalesce(new.ended_at, new.created_at) WHERE turn_id = new.id;
        END;
        """
    )


@migration
def m007_tombstones(db: sqlite3.Connection) -> None:
    """What the user forgot stays forgotten: one row per forgotten turn, session or source, checked
    by the write pipeline for every writer (store/tombstones.py). Keys and hashes only, no text."""
    script(
        db,
        """
        CREATE TABLE tombstones (
            id INTEGER PRIMARY KEY,
            owner TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('turn','session','source')),
            key TEXT NOT NULL,                   -- turn: its source key; session: its id; source: name or agent
            turn_id TEXT NOT NULL DEFAULT '',    -- turn: the id it had (remem forget --undo ID)
            agent TEXT NOT NULL DEFAULT '',
            session_id TEXT NOT NULL DEFAULT '',
            request_hash TEXT NOT NULL DEFAULT '',  -- turn: its live capture / imported twin too
            source_name TEXT NOT NULL DEFAULT '',
            until REAL,                          -- source: keeps out turns that started up to this time
            created_at REAL NOT NULL,
            UNIQUE (owner, kind, key)
        );
        CREATE INDEX tombstones_twin ON tombstones(owner, session_id, request_hash) WHERE kind = 'turn';
        CREATE INDEX tombstones_turn_id ON tombstones(turn_id) WHERE kind = 'turn';
        """
    )


# a stored time is plausible when it is a finite number between 2000-01-01 and a day from now
_BAD_TIME = ("(typeof({c}) NOT IN ('integer','real') OR {c} < 946684800 "
             "OR {c} > (julianday('now') - 2440587.5) * 86400.0 + 86400)")
_NOW = "((julianday('now') - 2440587.5) * 86400.0)"


def _bad(col: str, nullable: bool = True) -> str:
    cond = _BAD_TIME.format(c=col)
    return f"({col} IS NOT NULL AND {cond})" if nullable else cond


def _time_repair(prefix: str) -> str:
    """SET clause replacing implausible times of a turns row (``prefix`` is '' or 'new.')."""
    p = prefix
    created = f"CASE WHEN {_bad(p + 'created_at', False)} THEN {_NOW} ELSE {p}created_at END"
    return (f"created_at = {created}, "
            f"updated_at = CASE WHEN {_bad(p + 'updated_at', False)} THEN {_NOW} ELSE {p}updated_at END, "
            f"started_at = CASE WHEN {_bad(p + 'started_at')} THEN "
            f"  CASE WHEN {_bad(p + 'ended_at')} THEN {created} ELSE {p}ended_at END ELSE {p}started_at END, "
            f"ended_at = CASE WHEN {_bad(p + 'ended_at')} THEN "
            f"  CASE WHEN {_bad(p + 'started_at')} THEN {created} ELSE {p}started_at END ELSE {p}ended_at END, "
            f"last_access = CASE WHEN {_bad(p + 'last_access')} THEN NULL ELSE {p}last_access END")


def _any_bad(prefix: str) -> str:
    p = prefix
    return " OR ".join([_bad(p + "created_at", False), _bad(p + "updated_at", False), _bad(p + "started_at"),
                        _bad(p + "ended_at"), _bad(p + "last_access")])


@migration
def m008_plausible_times(db: sqlite3.Connection) -> None:
    """Times are plausible in the database itself: rows an older version stored with 1e24, -1e308 or
    'yesterday' (which made every search and recall of their owner raise) get the turn's other time
    or its write time, and triggers repair any later write the same way, whoever makes it. The
    write pipeline already replaces such times (and counts them); this is the floor under it."""
    db.execute(f"UPDATE turns SET {_time_repair('')} WHERE {_any_bad('')}")
    db.execute(f"UPDATE sessions SET started_at = CASE WHEN {_bad('started_at')} THEN NULL ELSE started_at END, "
               f"updated_at = CASE WHEN {_bad('updated_at')} THEN NULL ELSE updated_at END "
               f"WHERE {_bad('started_at')} OR {_bad('updated_at')}")
    db.execute(f"UPDATE turn_errors SET at = coalesce((SELECT coalesce(t.ended_at, t.created_at) FROM turns t "
               f"WHERE t.id = turn_errors.turn_id), 0) WHERE {_BAD_TIME.format(c='at')}")
    script(
        db,
        f"""
        CREATE TRIGGER turns_time_ai AFTER INSERT ON turns WHEN {_any_bad('new.')} BEGIN
            UPDATE turns SET {_time_repair('')} WHERE rowid = new.rowid;
        END;
        CREATE TRIGGER turns_time_au AFTER UPDATE OF created_at, updated_at, started_at, ended_at, last_access
        ON turns WHEN {_any_bad('new.')} BEGIN
            UPDATE turns SET {_time_repair('')} WHERE rowid = new.rowid;
        END;
        CREATE TRIGGER sessions_time_ai AFTER INSERT ON sessions
        WHEN {_bad('new.started_at')} OR {_bad('new.updated_at')} BEGIN
            UPDATE sessions SET started_at = CASE WHEN {_bad('started_at')} THEN NULL ELSE started_at END,
                updated_at = CASE WHEN {_bad('updated_at')} THEN NULL ELSE updated_at END WHERE id = new.id;
        END;
        CREATE TRIGGER sessions_time_au AFTER UPDATE OF started_at, updated_at ON sessions
        WHEN {_bad('new.started_at')} OR {_bad('new.updated_at')} BEGIN
            UPDATE sessions SET started_at = CASE WHEN {_bad('started_at')} THEN NULL ELSE started_at END,
                updated_at = CASE WHEN {_bad('updated_at')} THEN NULL ELSE updated_at END WHERE id = new.id;
        END;
        """
    )


@migration
def m009_learned(db: sqlite3.Connection) -> None:
    """Learned memories (issue 16): L2 rules / procedures and L3 facts above the turns, each citing
    its evidence turns, with an event per change (before / after) and a per-project learn cursor.
    Forgetting a turn cascades here in the database itself, whoever deletes it: a memory it
    supported loses the turn; one left without evidence goes; a machine-made one that may quote
    it goes too (the next learn recomputes it from the turns that remain); a user-decided one
    (locked, rejected, archived, approved) keeps its decision but not the text unless the user
    wrote it. Events of those memories go (they quote the text); one 'forgotten' event without
    text says why."""
    script(
        db,
        """
        CREATE TABLE learned (
            owner TEXT NOT NULL,
            id TEXT NOT NULL,                    -- stable: project, kind and identity (a rebuild keeps it)
            project TEXT NOT NULL DEFAULT '',
            layer TEXT NOT NULL DEFAULT 'L2' CHECK (layer IN ('L2','L3')),
            kind TEXT NOT NULL,
            slot TEXT NOT NULL DEFAULT '',
            value TEXT NOT NULL DEFAULT '',
            text TEXT NOT NULL DEFAULT '',
            status TEXT NOT NULL DEFAULT 'candidate'
                CHECK (status IN ('candidate','active','superseded','archived','rejected')),
            confidence REAL NOT NULL DEFAULT 0,
            support_sessions INTEGER NOT NULL DEFAULT 0,
            support_turns INTEGER NOT NULL DEFAULT 0,
            locked INTEGER NOT NULL DEFAULT 0,
            edited INTEGER NOT NULL DEFAULT 0,   -- the text is the user's (remem learned edit)
            decided TEXT NOT NULL DEFAULT '',    -- the user's verdict: '' | active | rejected | archived
            polarity INTEGER NOT NULL DEFAULT 1,
            scope TEXT NOT NULL DEFAULT 'project',
            data TEXT NOT NULL DEFAULT '{}',     -- kind-specific fields (procedure trigger, conflict_with, ...)
            stale INTEGER NOT NULL DEFAULT 0,    -- an evidence turn was forgotten: text cleared until relearned
            created_at REAL NOT NULL, updated_at REAL NOT NULL,
            superseded_by TEXT NOT NULL DEFAULT '',
            PRIMARY KEY (owner, id)
        ) WITHOUT ROWID;
        CREATE INDEX learned_scope ON learned(owner, project, status, kind);
        CREATE INDEX learned_stale ON learned(owner, stale);
        CREATE TABLE learned_evidence (
            owner TEXT NOT NULL,
            learned_id TEXT NOT NULL,
            turn_id TEXT NOT NULL,
            session_id TEXT NOT NULL DEFAULT '',
            against INTEGER NOT NULL DEFAULT 0,  -- 1: the turn contradicts the memory
            pos INTEGER NOT NULL DEFAULT 0,      -- time order of the evidence
            PRIMARY KEY (owner, learned_id, turn_id)
        ) WITHOUT ROWID;
        CREATE INDEX learned_evidence_turn ON learned_evidence(turn_id);
        CREATE TABLE learned_events (
            id INTEGER PRIMARY KEY,
            owner TEXT NOT NULL,
            learned_id TEXT NOT NULL,
            ts REAL NOT NULL,
            action TEXT NOT NULL,                -- created | updated | activated | superseded | dropped |
                                                 -- approve | reject | edit | lock | unlock | archive |
                                                 -- rollback | forgotten
            before_json TEXT,                    -- the memory before (NULL: it did not exist)
            after_json TEXT,                     -- the memory after (NULL: it is gone)
            actor TEXT NOT NULL DEFAULT 'learner'   -- learner | user
        );
        CREATE INDEX learned_events_memory ON learned_events(owner, learned_id, id);
        CREATE TABLE learned_cursor (            -- what the last learn of a project saw
            owner TEXT NOT NULL,
            project TEXT NOT NULL,
            turns INTEGER NOT NULL DEFAULT 0,
            last_rowid INTEGER NOT NULL DEFAULT 0,
            last_update REAL NOT NULL DEFAULT 0,
            learned_at REAL NOT NULL DEFAULT 0,
            dirty INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (owner, project)
        ) WITHOUT ROWID;
        CREATE TRIGGER learned_turn_forgotten AFTER DELETE ON turns
        WHEN EXISTS (SELECT 1 FROM learned_evidence WHERE turn_id = old.id) BEGIN
            UPDATE learned SET stale = 1 WHERE owner = old.owner AND id IN
                (SELECT learned_id FROM learned_evidence WHERE owner = old.owner AND turn_id = old.id);
            DELETE FROM learned_evidence WHERE owner = old.owner AND turn_id = old.id;
            DELETE FROM learned_events WHERE owner = old.owner AND learned_id IN
                (SELECT id FROM learned WHERE owner = old.owner AND stale = 1);
            INSERT INTO learned_events (owner, learned_id, ts, action, before_json, after_json, actor)
                SELECT owner, id, (julianday('now') - 2440587.5) * 86400.0, 'forgotten',
                       json_object('reason', 'an evidence turn was forgotten', 'kind', kind, 'status', status),
                       NULL, 'forget'
                FROM learned WHERE owner = old.owner AND stale = 1;
            UPDATE learned SET stale = 3 WHERE owner = old.owner AND stale = 1 AND (
                (locked = 0 AND decided = '') OR NOT EXISTS (SELECT 1 FROM learned_evidence e
                    WHERE e.owner = learned.owner AND e.learned_id = learned.id AND e.against = 0));
            DELETE FROM learned_evidence WHERE owner = old.owner AND learned_id IN
                (SELECT id FROM learned WHERE owner = old.owner AND stale = 3);
            DELETE FROM learned WHERE owner = old.owner AND stale = 3;
            UPDATE learned SET text = CASE WHEN edited = 1 THEN text ELSE '' END, stale = 2,
                data = json_object('decided_on', json(coalesce(json_extract(data, '$.decided_on'), '[]')))
                WHERE owner = old.owner AND stale = 1;
            INSERT INTO learned_cursor (owner, project, dirty) VALUES (old.owner, old.project, 1)
                ON CONFLICT (owner, project) DO UPDATE SET dirty = 1;
        END;
        """
    )


@migration
def m010_drop_legacy_memories(db: sqlite3.Connection) -> None:
    """The first schema's placeholder for derived memories (``memories``, its FTS table and
    triggers, ``memory_links``) goes: nothing ever wrote it, learned memories live in ``learned``
    (m009), and "memory" now names what a user sees (turns and learned memories), not a table."""
    script(
        db,
        """
        DROP TRIGGER IF EXISTS memories_ai;
        DROP TRIGGER IF EXISTS memories_ad;
        DROP TRIGGER IF EXISTS memories_au;
        DROP TABLE IF EXISTS memories_fts;
        DROP TABLE IF EXISTS memory_links;
        DROP TABLE IF EXISTS memories;
        DELETE FROM embeddings WHERE row_kind = 'memory';
        """
    )


@migration
def m011_packets(db: sqlite3.Connection) -> None:
    """What each packet handed to an agent contained (issue 18, feedback): its entry point, session,
    owner and project, a hash of the prompt (never its text) and the ids of its items, so what the
    agent and the user did next can be joined to it. Small rows, pruned by age and count
    (``learn.packets_days``, ``learn.packets_max``); ``outcome`` stays '' until the learn job judged
    the turn that followed."""
    script(
        db,
        """
        CREATE TABLE packets (
            id INTEGER PRIMARY KEY,
            owner TEXT NOT NULL,
            project TEXT NOT NULL DEFAULT '',
            agent TEXT NOT NULL DEFAULT '',
            session_id TEXT NOT NULL DEFAULT '',
            entry TEXT NOT NULL,                 -- turn_start | session_start | sub_agent | repair | resume
            prompt_hash TEXT NOT NULL DEFAULT '',-- sha1 of the whitespace-normalised prompt
            turn_ids TEXT NOT NULL DEFAULT '[]', -- JSON list: the L1 turns it showed
            learned_ids TEXT NOT NULL DEFAULT '[]', -- JSON list: the learned memories it injected
            created_at REAL NOT NULL,
            outcome TEXT NOT NULL DEFAULT '',    -- '' (not judged) | failed | corrected | succeeded | abandoned
                                                 -- | unknown (its turn never arrived)
            turn_id TEXT NOT NULL DEFAULT '',    -- the turn the packet was for, once judged
            judged_at REAL,
            votes TEXT NOT NULL DEFAULT '{}'     -- JSON: item id → good | bad (the viewer's thumbs)
        );
        CREATE INDEX packets_owner_time ON packets(owner, created_at);
        CREATE INDEX packets_open ON packets(owner, project, judged_at);
        """
    )


@migration
def m012_retention(db: sqlite3.Connection) -> None:
    """Forgetting modes (issue 18, decay): a learned memory may be soft-deleted (status ``deleted``,
    restorable for ``learn.retention.deleted_days``; the time and what restore puts back live in its
    ``data``). SQLite cannot widen a CHECK in place, so ``learned`` is copied into a table with the
    new status list (the same columns, every row kept) and its indexes and the forgotten-turn
    trigger, which name it, are re-created from their stored definitions."""
    keep = [r[0] for r in db.execute(
        "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND ((type = 'index' AND tbl_name = 'learned') OR "
        "(type = 'trigger' AND sql LIKE '%learned%')) ORDER BY type, name")]
    for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' AND sql LIKE '%learned%'"
                              ).fetchall():
        db.execute(f'DROP TRIGGER "{name}"')
    (table,) = db.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'learned'").fetchone()
    old = "CHECK (status IN ('candidate','active','superseded','archived','rejected'))"
    if old not in table:
        raise RuntimeError("m012_retention: the learned table is not the one m009 made")
    new = table.replace(old, "CHECK (status IN ('candidate','active','superseded','archived','rejected','deleted'))")
    new = new.replace("CREATE TABLE learned", "CREATE TABLE learned_m012", 1)
    db.execute(new)
    db.execute("INSERT INTO learned_m012 SELECT * FROM learned")
    db.execute("DROP TABLE learned")
    db.execute("ALTER TABLE learned_m012 RENAME TO learned")
    for sql in keep:
        db.execute(sql)


@migration
def m014_team(db: sqlite3.Connection) -> None:
    """Team use (issue 17): the server's users, their tokens and teams (``store/sqlite/users.py``).
    A token is kept only as the sha256 of itself and of its viewer cookie, never in clear; removing a
    user deletes its token rows, so the next request with it is refused."""
    script(db, """
        -- a user's memory is owned by 'user:' || name, a team's shared memory by 'team:' || name
        CREATE TABLE users (name TEXT PRIMARY KEY, created_at REAL NOT NULL);
        CREATE TABLE user_tokens (
            token_hash TEXT PRIMARY KEY,       -- sha256 hex of the token
            session_hash TEXT NOT NULL UNIQUE, -- sha256 hex of its viewer cookie
            user_name TEXT NOT NULL REFERENCES users(name), created_at REAL NOT NULL);
        CREATE INDEX user_tokens_user ON user_tokens(user_name);
        CREATE TABLE teams (name TEXT PRIMARY KEY, created_at REAL NOT NULL);
        CREATE TABLE team_members (
            team TEXT NOT NULL REFERENCES teams(name), user_name TEXT NOT NULL REFERENCES users(name),
            added_at REAL NOT NULL, PRIMARY KEY (team, user_name));
        CREATE INDEX team_members_user ON team_members(user_name);
        """)


@migration
def m017_sync_order(db: sqlite3.Connection) -> None:
    """Team sync (issue 17) pages an owner's turns by (updated_at, id) — the server for each laptop's
    pull, the laptop for its push: an index in that order, so a page is a range read, not a sort of
    the owner's whole history."""
    script(db, "CREATE INDEX IF NOT EXISTS turns_owner_changed ON turns(owner, updated_at, id);")


@migration
def m018_turn_read_indexes(db: sqlite3.Connection) -> None:
    """Two reads recall makes on every prompt, from an index instead of the turn rows (a real-shaped
    row is ~8 KB, its small columns spread over overflow pages):
    - an owner's turns newest first by their end time (the recency channel, a named day,
      "yesterday"); without it each such read sorted the owner's whole history (~200 ms at 100k);
    - a turn's scope by its id (the entity channel checks the scope of every mention it reads):
      0.85 → 0.35 ms an entity at 100k."""
    script(db, """
    CREATE INDEX IF NOT EXISTS turns_owner_ended ON turns(owner, coalesce(ended_at, started_at, created_at));
    CREATE INDEX IF NOT EXISTS turns_id_scope ON turns(id, owner, project, agent, deleted);
    """)


@migration
def m019_learner_version(db: sqlite3.Connection) -> None:
    """Each project's learn cursor keeps the learner that wrote it (``layers.learn.learner_version``):
    after an upgrade the learn job learns every project again, not only those with new turns."""
    script(db, "ALTER TABLE learned_cursor ADD COLUMN learner TEXT NOT NULL DEFAULT '';")


@migration
def m020_session_order(db: sqlite3.Connection) -> None:
    """A candidate's session neighbours (read on every prompt for the best 20 candidates) from an
    index holding the session's order and scope, not from its turn rows (small columns behind
    kilobytes of text): 20 sessions 1.2 → 0.6 ms at 100k real-shaped turns."""
    script(db, "CREATE INDEX IF NOT EXISTS turns_session_order "
               "ON turns(session_id, owner, agent, project, deleted, started_at, id);")

"""The first schema (migration ``m001_core``), as it was created: frozen like every applied
migration; later changes are migrations of their own (migrations.py)."""

CORE = """
        CREATE TABLE sources (
            name TEXT PRIMARY KEY,          -- e.g. 'claude-code' or 'custom:kimi-code'
            agent TEXT NOT NULL,
            path TEXT NOT NULL DEFAULT '',
            format TEXT NOT NULL DEFAULT '',
            status TEXT NOT NULL DEFAULT 'active',   -- active | draft | paused
            rules TEXT NOT NULL DEFAULT '{}',        -- JSON: discovered parsing rules
            cursor REAL,                             -- incremental watermark (epoch s)
            baseline REAL,                           -- scan start of the first scan
            boundary REAL,                           -- custom sources: newest imported request
            last_scan_at REAL,                       -- shown to users, separate from cursor
            last_sync_at REAL,
            last_result TEXT NOT NULL DEFAULT '{}',
            created_at REAL NOT NULL
        );
        CREATE TABLE checkpoints (             -- per file / per session: skip unchanged work
            source TEXT NOT NULL,
            unit TEXT NOT NULL,
            path TEXT NOT NULL DEFAULT '',
            size INTEGER, mtime REAL,
            last_ts REAL, last_msg_id TEXT, content_hash TEXT,
            updated_at REAL NOT NULL,
            PRIMARY KEY (source, unit)
        );
        CREATE TABLE sessions (
            id TEXT PRIMARY KEY,               -- agent-scoped session id
            owner TEXT NOT NULL, agent TEXT NOT NULL, project TEXT NOT NULL DEFAULT '',
            title TEXT NOT NULL DEFAULT '',
            started_at REAL, updated_at REAL,
            turn_count INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX sessions_scope ON sessions(owner, agent, project);
        CREATE TABLE turns (
            rowid INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            source_key TEXT NOT NULL,
            owner TEXT NOT NULL, agent TEXT NOT NULL, project TEXT NOT NULL DEFAULT '',
            session_id TEXT NOT NULL DEFAULT '',
            source_name TEXT NOT NULL DEFAULT '',
            kind TEXT NOT NULL DEFAULT 'turn',
            request TEXT NOT NULL DEFAULT '',
            reply TEXT NOT NULL DEFAULT '',
            actions TEXT NOT NULL DEFAULT '',       -- rendered tool trajectory (searchable)
            actions_json TEXT NOT NULL DEFAULT '[]',
            status TEXT NOT NULL DEFAULT 'succeeded'
                CHECK (status IN ('succeeded','failed','cancelled')),
            started_at REAL, ended_at REAL,
            created_at REAL NOT NULL, updated_at REAL NOT NULL,
            model TEXT NOT NULL DEFAULT '',
            size INTEGER NOT NULL DEFAULT 0,
            content_hash TEXT NOT NULL,
            request_hash TEXT NOT NULL DEFAULT '',
            summary TEXT NOT NULL DEFAULT '',
            tags TEXT NOT NULL DEFAULT '[]',
            error_sigs TEXT NOT NULL DEFAULT '[]',
            importance REAL NOT NULL DEFAULT 0.5,
            access_count INTEGER NOT NULL DEFAULT 0,
            last_access REAL,
            archived INTEGER NOT NULL DEFAULT 0,
            deleted INTEGER NOT NULL DEFAULT 0,
            cjk TEXT NOT NULL DEFAULT '',           -- segmented CJK words + bigrams for FTS
            embed_state TEXT NOT NULL DEFAULT 'pending',
            trgm INTEGER NOT NULL DEFAULT 0,        -- 1 once in the trigram index
            UNIQUE (owner, source_key)
        );
        CREATE INDEX turns_scope ON turns(owner, agent, project, ended_at);
        CREATE INDEX turns_session ON turns(session_id, started_at);
        CREATE INDEX turns_embed ON turns(embed_state);
        CREATE INDEX turns_trgm_todo ON turns(trgm) WHERE trgm = 0;
        CREATE INDEX turns_reqhash ON turns(owner, agent, session_id, request_hash);
        CREATE TABLE messages (                -- raw records: one row per source message id
            source TEXT NOT NULL,
            source_msg_id TEXT NOT NULL,
            owner TEXT NOT NULL,
            session_id TEXT NOT NULL DEFAULT '',
            turn_id TEXT REFERENCES turns(id) ON DELETE CASCADE,
            role TEXT NOT NULL DEFAULT '',
            ts REAL,
            PRIMARY KEY (source, source_msg_id)
        ) WITHOUT ROWID;
        CREATE INDEX messages_turn ON messages(turn_id);
        """

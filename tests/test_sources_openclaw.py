"""OpenClaw transcripts (JSONL and the newer state/openclaw.sqlite) → turns, against the agent fixtures (tests/fixtures/agents)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from conftest import copy_fixture
from remem.sources import SOURCES, ParseStats, assemble_turns, base, scan

SRC = SOURCES["openclaw"]
SID = "8c1e2d3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f"



@pytest.fixture
def oc_home(tmp_path) -> Path:
    return copy_fixture("openclaw", tmp_path / ".openclaw")


@pytest.fixture
def env(tmp_path, oc_home) -> dict[str, str]:
    return {"HOME": str(tmp_path)}


def run(env, stats: ParseStats | None = None):
    stats = stats if stats is not None else ParseStats()
    units = scan(SRC, env, stats)
    return units, [t for u in units for t in assemble_turns(SRC.read(u, stats), agent="openclaw").turns]


def test_jsonl_session(env, oc_home):
    assert SRC.discover(env) == [oc_home]
    units, [t] = run(env)
    assert [u.session_id for u in units] == [SID] and units[0].meta["agent_id"] == "main"
    assert (t.request, t.reply) == ("Add a --since flag to the sync command", "Added `--since` to `sync`.")
    [a] = t.actions
    assert (a.name, a.call_id, a.output, a.is_error) == ("exec", "call_oc1", "src/remem/cli.py:88:def sync(args):",
                                                         False)
    assert json.loads(a.input) == {"command": "rg -n 'def sync' src"}
    assert t.source_key == f"openclaw:{SID}:e1"
    assert (t.project, t.model, t.status) == ("/home/alice/.openclaw/workspace", "claude-sonnet-4-5", "succeeded")
    assert t.message_ids == ["e1", "e2", "e3", "e4"]
    assert [x.source_key for x in run(env)[1]] == [t.source_key]


def test_deleted_sessions_are_skipped(env, oc_home):
    sessions = oc_home / "agents" / "main" / "sessions"
    shutil.copy(sessions / f"{SID}.jsonl", sessions / f"{SID}.jsonl.deleted.1772532999")
    shutil.copy(sessions / f"{SID}.jsonl", sessions / "old.deleted.1772532999.jsonl")
    units, _ = run(env)
    assert [u.session_id for u in units] == [SID]


def _state_db(oc_home: Path, ddl: str) -> sqlite3.Connection:
    (oc_home / "state").mkdir()
    con = sqlite3.connect(oc_home / "state" / "openclaw.sqlite")
    con.executescript(ddl)
    return con


def test_sqlite_transcripts_are_read_defensively(env, oc_home):
    con = _state_db(oc_home, "CREATE TABLE transcript_events (id INTEGER PRIMARY KEY, session_id TEXT, seq INTEGER, "
                             "event_json TEXT, created_at INTEGER);")
    lines = (oc_home / "agents" / "main" / "sessions" / f"{SID}.jsonl").read_text().splitlines()
    with con:
        for seq, line in enumerate(lines):
            con.execute("INSERT INTO transcript_events (session_id, seq, event_json, created_at) VALUES (?,?,?,?)",
                        (SID, seq, line, 1772532000000 + seq))
        con.execute("INSERT INTO transcript_events (session_id, seq, event_json, created_at) VALUES (?,?,?,?)",
                    (SID, 99, "{truncated", 1772532100000))
    con.close()
    stats = ParseStats()
    units, [t] = run(env, stats)
    assert [(u.session_id, bool(u.meta.get("db"))) for u in units] == [(SID, True)]   # JSONL copy not read again
    assert units[0].fingerprint == (len(lines) + 1, 1772532100.0)
    assert (t.request, t.reply, t.source_key) == ("Add a --since flag to the sync command",
                                                  "Added `--since` to `sync`.", f"openclaw:{SID}:e1")
    assert stats.errors == {"malformed json": 1}


# transcript_events as published in the openclaw 2026.9.6 npm package (its CHECK constraints and the
# session_windows foreign key left out): an event is JSON text, or a zstd frame once in cold storage
REAL_DDL = """CREATE TABLE transcript_events (
  session_id TEXT NOT NULL, seq INTEGER NOT NULL, event_json TEXT, created_at INTEGER NOT NULL,
  event_zstd BLOB, event_utf8_bytes INTEGER, navigation_json TEXT, PRIMARY KEY (session_id, seq)) STRICT;"""


def test_sqlite_real_schema_with_zstd_cold_storage_events(env, oc_home):
    import zstandard

    con = _state_db(oc_home, REAL_DDL)
    lines = (oc_home / "agents" / "main" / "sessions" / f"{SID}.jsonl").read_text().splitlines()
    with con:
        for seq, line in enumerate(lines):
            if seq % 2:   # every other event moved to cold storage
                frame = zstandard.ZstdCompressor().compress(line.encode())
                con.execute("INSERT INTO transcript_events VALUES (?,?,NULL,?,?,?,?)",
                            (SID, seq, 1772532000000 + seq, frame, len(line.encode()), '{"version":1}'))
            else:
                con.execute("INSERT INTO transcript_events (session_id, seq, event_json, created_at) VALUES (?,?,?,?)",
                            (SID, seq, line, 1772532000000 + seq))
        con.execute("INSERT INTO transcript_events VALUES (?,?,NULL,?,?,?,?)",
                    (SID, 99, 1772532100000, b"not a zstd frame", 10, '{"version":1}'))
    con.close()
    stats = ParseStats()
    units, [t] = run(env, stats)
    assert [(u.session_id, bool(u.meta.get("db"))) for u in units] == [(SID, True)]
    assert (t.request, t.reply) == ("Add a --since flag to the sync command", "Added `--since` to `sync`.")
    assert stats.errors == {"compressed event could not be read (zstd)": 1}


def test_sqlite_via_transcript_files_join(env, oc_home):
    con = _state_db(oc_home, "CREATE TABLE transcript_files (id INTEGER PRIMARY KEY, session_id TEXT, path TEXT);"
                             "CREATE TABLE transcript_events (file_id INTEGER, idx INTEGER, data BLOB);")
    with con:
        con.execute("INSERT INTO transcript_files VALUES (7, 'sqlite-only', 'x')")
        for idx, rec in enumerate([
            {"type": "message", "id": "q", "timestamp": "2026-05-01T00:00:00Z",
             "message": {"role": "user", "content": [{"type": "text", "text": "from sqlite"}]}},
            {"type": "message", "id": "a", "timestamp": "2026-05-01T00:00:01Z",
             "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}},
        ]):
            con.execute("INSERT INTO transcript_events VALUES (7, ?, ?)", (idx, json.dumps(rec).encode()))
    con.close()
    units, ts = run(env)
    assert sorted(u.session_id for u in units) == [SID, "sqlite-only"]
    assert sorted((t.request, t.reply) for t in ts) == [("Add a --since flag to the sync command",
                                                         "Added `--since` to `sync`."), ("from sqlite", "ok")]


def test_unknown_sqlite_schema_and_lock_are_counted(env, oc_home, monkeypatch):
    monkeypatch.setattr(base, "SQLITE_TIMEOUT", 0.05)
    con = _state_db(oc_home, "CREATE TABLE transcript_events (blob_of_something BLOB);")
    stats = ParseStats()
    units, ts = run(env, stats)
    assert stats.errors == {"unexpected schema": 1} and len(ts) == 1     # JSONL still imported
    con.execute("BEGIN EXCLUSIVE")
    try:
        stats = ParseStats()
        run(env, stats)
        assert stats.errors == {"database locked": 1}
    finally:
        con.rollback()
        con.close()

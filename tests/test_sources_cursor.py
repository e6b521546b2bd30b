"""Cursor state.vscdb (cursorDiskKV) → messages → turns, against the agent fixtures (tests/fixtures/agents)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from conftest import copy_fixture
from remem.sources import SOURCES, ParseStats, assemble_turns, base, scan

SRC = SOURCES["cursor"]
CID = "b7e0c6a2-3f41-4c55-8d21-6a9e0f1d2c3b"



@pytest.fixture
def user_dir(tmp_path) -> Path:
    return copy_fixture("cursor", tmp_path / ".config" / "Cursor" / "User")


@pytest.fixture
def env(tmp_path, user_dir) -> dict[str, str]:
    return {"HOME": str(tmp_path)}


def turns(env, stats: ParseStats | None = None):
    stats = stats if stats is not None else ParseStats()
    out = []
    for unit in scan(SRC, env, stats):
        out.extend(assemble_turns(SRC.read(unit, stats), agent="cursor").turns)
    return out


def test_discovery_and_units(env, user_dir):
    assert SRC.discover(env) == [user_dir]
    [unit] = scan(SRC, env)
    assert unit.session_id == CID and unit.key == f"cursor:{user_dir}/globalStorage/state.vscdb#{CID}"
    assert unit.fingerprint == (4, 1772532065.0)      # bubbles, lastUpdatedAt
    assert unit.meta["project"] == "/home/alice/proj/remem-demo"


def test_one_turn_in_header_order(env):
    [t] = turns(env)
    assert t.request == "Add a --since flag to the sync command"
    assert t.reply == "Added `--since` to `sync`."
    [a] = t.actions
    assert (a.name, a.call_id, a.is_error) == ("run_terminal_cmd", "toolu_cur1", False)
    assert json.loads(a.input) == {"command": "rg -n 'def sync' src"}
    assert "src/remem/cli.py:88:def sync(args):" in a.output
    assert t.source_key == f"cursor:{CID}:5e1f0a9c-0001-4a00-9000-000000000001"
    assert (t.project, t.model, t.status) == ("/home/alice/proj/remem-demo", "claude-4.5-sonnet", "succeeded")
    assert len(t.message_ids) == 4 and t.started_at == 1772532000.0
    assert [t.source_key for t in turns(env)] == [t.source_key]        # stable


def _db(user_dir: Path) -> sqlite3.Connection:
    return sqlite3.connect(user_dir / "globalStorage" / "state.vscdb")


def test_blob_values_and_header_order_not_key_order(env, user_dir):
    con = _db(user_dir)
    with con:
        con.execute("UPDATE cursorDiskKV SET value = CAST(value AS BLOB)")
        key = f"composerData:{CID}"
        data = json.loads(con.execute("SELECT value FROM cursorDiskKV WHERE key=?", (key,)).fetchone()[0])
        headers = data["fullConversationHeadersOnly"]
        # a second exchange whose bubble ids sort before the first ones
        for bid, btype, text in (("0000-q2", 1, "and add a test"), ("0000-a2", 2, "Test added.")):
            headers.append({"bubbleId": bid, "type": btype})
            con.execute("INSERT INTO cursorDiskKV VALUES (?, ?)",
                        (f"bubbleId:{CID}:{bid}", json.dumps({"type": btype, "bubbleId": bid, "text": text}).encode()))
        con.execute("UPDATE cursorDiskKV SET value=? WHERE key=?", (json.dumps(data).encode(), key))
    con.close()
    ts = turns(env)
    assert [(t.request, t.reply) for t in ts] == [
        ("Add a --since flag to the sync command", "Added `--since` to `sync`."), ("and add a test", "Test added.")]
    assert ts[1].started_at == 1772532180.0          # no createdAt: previous bubble's time


def test_malformed_and_missing_bubbles_are_counted(env, user_dir):
    con = _db(user_dir)
    with con:
        con.execute("UPDATE cursorDiskKV SET value='{oops' WHERE key LIKE 'bubbleId:%0002'")
        con.execute("DELETE FROM cursorDiskKV WHERE key LIKE 'bubbleId:%0003'")
        con.execute("INSERT INTO cursorDiskKV VALUES ('composerData:broken', 'not json')")
    con.close()
    stats = ParseStats()
    [t] = turns(env, stats)
    assert t.reply == "Added `--since` to `sync`." and t.actions == []
    assert stats.errors == {"malformed bubble json": 1, "missing bubble": 1, "malformed composer json": 1}


def test_locked_database_is_counted_not_raised(env, user_dir, monkeypatch):
    monkeypatch.setattr(base, "SQLITE_TIMEOUT", 0.05)
    [unit] = scan(SRC, env)
    con = _db(user_dir)
    con.execute("BEGIN EXCLUSIVE")
    try:
        stats = ParseStats()
        assert scan(SRC, env, stats) == []
        assert list(SRC.read(unit, stats)) == []
        assert stats.errors == {"database locked": 2}
    finally:
        con.rollback()
        con.close()


def test_half_written_database_is_counted_not_raised(env, user_dir):
    db = user_dir / "globalStorage" / "state.vscdb"
    db.write_bytes(db.read_bytes()[:1000])
    stats = ParseStats()
    assert turns(env, stats) == []
    assert stats.bad >= 1 and set(stats.errors) <= {"corrupt database", "database error"}
    db.write_bytes(b"garbage, not sqlite" * 100)
    stats = ParseStats()
    assert turns(env, stats) == [] and stats.errors == {"corrupt database": 1}

"""Hermes state.db and legacy sessions/*.jsonl → messages → turns, against the agent fixtures (tests/fixtures/agents)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from conftest import copy_fixture
from remem.sources import SOURCES, ParseStats, assemble_turns, base, scan

SRC = SOURCES["hermes"]
SID = "20260303_100000_a1b2c3"



@pytest.fixture
def hermes_home(tmp_path) -> Path:
    return copy_fixture("hermes", tmp_path / ".hermes")


@pytest.fixture
def env(tmp_path, hermes_home) -> dict[str, str]:
    return {"HOME": str(tmp_path)}


def run(env, stats: ParseStats | None = None):
    stats = stats if stats is not None else ParseStats()
    units = scan(SRC, env, stats)
    return units, [t for u in units for t in assemble_turns(SRC.read(u, stats), agent="hermes").turns]


def test_discovery_units_and_compression_child_stitched(env, hermes_home, tmp_path):
    assert SRC.discover(env) == [hermes_home]
    assert SRC.discover({"HOME": "/nowhere", "HERMES_HOME": str(hermes_home)}) == [hermes_home]
    units, _ = run(env)
    [unit] = units          # the JSONL copy of the same session is skipped; the "_c1" child is stitched in
    assert unit.meta["db"] and unit.session_id == SID
    assert dict(unit.meta["members"]) == {SID: "", f"{SID}_c1": "continuation"}
    assert unit.fingerprint == (5, 1772532121.0)


def test_db_turn(env):
    _, [t] = run(env)
    assert (t.request, t.reply) == ("Add a --since flag to the sync command", "Added `--since` to `sync`.")
    [a] = t.actions
    assert (a.name, a.call_id, a.output, a.is_error) == ("terminal", "call_h1", "src/remem/cli.py:88:def sync(args):",
                                                         False)
    assert json.loads(a.input) == {"command": "rg -n 'def sync' src"}
    assert t.source_key == f"hermes:{SID}:{SID}:1"
    assert (t.project, t.model, t.status) == ("/home/alice/proj/remem-demo", "anthropic/claude-sonnet-4.5", "succeeded")
    assert (t.started_at, t.ended_at) == (1772532001.0, 1772532020.0)
    assert [x.source_key for x in run(env)[1]] == [t.source_key]


def test_legacy_jsonl_alone(env, hermes_home):
    (hermes_home / "state.db").unlink()
    units, [t] = run(env)
    assert units[0].path.name == f"{SID}.jsonl"
    assert (t.request, t.reply, t.model) == ("Add a --since flag to the sync command", "Added `--since` to `sync`.",
                                             "anthropic/claude-sonnet-4.5")
    assert t.actions[0].output == "src/remem/cli.py:88:def sync(args):"
    assert t.source_key == f"hermes:{SID}:{SID}@160"


def _add(con, **row):
    cols = ",".join(row)
    con.execute(f"INSERT INTO messages ({cols}) VALUES ({','.join('?' * len(row))})", list(row.values()))


def test_rewound_hidden_harness_and_delegate_rows(env, hermes_home):
    con = sqlite3.connect(hermes_home / "state.db")
    with con:
        c1 = f"{SID}_c1"
        _add(con, session_id=c1, role="user", content="Review the conversation above and save memories", timestamp=1772532130.0)
        _add(con, session_id=c1, role="assistant", content="(saved)", timestamp=1772532131.0)
        _add(con, session_id=c1, role="user", content="write the test", timestamp=1772532140.0)
        _add(con, session_id=c1, role="assistant", content="old answer", timestamp=1772532141.0, active=0)
        _add(con, session_id=c1, role="system", content="scaffold", timestamp=1772532142.0, display_kind="hidden")
        _add(con, session_id=c1, role="assistant", content="", timestamp=1772532143.0,
             tool_calls=json.dumps([{"id": "call_t", "function": {"name": "terminal", "arguments": "{}"}}]))
        _add(con, session_id=c1, role="tool", tool_call_id="call_t", content='{"output": "1 failed", "exit_code": 1}',
             timestamp=1772532144.0)
        con.execute("INSERT INTO sessions (id, source, parent_session_id, started_at, model_config) VALUES (?,?,?,?,?)",
                    ("delegate-1", "cli", c1, 1772532145.0, json.dumps({"_delegate_from": c1})))
        _add(con, session_id="delegate-1", role="user", content="run pytest -x", timestamp=1772532145.5)
        _add(con, session_id="delegate-1", role="assistant", content="delegate report", timestamp=1772532146.0)
        _add(con, session_id=c1, role="assistant", content="The test fails; fixing.", timestamp=1772532150.0,
             finish_reason="stop")
        con.execute("INSERT INTO sessions (id, source, parent_session_id, started_at, model_config) VALUES (?,?,?,?,?)",
                    ("branch-1", "cli", SID, 1772532200.0, json.dumps({"_branched_from": SID})))
        _add(con, session_id="branch-1", role="user", content="branch question", timestamp=1772532201.0)
        _add(con, session_id="branch-1", role="assistant", content="branch answer", timestamp=1772532202.0)
        _add(con, session_id=c1, role="user", content="no ts", timestamp=0)
        _add(con, session_id=c1, role="wizard", content="?", timestamp=1772532300.0)
    con.close()
    stats = ParseStats()
    units, ts = run(env, stats)
    assert sorted(u.session_id for u in units) == [SID, "branch-1"]
    got = [(t.session_id, t.request, t.reply, t.status) for t in ts]
    assert got == [
        (SID, "Add a --since flag to the sync command", "Added `--since` to `sync`.", "succeeded"),
        (SID, "write the test", "The test fails; fixing.", "failed"),
        ("branch-1", "branch question", "branch answer", "succeeded"),
    ]
    t = ts[1]
    assert [(a.name, a.output, a.is_error) for a in t.actions] == [("terminal", "1 failed", True)]
    assert f"delegate-1:{10}" in t.message_ids or any(i.startswith("delegate-1:") for i in t.message_ids)
    assert "old answer" not in repr(ts) and "(saved)" != t.reply
    assert stats.ignored["rewound"] == 1 and stats.ignored["hidden"] == 1 and stats.ignored["compressed summary"] == 1
    assert stats.errors == {"missing timestamp": 1}
    assert stats.unknown == {"unknown role: wizard": 1}


def test_locked_and_half_written_state_db(env, hermes_home, monkeypatch):
    monkeypatch.setattr(base, "SQLITE_TIMEOUT", 0.05)
    db = hermes_home / "state.db"
    con = sqlite3.connect(db)
    con.execute("BEGIN EXCLUSIVE")
    try:
        stats = ParseStats()
        units, _ = run(env, stats)
        assert stats.errors["database locked"] == 1
    finally:
        con.rollback()
        con.close()
    db.write_bytes(db.read_bytes()[:5000])
    stats = ParseStats()
    run(env, stats)
    assert stats.bad >= 1

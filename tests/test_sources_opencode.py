"""OpenCode opencode.db and legacy storage/ → messages → turns, against the agent fixtures (tests/fixtures/agents)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from conftest import copy_fixture
from remem.sources import SOURCES, ParseStats, assemble_turns, base, scan

SRC = SOURCES["opencode"]
SES = "ses_3a1f9e2c7ffeAbCdEfGhIjKlMn"
SUB = "ses_3a1f9e2c8ffeSubAgentXyz01"
USER_MSG = "msg_c5e0a1b20001UsrAAAAAAAAAA"



@pytest.fixture
def data_dir(tmp_path) -> Path:
    return copy_fixture("opencode", tmp_path / ".local" / "share" / "opencode")


@pytest.fixture
def env(tmp_path, data_dir) -> dict[str, str]:
    return {"HOME": str(tmp_path)}


def run(env, stats: ParseStats | None = None):
    stats = stats if stats is not None else ParseStats()
    units = scan(SRC, env, stats)
    return units, [t for u in units for t in assemble_turns(SRC.read(u, stats), agent="opencode").turns]


def test_discovery_and_units(env, data_dir):
    assert SRC.discover(env) == [data_dir]
    units, _ = run(env)
    [unit] = units      # the legacy copy of the same session is skipped; the sub-agent session folds in
    assert unit.session_id == SES and unit.meta["children"] == (SUB,)
    assert unit.key == f"opencode:{data_dir}/opencode.db#{SES}"
    assert unit.fingerprint == (9, 1772532009.0)          # 2 messages + 7 parts, newest time_updated


def test_db_turn_content(env):
    _, [t] = run(env)
    assert t.request == "Add a --since flag to the sync command\n[image: image/png]"
    assert t.reply == "Added `--since` to `sync`."
    [a] = t.actions
    assert (a.name, a.call_id, a.output, a.is_error) == ("bash", "toolu_01oc", "src/remem/cli.py:88:def sync(args):",
                                                         False)
    assert json.loads(a.input)["command"] == "rg -n 'def sync' src"
    assert t.source_key == f"opencode:{SES}:{USER_MSG}"
    assert (t.project, t.model, t.status) == ("/home/alice/proj/remem-demo", "claude-sonnet-4-5", "succeeded")
    assert (t.started_at, t.ended_at) == (1772532000.01, 1772532007.0)
    assert t.message_ids == [USER_MSG, "msg_c5e0a1b20002AstBBBBBBBBBB", "prt_c5e0a1b30006"]
    assert [x.source_key for x in run(env)[1]] == [t.source_key]       # stable


def test_legacy_tree_alone_gives_the_same_turn(env, data_dir):
    (data_dir / "opencode.db").unlink()
    units, [t] = run(env)
    assert units[0].meta["legacy"] is True
    assert t.source_key == f"opencode:{SES}:{USER_MSG}"
    assert (t.reply, t.actions[0].name) == ("Added `--since` to `sync`.", "bash")
    assert t.message_ids == [USER_MSG, "msg_c5e0a1b20002AstBBBBBBBBBB", "prt_c5e0a1b30006"]


def _add(con, table, **row):
    cols = ",".join(row)
    con.execute(f"INSERT INTO {table} ({cols}) VALUES ({','.join('?' * len(row))})", list(row.values()))


def test_subagent_session_folds_and_compaction_is_skipped(env, data_dir):
    con = sqlite3.connect(data_dir / "opencode.db")
    with con:
        # sub-agent work in the child session, in the middle of the parent's turn
        _add(con, "message", id="msg_sub1", session_id=SUB, time_created=1772532003000, time_updated=1772532003000,
             data=json.dumps({"role": "assistant", "time": {"created": 1772532003000}, "modelID": "small"}))
        _add(con, "part", id="prt_sub1", message_id="msg_sub1", session_id=SUB, time_created=1772532003001,
             time_updated=1772532003001, data=json.dumps({"type": "tool", "callID": "sub-call", "tool": "grep",
                                                          "state": {"status": "error", "input": {"q": "sync"},
                                                                    "error": "no match"}}))
        _add(con, "part", id="prt_sub2", message_id="msg_sub1", session_id=SUB, time_created=1772532003002,
             time_updated=1772532003002, data=json.dumps({"type": "text", "text": "sub-agent finding"}))
        # a compaction round trip later in the parent session, then a real exchange
        for mid, role, extra, parts in (
            ("msg_z1", "user", {}, [{"type": "compaction"}]),
            ("msg_z2", "assistant", {"summary": True}, [{"type": "text", "text": "SUMMARY OF EVERYTHING"}]),
            ("msg_z3", "user", {}, [{"type": "text", "text": "synthetic note", "synthetic": True},
                                    {"type": "text", "text": "next question"}]),
            ("msg_z4", "assistant", {"error": {"name": "MessageAbortedError"}}, [{"type": "text", "text": "partial"}]),
        ):
            t0 = 1772533000000 + len(mid) + ord(mid[-1])
            _add(con, "message", id=mid, session_id=SES, time_created=t0, time_updated=t0,
                 data=json.dumps({"role": role, "time": {"created": t0}, **extra}))
            for i, p in enumerate(parts):
                _add(con, "part", id=f"prt_{mid}_{i}", message_id=mid, session_id=SES, time_created=t0,
                     time_updated=t0, data=json.dumps(p))
        _add(con, "message", id="msg_bad", session_id=SES, time_created=1772534000000, time_updated=1772534000000,
             data="{not json")
    con.close()
    stats = ParseStats()
    _, ts = run(env, stats)
    assert [(t.request, t.reply, t.status) for t in ts] == [
        ("Add a --since flag to the sync command\n[image: image/png]", "Added `--since` to `sync`.", "succeeded"),
        ("next question", "partial", "cancelled")]
    assert [(a.name, a.is_error, a.output) for a in ts[0].actions] == [
        ("bash", False, "src/remem/cli.py:88:def sync(args):"), ("grep", True, "no match")]
    assert "msg_sub1" in ts[0].message_ids and "sub-agent finding" != ts[0].reply
    assert "SUMMARY OF EVERYTHING" not in repr(ts)
    assert stats.ignored["compaction summary"] == 1 and stats.errors == {"malformed message json": 1}


def test_locked_and_corrupt_database(env, data_dir, monkeypatch):
    monkeypatch.setattr(base, "SQLITE_TIMEOUT", 0.05)
    db = data_dir / "opencode.db"
    con = sqlite3.connect(db)
    con.execute("BEGIN EXCLUSIVE")
    try:
        stats = ParseStats()
        units, ts = run(env, stats)
        assert stats.errors["database locked"] == 1
        # the database could not be read, so the legacy copy is used instead
        assert [u.meta.get("legacy") for u in units] == [True] and len(ts) == 1
    finally:
        con.rollback()
        con.close()
    db.write_bytes(db.read_bytes()[:3000])
    stats = ParseStats()
    run(env, stats)
    assert stats.bad >= 1

"""The sync engine on a temporary HOME built from the agents' fixture files."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import FIXTURES, copy_fixture
from remem.bench.gen_history import write_claude_history
from remem.sources.base import Unit
from remem.sources.sync import SyncControl, needs_read, next_cursor, run_sync

LAYOUT = {  # fixture dir → where the agent keeps it under HOME
    "claude-code/projects": ".claude/projects",
    "codex/sessions": ".codex/sessions",
    "gemini/tmp": ".gemini/tmp",
    "opencode/opencode.db": ".local/share/opencode/opencode.db",
    "opencode/storage": ".local/share/opencode/storage",
    "hermes/state.db": ".hermes/state.db",
    "hermes/sessions": ".hermes/sessions",
    "openclaw/agents": ".openclaw/agents",
    "cursor/globalStorage": ".config/Cursor/User/globalStorage",
    "cursor/workspaceStorage": ".config/Cursor/User/workspaceStorage",
}


def build_home(home: Path) -> None:
    for src, dst in LAYOUT.items():
        copy_fixture(src, home / dst)


def snapshot(root: Path) -> dict[str, tuple[str, float]]:
    out = {}
    for p in root.rglob("*"):
        if p.is_file():
            out[str(p)] = (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime)
    return out


@pytest.fixture
def agent_home() -> Path:
    home = Path(os.environ["HOME"])
    build_home(home)
    return home


KEYS = {"messages_scanned", "unique_messages", "turns_added", "turns_updated", "duplicates",
        "skipped_incomplete", "skipped_oversize", "failed", "errors"}


def test_first_sync_imports_every_agent_and_writes_nothing(mem, agent_home):
    before = snapshot(agent_home)
    res = run_sync(mem)
    assert snapshot(agent_home) == before, "sync must never write to an agent's files"
    per = {s["source"]: s for s in res["sources"]}
    assert set(per) == {"claude-code", "codex", "cursor", "opencode", "openclaw", "hermes", "gemini"}
    for s in per.values():
        assert KEYS <= set(s), s
        assert s["turns_added"] >= 1, s
    assert KEYS <= set(res["total"])
    assert res["total"]["turns_added"] == sum(s["turns_added"] for s in per.values())
    assert res["total"]["messages_scanned"] > res["total"]["turns_added"]
    stats = mem.stats()
    assert stats["turns"] == res["total"]["turns_added"]
    assert set(stats["by_agent"]) == set(per)
    # malformed lines are counted with their reason, the rest of the source is imported
    assert per["claude-code"]["failed"] > 0 and any("json" in e for e in per["claude-code"]["errors"])
    hit = mem.search("test_retry_backoff", k=3)
    assert hit and hit[0]["agent"] == "claude-code" and hit[0]["project"] == "/home/alice/proj/remem-demo"


def test_second_sync_adds_nothing_and_skips_unchanged_files(mem, agent_home):
    first = run_sync(mem)
    second = run_sync(mem)
    assert second["total"]["turns_added"] == 0 and second["total"]["turns_updated"] == 0
    assert mem.stats()["turns"] == first["total"]["turns_added"]
    per = {s["source"]: s for s in second["sources"]}
    assert per["gemini"]["units_read"] == 0 and per["gemini"]["units_unchanged"] == 1


def test_full_rescan_is_idempotent(mem, agent_home):
    first = run_sync(mem)
    again = run_sync(mem, full=True)
    assert again["total"]["turns_added"] == 0
    assert again["total"]["duplicates"] == first["total"]["turns_added"]


def _claude_line(sid: str, uid: str, kind: str, content, ts: str, parent=None) -> str:
    msg = {"role": kind, "content": content}
    if kind == "assistant":
        msg = {"id": "m" + uid, "role": "assistant", "model": "claude-x",
               "content": [{"type": "text", "text": content}]}
    return json.dumps({"type": kind, "uuid": uid, "parentUuid": parent, "sessionId": sid, "cwd": "/w/app",
                       "timestamp": ts, "userType": "external", "message": msg}) + "\n"


def test_incomplete_turn_completed_by_later_sync_and_cursor(mem):
    home = Path(os.environ["HOME"])
    f = home / ".claude/projects/-w-app/s1.jsonl"
    f.parent.mkdir(parents=True)
    f.write_text(_claude_line("s1", "u1", "user", "How do I run the migrations?", "2026-01-01T10:00:00Z")
                 + _claude_line("s1", "a1", "assistant", "Run make migrate.", "2026-01-01T10:00:05Z", "u1")
                 + _claude_line("s1", "u2", "user", "And roll them back?", "2026-01-01T10:01:00Z", "a1"))
    r1 = run_sync(mem, ["claude-code"])
    s1 = r1["sources"][0]
    assert (s1["turns_added"], s1["skipped_incomplete"]) == (1, 1)
    assert s1["cursor"] is None, "an incomplete session keeps the cursor where it was"
    with f.open("a") as fh:
        fh.write(_claude_line("s1", "a2", "assistant", "Run make rollback.", "2026-01-01T10:01:09Z", "u2"))
    r2 = run_sync(mem, ["claude-code"])["sources"][0]
    assert (r2["turns_added"], r2["skipped_incomplete"], r2["duplicates"]) == (1, 0, 1)
    assert r2["cursor"] is not None and r2["cursor"] >= time.time() - 60  # max(scan start, newest)
    turn = mem.search("roll back", k=1)[0]
    assert "rollback" in mem.get(turn["id"])["reply"]
    assert run_sync(mem, ["claude-code"])["sources"][0]["units_read"] == 0


@pytest.mark.parametrize("ckpt,unit_fp,full,expected", [
    (None, (10, 1.0), False, True),                     # new unit
    ({"size": 10, "mtime": 1.0}, (10, 1.0), False, False),  # unchanged: not re-parsed
    ({"size": 10, "mtime": 1.0}, (12, 1.0), False, True),   # grew
    ({"size": 10, "mtime": 1.0}, (10, 2.0), False, True),   # touched
    ({"size": None, "mtime": None}, (10, 1.0), False, True),  # had errors last time
    ({"size": 10, "mtime": 1.0}, (10, 1.0), True, True),    # --full
])
def test_needs_read(ckpt, unit_fp, full, expected):
    unit = Unit(agent="codex", key="k", path=Path("x"), size=unit_fp[0], mtime=unit_fp[1])
    assert needs_read(unit, ckpt, full) is expected


@pytest.mark.parametrize("old,start,newest,clean,expected", [
    (None, 100.0, 50.0, True, 100.0),     # first scan: the later of scan start and newest message
    (None, 100.0, 150.0, True, 150.0),
    (None, 100.0, None, True, 100.0),
    (100.0, 200.0, 150.0, True, 150.0),   # later scans: newest message seen
    (100.0, 200.0, 90.0, True, 100.0),    # never moves back
    (100.0, 200.0, 150.0, False, 100.0),  # errors / incomplete / stopped: stays
    (None, 100.0, 150.0, False, None),
])
def test_next_cursor(old, start, newest, clean, expected):
    assert next_cursor(old, scan_start=start, newest=newest, clean=clean) == expected


def test_bad_input_counted_rest_imported(mem):
    home = Path(os.environ["HOME"])
    d = home / ".claude/projects/-w-bad"
    d.mkdir(parents=True)
    good = (_claude_line("g", "u1", "user", "good question", "2026-01-01T10:00:00Z")
            + _claude_line("g", "a1", "assistant", "good answer", "2026-01-01T10:00:01Z", "u1"))
    (d / "good.jsonl").write_text(good)
    (d / "bad.jsonl").write_bytes(b"{not json\n" + b"\xff\xfe garbage\n" + good.replace('"g"', '"b"').replace('"u1"', '"u9"').replace('"a1"', '"a9"').encode()
                                  + b'{"type": "user", "trunc')
    res = run_sync(mem, ["claude-code"])["sources"][0]
    assert res["turns_added"] == 2
    assert res["failed"] >= 2 and res["errors"]
    assert res["cursor"] is None
    # the half-written last line may still complete: that file is read again, nothing is duplicated
    again = run_sync(mem, ["claude-code"])["sources"][0]
    assert again["units_read"] == 1 and again["turns_added"] == 0
    # once the file is complete, permanent problems are not re-read forever and the cursor moves
    with (d / "bad.jsonl").open("ab") as fh:
        fh.write(b'": 1}\n')
    run_sync(mem, ["claude-code"])
    final = run_sync(mem, ["claude-code"])["sources"][0]
    assert final["units_read"] == 0 and final["failed"] == 0 and final["cursor"] is not None


def test_locked_sqlite_source_is_reported(mem):
    home = Path(os.environ["HOME"])
    dst = home / ".local/share/opencode/opencode.db"
    dst.parent.mkdir(parents=True)
    shutil.copy2(FIXTURES / "opencode/opencode.db", dst)
    locker = sqlite3.connect(dst, isolation_level=None)
    locker.execute("PRAGMA locking_mode=EXCLUSIVE")
    locker.execute("BEGIN EXCLUSIVE")
    try:
        res = run_sync(mem, ["opencode"])["sources"][0]
        assert res["failed"] >= 1 and res["errors"], res
        assert res["cursor"] is None
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    res = run_sync(mem, ["opencode"])["sources"][0]
    assert res["turns_added"] == 1 and res["failed"] == 0


def test_pause_resume_stop(mem):
    home = Path(os.environ["HOME"])
    # enough history that a stop lands mid-way: a sync writes several files' turns per transaction
    # (BATCH turns), so the first turns appear only once the first group is written
    write_claude_history(home / ".claude/projects", sessions=250, turns=10)
    control = SyncControl()
    events: list[dict] = []
    control.pause()
    t = threading.Thread(target=lambda: events.append(run_sync(mem, ["claude-code"], control=control)))
    t.start()
    time.sleep(0.5)
    assert not events and mem.stats()["turns"] == 0, "paused before the first unit"
    control.resume()
    deadline = time.time() + 60
    while mem.stats()["turns"] == 0 and time.time() < deadline:
        time.sleep(0.01)
    control.stop()
    t.join(60)
    res = events[0]
    assert res["stopped"]
    partial = mem.stats()["turns"]
    assert 0 < partial < 2500
    assert res["sources"][0]["cursor"] is None
    final = run_sync(mem, ["claude-code"])
    assert not final["stopped"]
    assert mem.stats()["turns"] == 2500


KILLER = r"""
import remem, sys
from remem.sources.sync import run_sync
run_sync(remem.open(), ["claude-code"])
"""


def test_kill_9_midway_then_resume_has_no_duplicates_or_losses(mem):
    home = Path(os.environ["HOME"])
    write_claude_history(home / ".claude/projects", sessions=150, turns=20)
    proc = subprocess.Popen([sys.executable, "-c", KILLER], stderr=subprocess.PIPE)
    deadline = time.time() + 120
    while time.time() < deadline:
        n = mem.store.conn.execute("SELECT count(*) FROM turns").fetchone()[0]
        if n >= 200 or proc.poll() is not None:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    killed_at = mem.store.conn.execute("SELECT count(*) FROM turns").fetchone()[0]
    assert killed_at > 0
    res = run_sync(mem, ["claude-code"])
    assert mem.stats()["turns"] == 3000
    assert mem.store.conn.execute("SELECT count(DISTINCT source_key) FROM turns").fetchone()[0] == 3000
    assert res["total"]["turns_added"] == 3000 - killed_at


def test_cli_sync_and_sources(cli, agent_home):
    r = cli("sources", "--json")
    assert r.returncode == 0, r.stderr
    names = {s["name"] for s in json.loads(r.stdout)}
    assert {"claude-code", "codex", "gemini", "cursor"} <= names
    r = cli("sync", "codex", "gemini", "--json")
    out = json.loads(r.stdout)
    assert {s["source"] for s in out["sources"]} == {"codex", "gemini"}
    assert KEYS <= set(out["total"])
    again = json.loads(cli("sync", "--json").stdout)
    assert {s["source"] for s in again["sources"]} >= {"claude-code", "codex"}
    assert sum(s["turns_added"] for s in again["sources"] if s["source"] in ("codex", "gemini")) == 0
    r = cli("sync", "--full")
    assert r.returncode != 0 and b"--yes" in r.stderr
    listed = json.loads(cli("sources", "--json").stdout)
    gem = next(s for s in listed if s["name"] == "gemini")
    assert gem["last_sync_at"] is not None and gem["units"] == 1

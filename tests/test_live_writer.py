"""Live captures never wait for a busy database (``server/livewrite.py``): while another writer (an
import, a sync) holds the write lock, the daemon queues a capture in arrival order and a caller that
asked not to wait gets its answer at once; the queue is written once the lock frees, and on shutdown.
A turn's opening capture never reopens the finished turn, whatever order the two arrive in. Both
engines: SQLite's lock is a ``BEGIN IMMEDIATE`` on a second connection, PostgreSQL's a table lock."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import remem
from remem.model import TurnIn
from remem.server.livewrite import LiveWriter
from remem.store.errors import Locked

pytest.importorskip("fastapi")
from remem.server.testing import Daemon  # noqa: E402

DAEMON_ENV = {"REMEM_AUTO_SYNC": "0", "REMEM_LEARN_DELAY": "3600"}


@contextlib.contextmanager
def write_lock(home: Path) -> Iterator[None]:
    """Hold the database's write lock from outside remem, as another process's import would."""
    url = os.environ.get("REMEM_DATABASE_URL", "")
    if url:
        import psycopg

        with psycopg.connect(url) as conn, conn.transaction():
            conn.execute("LOCK TABLE turns IN EXCLUSIVE MODE")
            yield
        return
    conn = sqlite3.connect(str(home / "remem.db"), isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        yield
        conn.execute("ROLLBACK")
    finally:
        conn.close()


def turn(key: str, *, reply: str = "", open_: bool = False, request: str = "rename the parser module") -> TurnIn:
    return TurnIn(request=request, reply=reply, agent="claude-code", project="/srv/shop", session_id="s1",
                  source_key=f"claude-code:s1:{key}", status="cancelled" if open_ else "succeeded",
                  started_at=time.time() - 5, ended_at=None if open_ else time.time(),
                  tags=["live", "open"] if open_ else ["live"])


def stored(mem: remem.Remem, key: str) -> dict | None:
    rows = [r for r in mem.list(limit=100) if r["source_key"].endswith(key)]
    return rows[0] if rows else None


def test_an_opening_capture_never_reopens_the_finished_turn(mem):
    done = mem.add_turns([turn("k1", reply="renamed it to tokens.py")], live=True).results[0]
    late = mem.add_turns([turn("k1", open_=True)], live=True).results[0]
    row = stored(mem, "k1")
    assert (done.status, late.status, late.id) == ("added", "duplicate", done.id)
    assert row["reply"] == "renamed it to tokens.py" and row["status"] == "succeeded" and "open" not in row["tags"]
    # the other way round is the normal life of a turn: opened, then finished
    mem.add_turns([turn("k2", open_=True)], live=True)
    mem.add_turns([turn("k2", reply="done")], live=True)
    assert stored(mem, "k2")["reply"] == "done" and "open" not in stored(mem, "k2")["tags"]


def test_a_write_that_must_not_wait_meets_the_lock_and_writes_nothing(mem, remem_home):
    with write_lock(remem_home):
        with pytest.raises(Locked):
            mem.add_turns([turn("k1", open_=True)], live=True, wait=False)
    assert stored(mem, "k1") is None
    assert mem.add_turns([turn("k1", open_=True)], live=True, wait=False).results[0].status == "added"


def test_captures_queue_in_order_while_the_lock_is_held(mem, remem_home):
    writer = LiveWriter(mem)
    waited: dict = {}

    def finished_turn() -> None:
        waited["result"] = writer.write([turn("k2", reply="second turn done", request="add the tests")])

    try:
        with write_lock(remem_home):
            t0 = time.monotonic()
            assert writer.write([turn("k1", open_=True)], wait=False) is None       # answered, not written
            assert writer.write([turn("k1", reply="renamed it")], wait=False) is None   # queued behind it
            answered = time.monotonic() - t0
            blocked = threading.Thread(target=finished_turn)
            blocked.start()
            blocked.join(0.5)
            assert blocked.is_alive() and "result" not in waited      # a caller that waits, waits
            assert writer.pending() == 3 and stored(mem, "k1") is None
        blocked.join(30)
        assert waited["result"].results[0].status == "added"
        deadline = time.monotonic() + 30
        while writer.pending() and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        assert writer.close() == 0
    row = stored(mem, "k1")
    assert row["reply"] == "renamed it" and "open" not in row["tags"]   # the end was not overtaken
    assert stored(mem, "k2")["reply"] == "second turn done"
    assert writer.queued_total == 3 and answered < 5


def test_a_free_lock_writes_at_once_and_close_writes_what_waits(mem, remem_home):
    writer = LiveWriter(mem)
    got = writer.write([turn("k1", reply="at once")], wait=False)
    assert got is not None and got.results[0].status == "added" and writer.queued_total == 0
    with write_lock(remem_home):
        assert writer.write([turn("k2", reply="after the import")], wait=False) is None
        closer = threading.Thread(target=writer.close)
        closer.start()                          # shutdown begins while the lock is still held
        time.sleep(0.3)
    closer.join(30)
    assert not closer.is_alive() and writer.pending() == 0
    assert stored(mem, "k2")["reply"] == "after the import"


def test_the_turn_start_hook_does_not_wait_for_a_busy_database(mem, remem_home, tmp_path):
    mem.add_turns([turn(f"old{i}", reply=f"the parser keeps tokens in tokens.py ({i})",
                        request=f"where does the parser keep its tokens {i}") for i in range(3)])
    mem.close()
    with Daemon(remem_home, env=DAEMON_ENV) as d:
        env = {**os.environ, "REMEM_PORT": str(d.port), "REMEM_HOOK_TIMEOUT": "30", "HOME": str(tmp_path)}
        payload = {"session_id": "live-1", "cwd": "/srv/shop", "transcript_path": "",
                   "prompt": "where does the parser keep its tokens"}
        with write_lock(remem_home):
            hook = subprocess.Popen([sys.executable, "-m", "remem.hook", "claude-code", "UserPromptSubmit"],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
            out, err = hook.communicate(json.dumps(payload).encode(), timeout=60)
            with remem.open(remem_home, readonly=True) as m:
                during = [r for r in m.list(limit=50) if r["session_id"] == "live-1"]
        assert hook.returncode == 0 and err == b"", err     # it returned while the lock was still held …
        assert "tokens.py" in out.decode()                  # … with its packet
        assert during == []                                 # its capture waited in the daemon, not in it
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with remem.open(remem_home, readonly=True) as m:
                rows = [r for r in m.list(limit=50) if r["session_id"] == "live-1"]
            if rows:
                break
            time.sleep(0.1)
        status = d.get("/api/v1/status").json()
    assert rows and rows[0]["request"] == payload["prompt"] and "open" in rows[0]["tags"]
    assert status["live_captures"]["queued_since_start"] == 1 and status["live_captures"]["queued_now"] == 0
    hooks_log = (remem_home / "logs" / "hooks.log").read_text()
    assert "kind=turn_start via=daemon" in hooks_log, hooks_log

"""An import's turns prepared in worker processes (ingest/workers.py): the same rows as the writer
alone makes, on both paths (forked from a one-thread writer, or from a forkserver when the writer
runs threads), a pool that breaks halfway loses nothing, a bad turn fails the write as it does
without workers; and a substring search finds what an import left to the trigram job."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import ON_POSTGRES
from remem.ingest import workers
from remem.ingest.normalize import InputError
from remem.model import ToolCall, TurnIn

TRACE = """Traceback (most recent call last):
  File "/srv/app/billing/retry.py", line 88, in charge
    return gateway.submit(invoice, idempotency_key=key)
KeyError: 'customer_id'
"""


def turns(n: int, tag: str = "t") -> list[TurnIn]:
    out = []
    for i in range(n):
        zh = i % 5 == 0
        request = (f"重试逻辑在 billing/retry_{i}.py 里失败了，帮我看看数据库连接池" if zh
                   else f"why does test_retry_{i} fail in billing/retry.py with KeyError?")
        out.append(TurnIn(
            request=request, reply=f"The retry path reads customer_id before the lookup (case {i}). "
                                   f"Fixed in RetryPolicy.charge_{i}; token AKIAIOSFODNN7EXAMPLE removed.",
            actions=[ToolCall(name="Bash", input=f"pytest tests/test_retry.py::test_case_{i} -x",
                              output=TRACE * (1 + i % 4) + "password=hunter2hunter2\n" + "x" * (i * 37 % 3000),
                              is_error=i % 3 == 0),
                     ToolCall(name="Read", input=f"billing/retry_{i}.py", output="def charge(invoice):\n    ...\n")],
            owner="default", agent="claude-code", project="/home/dev/billing-api", session_id=f"{tag}-s{i // 10}",
            source_key=f"{tag}-{i}", started_at=1_760_000_000.0 + i, ended_at=1_760_000_030.0 + i))
    return out


def snapshot(mem) -> dict:
    db = mem.store.conn
    rows = db.execute("SELECT id, request, reply, actions, actions_json, status, cjk, error_sigs, size, "
                      "content_hash, request_hash, started_at FROM turns ORDER BY id").fetchall()
    ments = db.execute("SELECT m.turn_id, e.kind, e.name FROM entity_mentions m JOIN entities e ON e.id = m.entity_id "
                       "ORDER BY 1, 2, 3").fetchall()
    return {"rows": [tuple(r) for r in rows], "mentions": [tuple(r) for r in ments]}


pytestmark = pytest.mark.skipif(ON_POSTGRES, reason="SQLite's rows and trigram backlog; the pool only prepares "
                                "rows (engine-blind: the sync tests run it on PostgreSQL too), and PostgreSQL's "
                                "pg_trgm index is kept at write, so it has no backlog to search")


def write(mem, batch, pool=None):
    from remem.ingest.pipeline import persist

    return persist(mem.store, batch, defer_index=True, learn_after=None, pool=pool)


@pytest.fixture
def two(tmp_path):
    import remem

    # a writer forks its workers only when it runs no other thread (as the CLI does): a thread an
    # earlier test of this process left behind (a fake server blocked in accept()) changes the path;
    # remem's process-wide pools (the vector scan's, "remem-v…") are meant to stay
    left = [t.name for t in threading.enumerate() if t is not threading.main_thread()
            and not t.name.startswith("remem-v")]
    assert not left, f"threads left behind by earlier tests: {left}"
    a, b = remem.open(tmp_path / "a"), remem.open(tmp_path / "b")
    yield a, b
    a.close()
    b.close()


def _fork_run(home: str) -> dict:
    """The same 150 turns written by the writer alone and with a forked pool (in a one-thread process)."""
    import remem

    serial, parallel = remem.open(Path(home) / "a"), remem.open(Path(home) / "b")
    try:
        batch = turns(150)
        write(serial, batch)
        pool = workers.PreparePool(2)
        try:
            res = write(parallel, batch, pool)
        finally:
            pool.close()
        a, b = snapshot(serial), snapshot(parallel)
        return {"threads": threading.active_count(), "chunks": pool.chunks, "status": [r.status for r in res.results],
                "same": a == b, "rows": len(a["rows"]), "mentions": len(a["mentions"]),
                "secrets": "hunter2" in str(b) or "AKIAIOSFODNN7EXAMPLE" in str(b)}
    finally:
        serial.close()
        parallel.close()


def test_workers_make_the_rows_the_writer_alone_makes(tmp_path):
    """Run in a process of its own: the writer forks its workers only when it runs no other thread,
    and earlier tests of this test process may have started remem's process-wide pools (the vector
    scan's)."""
    code = (f"import json, sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
            f"import test_import_workers as t; print(json.dumps(t._fork_run({str(tmp_path)!r})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["chunks"]["workers"] >= 5 and got["chunks"]["writer"] == 0   # forked at once: one-thread writer
    assert got["status"] == ["added"] * 150
    assert got["same"] and got["rows"] == 150 and got["mentions"] > 300
    assert not got["secrets"]   # redacted in the workers


def test_a_writer_with_threads_gets_its_workers_from_a_forkserver(two):
    serial, parallel = two
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, daemon=True)   # a daemon's threads: no fork of this process
    other.start()
    pool = workers.PreparePool(2)
    try:
        write(serial, turns(100, "a") + turns(100, "b"))
        write(parallel, turns(100, "a"), pool)        # the writer prepares while the workers start
        assert pool.chunks["writer"] >= 1
        deadline = time.monotonic() + 60
        while pool._ready([]) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        write(parallel, turns(100, "b"), pool)
    finally:
        stop.set()
        pool.close()
    assert pool.chunks["workers"] >= 1
    assert snapshot(serial) == snapshot(parallel)
    from multiprocessing import forkserver

    assert forkserver._forkserver._forkserver_pid is None     # stopped with its pool: the daemon keeps no ~100 MB


def test_a_pool_that_breaks_halfway_loses_no_turn(two):
    serial, parallel = two
    batch = turns(240)
    write(serial, batch)
    pool = workers.PreparePool(2)
    seen = 0
    real = pool.prepare

    def prepare(*a, **kw):       # kill the workers once the writer has its first rows
        nonlocal seen
        for item in real(*a, **kw):
            seen += 1
            if seen == workers.CHUNK + 1:
                for p in list(pool._ex._processes.values()):  # type: ignore[union-attr]
                    os.kill(p.pid, signal.SIGKILL)
            yield item

    pool.prepare = prepare  # type: ignore[method-assign]
    deadline = time.monotonic() + 60   # forked at once, or from a forkserver when this process runs threads
    while pool._ready(batch) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        res = write(parallel, batch, pool)
    finally:
        pool.close()
    assert len([r for r in res.results if r.status == "added"]) == 240
    assert snapshot(serial) == snapshot(parallel)
    assert pool.chunks["workers"] >= 1 and pool.chunks["writer"] >= 1   # the rest was prepared here


def test_a_bad_turn_fails_the_write_as_without_workers(two):
    _, mem = two
    batch = turns(100)
    batch[70].owner = "   "
    pool = workers.PreparePool(2)
    try:
        with pytest.raises(InputError, match="owner is empty"):
            write(mem, batch, pool)
    finally:
        pool.close()
    assert mem.store.conn.execute("SELECT count(*) FROM turns").fetchone()[0] == 0   # all or nothing


def test_small_writes_and_no_workers_never_start_a_pool(two):
    _, mem = two
    pool = workers.PreparePool(2)
    write(mem, turns(workers.MIN_TURNS - 1), pool)
    assert pool._ex is None and pool._starting is None
    off = workers.PreparePool(0)
    write(mem, turns(100, "z"), off)
    assert off._ex is None and off.chunks == {"workers": 0, "writer": 0}
    assert workers.auto_workers(0) == 0 and workers.auto_workers(3) == 3
    assert 0 <= workers.auto_workers(-1) <= workers.MAX_WORKERS


def test_a_sync_imports_the_same_with_and_without_workers(tmp_path, monkeypatch):
    """The real sync engine over Claude Code files of real-shaped turns, workers on and off."""
    import remem
    from remem.bench.realistic import write_real_history
    from remem.sources.sync import run_sync

    home = tmp_path / "home"
    write_real_history(home, turns=240)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    snaps = []
    for n in ("0", "2"):
        monkeypatch.setenv("REMEM_INGEST_WORKERS", n)
        with remem.open(tmp_path / f"r{n}") as mem:
            res = run_sync(mem, ["claude-code", "codex"])
            assert res["total"]["turns_added"] == 240 and not res["total"]["errors"]
            assert mem._pool is None          # the sync's workers are gone with it
            snaps.append(snapshot(mem))
    assert snaps[0] == snaps[1]


def test_a_substring_search_finds_turns_the_trigram_job_has_not_indexed(mem):
    """An import leaves the trigram index to the background job; a partial identifier or a CJK run
    is found meanwhile, and once indexed the same turn is found once."""
    mem.add_turns([TurnIn(request=f"rename LoadBalancerSettings{i} in the gateway", owner="default", agent="codex",
                          source_key=f"old{i}") for i in range(3)])
    mem.index_pending(embed=False)
    mem.add_turns([TurnIn(request="配置迁移脚本 fails on ReconnectBackoffPolicy", owner="default", agent="codex",
                          source_key="new", actions=[ToolCall(name="Bash", input="grep -rn ExponentialJitter src/")])],
                  defer_index=True)
    new_id = mem.store.conn.execute("SELECT id FROM turns WHERE source_key = 'new'").fetchone()[0]
    assert mem.store.conn.execute("SELECT trgm FROM turns WHERE id = ?", (new_id,)).fetchone()[0] == 0
    text = mem.store.text
    scope = mem.scope()
    for term in ("onnectBackoffPol", "迁移脚本", "exponentialjit"):
        assert [h[0] for h in text.search_substrings(scope, [term], 10)] == [new_id], term
    both = text.search_substrings(scope, ["LoadBalancerSett", "ReconnectBack"], 10)
    assert new_id in [h[0] for h in both] and len(both) == 4
    assert text.search_substrings(mem.scope(owner="someone-else"), ["ReconnectBack"], 10) == []  # scoped
    mem.index_pending(embed=False)
    assert [h[0] for h in text.search_substrings(scope, ["onnectBackoffPol"], 10)] == [new_id]


@pytest.mark.skipif(ON_POSTGRES, reason="the trigram backlog scan is SQLite's")
def test_the_backlog_scan_starts_from_the_backlog_not_from_the_owners_turns(mem):
    """Every search with a substring term scans the backlog; led by the owner's index it read each
    of the owner's turns (13 ms at 100k with an empty backlog), led by the backlog it reads none."""
    mem.add_turns([TurnIn(request=f"rename LoadBalancerSettings{i} in the gateway", owner="default", agent="codex",
                          source_key=f"old{i}") for i in range(50)])
    mem.index_pending(embed=False)
    seen: list[str] = []
    mem.store.conn.set_trace_callback(seen.append)
    try:
        assert len(mem.store.text.search_substrings(mem.scope(), ["LoadBalancerSett"], 10)) == 10
    finally:
        mem.store.conn.set_trace_callback(None)
    (scan,) = [s for s in seen if "trgm = 0" in s]
    plan = [r[3] for r in mem.store.conn.execute("EXPLAIN QUERY PLAN " + scan)]
    assert any("turns_trgm_todo" in p for p in plan), plan
    assert any(p.startswith("SEARCH t USING INTEGER PRIMARY KEY") for p in plan), plan  # each turn by its rowid


KILLED_WRITER = """
import sys, time
from remem.ingest import workers
from remem.model import TurnIn
pool = workers.PreparePool(2)
turns = [TurnIn(request=f"fix billing/retry_{i}.py", owner="o", agent="a", source_key=f"k{i}") for i in range(100)]
kw = {"max_bytes": 1 << 21, "max_tool_output": 2000, "live": False, "now": time.time()}
list(pool.prepare(turns, kw, [None] * 100))
print(" ".join(str(p) for p in pool._ex._processes), flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as f:
            return "\\nState:\\tZ" not in f.read()
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc to see the workers end")
def test_a_writer_killed_with_kill_9_leaves_no_worker_behind():
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", KILLED_WRITER], stdout=subprocess.PIPE, text=True)
    try:
        pids = [int(p) for p in proc.stdout.readline().split()]      # type: ignore[union-attr]
        assert len(pids) == 2 and all(_alive(p) for p in pids)
    finally:
        proc.kill()
        proc.wait(30)
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(p) for p in pids)

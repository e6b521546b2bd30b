"""`hooks.timeout` (set with `remem config set`) drives the hook like `REMEM_HOOK_TIMEOUT` does —
the per-request timeout, the whole call's deadline and the wait for stdin — and the env var wins.
Through the real hook entry in a subprocess, with a daemon that accepts and never answers and a
database another writer keeps locked."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

CWD = "/home/alice/proj/shop"
PROMPT = {"session_id": "t-1", "cwd": CWD, "prompt": "Why does test_retry_backoff time out on CI again?"}


def hook(payload: dict | None, env: dict[str, str] | None = None) -> tuple[int, bytes, float]:
    """The real hook entry; ``payload=None`` keeps its stdin open and sends nothing."""
    full = {k: v for k, v in os.environ.items() if k != "REMEM_HOOK_TIMEOUT"}
    full.update(env or {})
    cmd = [sys.executable, "-m", "remem.hook", "claude-code", "UserPromptSubmit"]
    t0 = time.perf_counter()
    if payload is not None:
        r = subprocess.run(cmd, input=json.dumps(payload).encode(), capture_output=True, env=full, timeout=90)
        return r.returncode, r.stdout, time.perf_counter() - t0
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=full)
    try:
        assert p.stdout is not None
        out = p.stdout.read()            # until the hook exits, stdin still open
        p.wait(timeout=90)
    finally:
        if p.stdin is not None:
            p.stdin.close()
    return p.returncode, out, time.perf_counter() - t0


def log_of(home: Path) -> str:
    p = home / "logs" / "hooks.log"
    return p.read_text() if p.exists() else ""


@pytest.fixture
def silent_daemon(remem_home):
    """A local socket that accepts connections and never answers, with the home's token in place."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                held.append(srv.accept()[0])
            except OSError:
                return

    th = threading.Thread(target=accept, daemon=True)
    th.start()
    remem_home.mkdir(parents=True, exist_ok=True)
    (remem_home / "token").write_text("t0ken\n")
    yield srv.getsockname()[1]
    with contextlib.suppress(OSError):   # wakes the accept(): close() alone leaves the thread behind
        srv.shutdown(socket.SHUT_RDWR)
    srv.close()
    th.join(5)
    for c in held:
        c.close()


@pytest.mark.sqlite_only("SQLite's one write lock held by another process")
def test_config_hooks_timeout_sets_the_deadline_of_a_hook_stuck_on_a_locked_database(cli, mem, remem_home,
                                                                                   silent_daemon):
    mem.add("test_retry_backoff timed out on CI because the sandbox answers in 7 s; timeout raised to 15 s",
            agent="codex", project=CWD)
    assert cli("config", "set", "hooks.timeout", "0.05").returncode == 0
    lock = sqlite3.connect(mem.config.db_path, timeout=1)
    lock.execute("BEGIN IMMEDIATE")          # another writer holds the database (busy_timeout is 30 s)
    try:
        code, out, took = hook(PROMPT, {"REMEM_PORT": str(silent_daemon)})
    finally:
        lock.rollback()
        lock.close()
    assert code == 0
    log = log_of(remem_home)
    # 2 × 0.05 s + 10 s of slack; with the default 8 s it would be 26 s
    assert "exceeded its 10.1s budget" in log, log
    assert 9 < took < 18, took


def test_the_env_var_wins_over_hooks_timeout_and_the_budget_is_logged(cli, mem, remem_home):
    assert cli("config", "set", "hooks.timeout", "0.05").returncode == 0
    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    port = str(free.getsockname()[1])
    free.close()
    code, _, _ = hook(PROMPT, {"REMEM_PORT": port})
    assert code == 0 and "budget=10.1s" in log_of(remem_home), log_of(remem_home)
    code, _, _ = hook({**PROMPT, "session_id": "t-2"}, {"REMEM_PORT": port, "REMEM_HOOK_TIMEOUT": "2"})
    assert code == 0 and "budget=14s" in log_of(remem_home), log_of(remem_home)
    assert cli("config", "set", "hooks.timeout", "45").returncode == 0
    code, _, _ = hook({**PROMPT, "session_id": "t-3"}, {"REMEM_PORT": port})
    assert code == 0 and "budget=55s" in log_of(remem_home)              # capped under the agents' 60 s


def test_hooks_timeout_also_shortens_the_wait_for_a_payload_that_never_comes(cli, remem_home):
    assert cli("config", "set", "hooks.timeout", "0.5").returncode == 0
    code, out, took = hook(None)
    assert code == 0 and out == b""
    assert "no complete input on stdin within 1s" in log_of(remem_home), log_of(remem_home)
    assert took < 3.5, took                  # the default waits 5 s


def test_remem_config_set_reaches_the_hook_through_its_json_mirror(cli, mem, remem_home):
    """`remem config set` writes hook-settings.json (0600, no secrets) beside config.yaml; the hook
    reads it with json alone."""
    assert cli("config", "set", "hooks.timeout", "3.5").returncode == 0
    mirror = remem_home / "hook-settings.json"
    assert mirror.stat().st_mode & 0o777 == 0o600
    data = json.loads(mirror.read_text())
    assert data["values"]["hooks"]["timeout"] == 3.5 and data["specs"]["hooks.timeout"]["env"] == "REMEM_HOOK_TIMEOUT"
    assert (remem_home / "token").read_text().strip() not in mirror.read_text()
    code = ("import sys, json; from pathlib import Path; from remem.integrations.runtime import request_timeout, "
            "budget_seconds; h = Path(sys.argv[1]); print(json.dumps([request_timeout(h, {}), budget_seconds({}, h), "
            "'pydantic' in sys.modules, 'yaml' in sys.modules]))")
    r = subprocess.run([sys.executable, "-c", code, str(remem_home)], capture_output=True, text=True, timeout=60)
    assert json.loads(r.stdout) == [3.5, 17.0, False, False], r.stderr


@pytest.mark.parametrize("text,expected", [
    ("hooks:\n  session_digest: true\n  timeout: 5.0\nowner: default\n", 5.0),
    ("owner: me   # mine\nhooks:\n  timeout: 2   # seconds\n", 2.0),
    ("hooks: {session_digest: false, timeout: 3}\n", 3.0),
    ("hooks:\n  nested:\n    timeout: 9\n  session_digest: true\n", 8.0),   # not hooks.timeout
    ("agents:\n  codex:\n    isolated: true\nhooks:\n    timeout: '4'\n", 4.0),
    ("server:\n  port: 7078\n", 8.0),
    ("", 8.0),
])
def test_a_config_yaml_edited_by_hand_reaches_the_hook(mem, remem_home, text, expected):
    """The mirror records config.yaml's size and mtime: a file changed behind it is read in full once
    and the mirror rewritten, so the hook never acts on a stale value."""
    from remem import hook_settings
    from remem.integrations.runtime import request_timeout

    assert hook_settings.fresh(remem_home)              # Remem.init wrote it
    path = remem_home / "config.yaml"
    path.write_text(text)
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 5_000_000))
    assert not hook_settings.fresh(remem_home)
    assert request_timeout(remem_home, {}) == expected
    assert hook_settings.fresh(remem_home)              # … and rewrote it
    assert request_timeout(remem_home, {"REMEM_HOOK_TIMEOUT": "100"}) == 45.0
    assert request_timeout(remem_home, {"REMEM_HOOK_TIMEOUT": "soon"}) == expected   # fail open: the file's

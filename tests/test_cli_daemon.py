"""``remem search`` / ``recall`` / ``get`` ask the running daemon, print what the direct path
prints, and fall back to it when the daemon is down, slow or answers an error."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import socket
import threading
import time
from pathlib import Path

import pytest

from conftest import run_cli
from remem import config as configmod
from remem.bench.cli_speed import real_turns
from remem.core import Remem
from remem.server.testing import Daemon, free_port, sample_turns

QUERIES = ["KeyError in the checkout test", "为什么 CI 上的构建这么慢", "json config default encoding"]


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """A store of a few hundred related turns (stdlib code, test logs, tracebacks, Chinese) in three
    owners, every turn embedded, an isolated agent reading one extra owner."""
    home = tmp_path_factory.mktemp("clidaemon") / "home"
    # the learn job these writes queue runs at once (not 30 s later): the fixture waits for an idle queue
    env = {**os.environ, "REMEM_EMBEDDING_MODEL": "hash", "REMEM_LEARN_DELAY": "0"}
    mem = Remem(home, env=env)
    turns = real_turns(240) + sample_turns(60, now=time.time() - 40 * 86400)
    for i, t in enumerate(turns):
        if i < 240:  # weeks old: "… ago" in a packet reads the same a minute later
            t.started_at -= 30 * 86400
            t.ended_at = (t.ended_at or t.started_at) - 30 * 86400
        t.owner = ("default", "alice", "agent:codex")[i % 3] if i % 4 == 0 else "default"
    mem.add_turns(turns)
    configmod.save_file(mem.config.path, {"owner": "default",
                                          "agents": {"codex": {"isolated": True, "read_owners": ["alice"]}}})
    mem.close()
    mem = Remem(home, env=env)
    while mem.embed_pending():
        pass
    mem.close()
    with Daemon(home) as d:  # its background jobs finish the deferred indexes first
        deadline = time.monotonic() + 120
        while d.get("/api/v1/stats").json()["jobs_pending"] and time.monotonic() < deadline:
            time.sleep(0.2)
    return home


def cli(home: Path, *args: str, **env: str) -> str:
    p = run_cli(*args, env={"REMEM_HOME": str(home), **env})
    assert p.returncode == 0, p.stderr.decode()
    return p.stdout.decode()


def plain(out: str) -> str:
    """Output without the channels' timings (they differ between any two runs), scores to three
    decimals (the recency boost moves with the clock between two runs a moment apart)."""
    out = re.sub(r'"ms": [0-9.e-]+', '"ms": 0', out)
    return re.sub(r"\d+\.\d{4,}(?:e-?\d+)?", lambda m: f"{float(m.group()):.3f}", out)


def daemon_requests(home: Path) -> int:
    log = home / "logs" / "daemon.log"
    text = log.read_text(encoding="utf-8") if log.exists() else ""
    return len(re.findall(r"(POST /api/v1/memories/search|POST /api/v1/recall/turn-start|GET /api/v1/memories/t_\w+)"
                          r" 200", text))


def commands(home: Path) -> list[list[str]]:
    some = json.loads(cli(home, "search", QUERIES[0], "--json", REMEM_CLI_DAEMON="0"))["results"][0]["id"]
    theirs = json.loads(cli(home, "search", QUERIES[0], "--as", "codex", "--json",
                            REMEM_CLI_DAEMON="0"))["results"][0]["id"]
    out = []
    for q in QUERIES:
        out += [["search", q], ["search", q, "--json"], ["search", q, "--explain"], ["search", q, "--as", "codex", "--json"],
                ["search", q, "--owner", "alice"], ["search", q, "--project", "/home/dev/shop", "-k", "3"]]
    out += [["get", some], ["get", some, "--json"], ["get", theirs, "--as", "codex", "--json"]]
    # last: a packet counts its items as read (with the time), which ranks later reads a little
    return out + [["recall", QUERIES[0]], ["recall", QUERIES[1], "--json"], ["recall", QUERIES[2], "--as", "codex"],
                  ["recall", QUERIES[0], "--agent", "codex", "--json", "--budget", "1200"],
                  ["recall", QUERIES[1], "--explain"]]


def twin(home: Path, tmp_path: Path) -> Path:
    """An identical copy of ``home``: every search and recall counts its hits (access counts
    rank later reads), so the direct and the daemon run each start from the same state."""
    copy = tmp_path / "twin"
    shutil.copytree(home, copy, ignore=shutil.ignore_patterns("daemon.lock", "logs"))
    return copy


@pytest.mark.sqlite_only("compares two copies of the home's SQLite file")
def test_same_answers_with_and_without_the_daemon_and_the_daemon_answers(home, tmp_path, monkeypatch):
    # a busy machine (the suite runs in parallel) must not send a request down the fallback path:
    # that the CLI falls back on a slow daemon is tested below, here every answer must be the daemon's
    monkeypatch.setenv("REMEM_CLI_TIMEOUT", "30")
    cmds = commands(home)
    alone = twin(home, tmp_path)
    direct, via = [], []
    with Daemon(home):
        before = daemon_requests(home)
        for c in cmds:  # each right after the other: scores move with the clock
            direct.append(plain(cli(alone, *c)))
            via.append(plain(cli(home, *c)))
        deadline = time.time() + 5  # the request log line is written as the response ends
        while daemon_requests(home) - before < len(cmds) and time.time() < deadline:
            time.sleep(0.1)
        used = daemon_requests(home) - before
    differ = [" ".join(c) for c, a, b in zip(cmds, direct, via, strict=True) if a != b]
    assert not differ, f"with the daemon these differ: {differ}"
    assert all(a.strip() for a in direct)
    assert used == len(cmds), f"the daemon answered {used} of {len(cmds)} commands"
    # the daemon is down now: the lock is gone, the CLI runs directly and prints the same
    assert [plain(cli(home, *c)) for c in cmds[:8]] == [plain(cli(alone, *c)) for c in cmds[:8]]


class FakeDaemon:
    """Holds the home's daemon lock (as a live daemon does) and listens on a port that never
    answers (``mode="silent"``) or answers HTTP 500 (``mode="error"``)."""

    def __init__(self, home: Path, mode: str) -> None:
        self.home, self.mode = home, mode
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.conns: list[socket.socket] = []

    def __enter__(self) -> FakeDaemon:
        self.fd = os.open(self.home / "daemon.lock", os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, json.dumps({"pid": os.getpid(), "host": "127.0.0.1", "port": self.port}).encode(), 0)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()
        return self

    def _serve(self) -> None:
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(c)
            if self.mode == "error":
                c.recv(65536)
                c.sendall(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
                c.close()

    def __exit__(self, *exc: object) -> None:
        # close() alone leaves a thread blocked in accept() on Linux: shut the socket down to wake it
        # (a thread left behind makes later tests in this process think they run beside a daemon's)
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        self.thread.join(5)
        for c in self.conns:
            c.close()
        os.ftruncate(self.fd, 0)
        os.close(self.fd)


@pytest.mark.parametrize("mode", ["silent", "error"])
def test_a_slow_or_failing_daemon_falls_back_to_the_same_answer(home, tmp_path, mode):
    cmds = [["search", QUERIES[0], "--json"], ["recall", QUERIES[1]], ["search", QUERIES[2], "--as", "codex"]]
    alone = twin(home, tmp_path)
    direct = [plain(cli(alone, *c)) for c in cmds]
    with FakeDaemon(home, mode) as fake:
        t0 = time.monotonic()
        got = [plain(cli(home, *c, REMEM_CLI_TIMEOUT="0.5")) for c in cmds]
        took = time.monotonic() - t0
        # each command asks it first; a silent one trips the breaker, so the next ones skip it
        assert len(fake.conns) == (1 if mode == "silent" else len(cmds))
    assert got == direct
    assert took < len(cmds) * 0.5 + 30           # the wait for a silent daemon is bounded
    breaker = home / "hooks" / "daemon.down"
    assert breaker.exists() == (mode == "silent")
    breaker.unlink(missing_ok=True)


def test_a_dead_port_in_the_lock_falls_back(home, tmp_path):
    alone = twin(home, tmp_path)
    fd = os.open(home / "daemon.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps({"pid": os.getpid(), "host": "127.0.0.1", "port": free_port()}).encode(), 0)
    try:
        assert plain(cli(home, "search", QUERIES[0], "--json")) == plain(cli(alone, "search", QUERIES[0], "--json"))
    finally:
        os.ftruncate(fd, 0)
        os.close(fd)

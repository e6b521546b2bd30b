"""Daemon lifecycle: one per home, stale locks, stop, status, non-loopback rules, fast /health, restarts."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import httpx

from remem.server.testing import Daemon, free_port, sample_turns


def serve(home, *args, timeout=30, env=None):
    e = {**os.environ, "REMEM_HOME": str(home), "REMEM_AUTO_SYNC": "0", **(env or {})}
    return subprocess.run([sys.executable, "-m", "remem", "serve", *args], capture_output=True, text=True,
                          env=e, timeout=timeout)


def cli(home, *args, timeout=60):
    e = {**os.environ, "REMEM_HOME": str(home), "REMEM_AUTO_SYNC": "0"}
    return subprocess.run([sys.executable, "-m", "remem", *args], capture_output=True, text=True, env=e,
                          timeout=timeout)


def test_two_daemons_on_one_home(tmp_path):
    home = tmp_path / "remem"
    with Daemon(home) as first:
        pid = first.get("/health").json()["pid"]
        second = serve(home, "--port", str(free_port()))
        assert second.returncode == 0
        assert "already running" in second.stderr + second.stdout and str(pid) in second.stderr + second.stdout
        assert httpx.get(first.url + "/health").json()["pid"] == pid  # the first is untouched
        # same port, same home: also just "already running"
        assert serve(home, "--port", str(first.port)).returncode == 0
        st = cli(home, "status", "--json")
        data = json.loads(st.stdout)
        assert data["running"] and data["pid"] == pid and data["url"] == first.url
        assert data["embedder"]["configured"] == "hash" and data["embedder"]["runtime"] is None
        human = cli(home, "status").stdout
        assert human.startswith("remem is running at " + first.url)
        assert "\nembedder: hash (" in human


def test_stale_lock_is_recovered_and_stop_works(tmp_path):
    home = tmp_path / "remem"
    d = Daemon(home).start()
    d.proc.send_signal(signal.SIGKILL)
    d.proc.wait(10)
    assert json.loads((home / "daemon.lock").read_text())["pid"] == d.proc.pid  # left behind
    d2 = Daemon(home, port=d.port).start()
    try:
        assert d2.get("/health").json()["pid"] == d2.proc.pid
        log = (home / "logs" / "daemon.log").read_text()
        assert f"recovered a stale lock left by pid {d.proc.pid}" in log
        r = cli(home, "serve", "--stop")
        assert r.returncode == 0 and "stopped remem" in r.stdout
        assert d2.proc.wait(10) == 0
    finally:
        d2.stop()
    r = cli(home, "serve", "--stop")
    assert r.returncode == 0 and "not running" in r.stdout
    assert "not running" in cli(home, "status").stdout
    d3 = Daemon(home, port=d.port).start()      # `remem down`: what `remem up` started, stopped
    try:
        r = cli(home, "down")
        assert r.returncode == 0 and f"stopped remem (pid {d3.proc.pid})" in r.stdout
        assert d3.proc.wait(10) == 0
    finally:
        d3.stop()
    assert "not running" in cli(home, "down").stdout


def test_port_taken_by_another_program(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        r = serve(tmp_path / "remem", "--port", str(port))
    assert r.returncode == 1 and "Traceback" not in r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith(f"remem: error: port {port} is used by another program (")
    assert line.endswith(f", pid {os.getpid()}); use --port N or `remem config set server.port N`")


def test_up_with_its_port_taken_says_so_in_one_line(tmp_path):
    """`remem up` with server.port taken (from config.yaml, then from REMEM_PORT): one line naming the
    holder and the two ways out, exit 1, nothing imported; `--port` on `up` then starts it elsewhere."""
    home, user = tmp_path / "remem", tmp_path / "home"
    user.mkdir()
    env = {**os.environ, "REMEM_HOME": str(home), "HOME": str(user), "REMEM_AUTO_SYNC": "0"}
    env.pop("REMEM_PORT", None)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        taken = s.getsockname()[1]
        home.mkdir()
        (home / "config.yaml").write_text(f"server:\n  port: {taken}\n")
        for extra in ({}, {"REMEM_PORT": str(taken)}):
            if extra:
                (home / "config.yaml").write_text("owner: default\n")
            r = subprocess.run([sys.executable, "-m", "remem", "up"], capture_output=True, text=True,
                               env={**env, **extra}, timeout=90)
            assert r.returncode == 1, r.stdout + r.stderr
            assert "Traceback" not in r.stderr and "DaemonError" not in r.stderr
            lines = r.stderr.strip().splitlines()
            assert len(lines) == 1, lines
            assert lines[0].startswith(f"remem: error: port {taken} is used by another program (")
            assert f"pid {os.getpid()})" in lines[0]  # this test process holds it, and /proc says so
            assert lines[0].endswith("; use --port N or `remem config set server.port N`")
            assert "importing" not in r.stderr and "imported" not in r.stdout  # it stopped before the import
            assert not (home / "daemon.lock").exists() or not json.loads((home / "daemon.lock").read_text() or "{}")
        port = free_port()
        try:
            r = subprocess.run([sys.executable, "-m", "remem", "up", "--port", str(port), "--json"],
                               capture_output=True, text=True, env={**env, "REMEM_PORT": str(taken)}, timeout=90)
            assert r.returncode == 0, r.stderr
            out = json.loads(r.stdout)
            assert out["daemon"] == "started" and out["url"] == f"http://127.0.0.1:{port}"
            assert httpx.get(out["url"] + "/health").json()["pid"] == out["pid"]
        finally:
            subprocess.run([sys.executable, "-m", "remem", "serve", "--stop"], env=env, timeout=30)


def test_up_on_the_port_of_another_homes_daemon(tmp_path):
    with Daemon(tmp_path / "a") as a:
        pid = a.get("/health").json()["pid"]
        r = cli(tmp_path / "b", "up", "--port", str(a.port), "--no-import")
        assert r.returncode == 1 and "Traceback" not in r.stderr
        assert r.stderr.strip() == (f"remem: error: port {a.port} is used by the remem daemon of another home "
                                    f"(pid {pid}); use --port N or `remem config set server.port N`")


def test_other_home_on_same_port(tmp_path):
    with Daemon(tmp_path / "a") as a:
        r = serve(tmp_path / "b", "--port", str(a.port))
        assert r.returncode == 1 and "another home" in r.stderr


def test_non_loopback_needs_explicit_host_and_token(tmp_path):
    home = tmp_path / "remem"
    r = serve(home, "--host", "0.0.0.0", "--port", str(free_port()))
    assert r.returncode == 2 and "without a token" in r.stderr
    assert not (home / "token").exists()
    home.mkdir(exist_ok=True)
    (home / "config.yaml").write_text("server:\n  host: 0.0.0.0\n")
    r = serve(home, "--port", str(free_port()))
    assert r.returncode == 2 and "explicit --host" in r.stderr
    (home / "config.yaml").write_text("owner: default\n")
    assert cli(home, "init").returncode == 0
    os.chmod(home / "token", 0o644)
    r = serve(home, "--host", "0.0.0.0", "--port", str(free_port()))
    assert r.returncode == 2 and "readable by others" in r.stderr
    os.chmod(home / "token", 0o600)
    with Daemon(home, args=("--host", "0.0.0.0")) as d:
        assert httpx.get(d.url + "/api/v1/stats").status_code == 401  # auth is never off
        assert d.get("/api/v1/stats").status_code == 200


def test_health_answers_fast_even_while_loading(tmp_path):
    """/health answers before FastAPI is even imported; the API follows once it is loaded."""
    import remem

    m = remem.open(tmp_path / "remem", env={"REMEM_EMBEDDING_MODEL": "hash"})
    m.add_turns(sample_turns(200))
    m.close()
    d = Daemon(tmp_path / "remem")
    t0 = time.monotonic()
    d.start(ready=False)
    first = time.monotonic() - t0
    try:
        assert first < 3.0, f"/health took {first:.2f}s"  # src/remem/bench/api_speed.py measures the real number
        d.wait_health(ready=True)
        assert d.get("/api/v1/stats").json()["turns"] == 200
    finally:
        d.stop()


def test_interrupted_job_resumes_after_restart(tmp_path):
    import remem

    home = tmp_path / "remem"
    m = remem.open(home, env={"REMEM_EMBEDDING_MODEL": "hash", "REMEM_LEARN_DELAY": "0"})  # learn at once
    m.config.set("embedding.batch_size", 2)
    turns = sample_turns(1500)
    for i in range(0, len(turns), 500):
        m.add_turns(turns[i:i + 500])
    m.close()
    d = Daemon(home).start()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        jobs = d.get("/api/v1/jobs").json()["jobs"]
        embed = [j for j in jobs if j["kind"] == "embed"]
        if embed and embed[0]["status"] == "running" and (embed[0]["progress"].get("done") or 0) > 0:
            break
        time.sleep(0.05)
    d.proc.send_signal(signal.SIGKILL)
    d.proc.wait(10)
    d2 = Daemon(home).start()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            st = d2.get("/api/v1/stats").json()
            if st["embeddings"].get("pending", 0) == 0 and st["jobs_pending"] == 0:
                break
            time.sleep(0.2)
        assert st["embeddings"].get("done") == 1500
        assert d2.get("/api/v1/status").json()["daemon"]["startup"]["recovered"] >= 1
    finally:
        d2.stop()


def test_graceful_stop_requeues_running_job(tmp_path):
    import remem

    home = tmp_path / "remem"
    m = remem.open(home, env={"REMEM_EMBEDDING_MODEL": "hash"})
    m.config.set("embedding.batch_size", 1)
    m.add_turns(sample_turns(800))
    m.close()
    d = Daemon(home).start()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        embed = [j for j in d.get("/api/v1/jobs").json()["jobs"] if j["kind"] == "embed"]
        if embed and embed[0]["status"] == "running":
            break
        time.sleep(0.05)
    assert d.stop() == 0
    m = remem.open(home, env={"REMEM_EMBEDDING_MODEL": "hash"})
    rows = m.store.conn.execute("SELECT status FROM jobs WHERE kind='embed'").fetchall()
    m.close()
    said = (home / "logs" / "daemon.log").read_text(errors="replace")[-3000:]
    assert rows and {r["status"] for r in rows} <= {"queued", "done"}, said  # interrupted work waits for the next start


def test_up_starts_once_and_is_harmless_to_repeat(tmp_path):
    home = tmp_path / "remem"
    (tmp_path / "home").mkdir()
    env = {**os.environ, "REMEM_HOME": str(home), "HOME": str(tmp_path / "home"), "REMEM_AUTO_SYNC": "0",
           "REMEM_PORT": str(free_port())}
    try:
        r = subprocess.run([sys.executable, "-m", "remem", "up", "--json"], capture_output=True, text=True,
                           env=env, timeout=90)
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout)
        assert out["daemon"] == "started" and out["url"].startswith("http://127.0.0.1:")
        r2 = subprocess.run([sys.executable, "-m", "remem", "up"], capture_output=True, text=True, env=env,
                            timeout=90)
        assert r2.returncode == 0 and "already running" in r2.stdout
        assert "next:" not in r2.stdout  # no agent here to install hooks into
        assert httpx.get(out["url"] + "/health").json()["pid"] == out["pid"]
    finally:
        subprocess.run([sys.executable, "-m", "remem", "serve", "--stop"], env=env, timeout=30)


def test_connections_have_nagle_off():
    """The daemon's listening socket names IPPROTO_TCP, so asyncio sets TCP_NODELAY on every
    connection; without it each response's body waited ~40 ms for the client's delayed ACK."""
    import asyncio

    from remem.server.daemon import bind

    sock = bind("127.0.0.1", 0)
    assert sock.proto == socket.IPPROTO_TCP
    seen: list[int] = []

    async def main() -> None:
        def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            seen.append(writer.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(accepted, sock=sock)
        _, writer = await asyncio.open_connection(*sock.getsockname()[:2])
        for _ in range(100):
            if seen:
                break
            await asyncio.sleep(0.01)
        writer.close()
        server.close()
        await server.wait_closed()

    asyncio.run(main())
    assert seen and seen[0] != 0


def test_clear_all_data_two_steps(tmp_path):
    """Clearing everything takes a confirmation the first call hands out, used once; the token and
    the settings stay."""
    import remem

    (tmp_path / "home").mkdir()
    m = remem.open(tmp_path / "remem", env={"REMEM_EMBEDDING_MODEL": "hash"})
    m.add_turns(sample_turns(5))
    m.close()
    with Daemon(tmp_path / "remem", env={"HOME": str(tmp_path / "home"), "REMEM_AUTO_SYNC": "0"}) as d, \
            d.client() as c:
        first = c.post("/api/v1/data/clear", json={}).json()
        assert first["will_delete"]["turns"] == 5 and first["confirm"]
        assert c.get("/api/v1/stats").json()["turns"] == 5  # the first step deletes nothing
        assert c.post("/api/v1/data/clear", json={"confirm": "guess"}).status_code == 409
        done = c.post("/api/v1/data/clear", json={"confirm": first["confirm"]}).json()
        assert done["cleared"]["turns"] == 5
        assert c.get("/api/v1/stats").json()["turns"] == 0
        assert c.get("/api/v1/memories/search", params={"q": "deploy"}).json()["results"] == []
        assert c.post("/api/v1/data/clear", json={"confirm": first["confirm"]}).status_code == 409
        assert (d.home / "token").exists() and (d.home / "config.yaml").exists()

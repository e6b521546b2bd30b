"""The daemon's learn job runs in a process of its own (``server.learn_process``, on by default); with
``server.job_processes`` on, the embed job does too (server/jobproc.py)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from remem.server.testing import Daemon, sample_turns


def _children(pid: int) -> list[tuple[int, str]]:
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            try:
                cmd = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            out.append((int(child), cmd))
    return out


def _job_children(d: Daemon) -> list[tuple[int, str]]:
    assert d.proc is not None
    return [(pid, cmd) for pid, cmd in _children(d.proc.pid) if "remem.server.jobproc" in cmd]


def _home(tmp_path: Path, turns: int, batch: int, **env: str) -> Path:
    import remem

    home = tmp_path / "remem"
    m = remem.open(home, env={"REMEM_EMBEDDING_MODEL": "hash", **env})
    m.config.set("embedding.batch_size", batch)
    items = sample_turns(turns)
    for i in range(0, len(items), 500):
        m.add_turns(items[i:i + 500])
    m.close()
    (tmp_path / "home").mkdir()
    return home


def _wait_job(d: Daemon, kind: str, statuses: tuple[str, ...], timeout: float = 60.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        jobs = [j for j in d.get("/api/v1/jobs").json()["jobs"] if j["kind"] == kind]
        if jobs and jobs[0]["status"] in statuses:
            return jobs[0]
        time.sleep(0.05)
    raise TimeoutError(f"no {kind} job {statuses}: {jobs[:1]}")


ON = {"REMEM_JOB_PROCESSES": "1"}
pytestmark = pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads child processes from /proc")


def test_embed_job_runs_in_a_child_process_niced_with_progress_and_results(tmp_path):
    home = _home(tmp_path, 1500, 2)
    with Daemon(home, env={"HOME": str(tmp_path / "home"), "REMEM_AUTO_SYNC": "0", **ON}) as d:
        running = _wait_job(d, "embed", ("running",))
        deadline = time.monotonic() + 15  # the job is claimed, then its child starts
        while not (kids := [k for k in _job_children(d) if k[1].rstrip().endswith("embed")]):
            assert time.monotonic() < deadline, _job_children(d)
            time.sleep(0.05)
        assert len(kids) == 1 and kids[0][1].rstrip().endswith("embed"), kids
        pid = kids[0][0]
        assert os.getpriority(os.PRIO_PROCESS, pid) >= 10  # the whole child is background work
        assert running["id"]
        done = _wait_job(d, "embed", ("done",), timeout=120)
        assert done["progress"]["done"] >= 1  # the child's reports reached the job
        st = d.get("/api/v1/stats").json()
        assert st["embeddings"].get("pending", 0) == 0 and st["embeddings"]["done"] == 1500
        # the daemon's recall sees the vectors the child wrote
        hits = d.post("/api/v1/memories/search", json={"query": sample_turns(3)[1].request, "k": 5}).json()
        assert any("vector" in r["details"]["channels"] for r in hits["results"]), hits
        # the child stays for the next job (it exits after being idle a while)
        assert [p for p, _ in _job_children(d)] == [pid]
    assert d.proc is not None and d.proc.returncode == 0
    with pytest.raises(ProcessLookupError):
        for _ in range(50):  # ended with the daemon
            os.kill(pid, 0)
            time.sleep(0.1)


def test_a_killed_job_process_fails_its_job_which_is_retried(tmp_path):
    home = _home(tmp_path, 1200, 1)
    env = {"HOME": str(tmp_path / "home"), "REMEM_AUTO_SYNC": "0", **ON}
    with Daemon(home, env=env) as d:
        _wait_job(d, "embed", ("running",))
        deadline = time.monotonic() + 30
        # kill the child once it works on the job (its progress reached the daemon), not while it
        # starts: a child killed before it took the job fails it as "did not take the job"
        while not ((kids := [k for k in _job_children(d) if k[1].rstrip().endswith("embed")])
                   and _wait_job(d, "embed", ("running",))["progress"].get("done", 0) >= 1):
            assert time.monotonic() < deadline, _job_children(d)
            time.sleep(0.05)
        (pid, _), = kids
        os.kill(pid, signal.SIGKILL)
        waiting = _wait_job(d, "embed", ("queued",), timeout=30)
        assert "job process ended" in waiting["error"] and waiting["attempts"] == 1, waiting
        assert d.get("/health").json()["status"] == "ready"  # the daemon itself is untouched
        assert waiting["run_after"] > time.time()  # retried after its back-off, in a new child
        log = (home / "logs" / "daemon.log").read_text(errors="replace")
        assert "job process ended" in log


def test_stop_reaches_the_child_and_the_job_is_stopped(tmp_path):
    home = _home(tmp_path, 1500, 1)
    with Daemon(home, env={"HOME": str(tmp_path / "home"), "REMEM_AUTO_SYNC": "0", **ON}) as d:
        job = _wait_job(d, "embed", ("running",))
        paused = d.post(f"/api/v1/jobs/{job['id']}/pause").json()
        assert paused["status"] == "paused"
        time.sleep(0.5)
        a = d.get("/api/v1/stats").json()["embeddings"].get("done", 0)
        time.sleep(1.0)
        b = d.get("/api/v1/stats").json()["embeddings"].get("done", 0)
        assert a == b  # paused in the child: nothing more is embedded
        d.post(f"/api/v1/jobs/{job['id']}/resume")
        stopped = d.post(f"/api/v1/jobs/{job['id']}/stop").json()
        assert stopped["id"] == job["id"]
        final = _wait_job(d, "embed", ("stopped",), timeout=30)
        assert final["status"] == "stopped"
        assert d.get("/api/v1/stats").json()["embeddings"].get("pending", 0) > 0


def test_by_default_the_embed_job_runs_in_the_daemon(tmp_path):
    home = _home(tmp_path, 1200, 1)
    env = {"HOME": str(tmp_path / "home"), "REMEM_AUTO_SYNC": "0"}
    with Daemon(home, env=env) as d:
        _wait_job(d, "embed", ("running",))
        assert _job_children(d) == []


@pytest.mark.parametrize("setting", [{}, ON], ids=["by-default", "job-processes"])
def test_learn_job_runs_in_its_child_and_returns_its_result(tmp_path, setting):
    home = _home(tmp_path, 300, 32, REMEM_LEARN_DELAY="0")  # the write queues a learn job, due now
    env = {"HOME": str(tmp_path / "home"), "REMEM_AUTO_SYNC": "0", **setting}
    with Daemon(home, env=env) as d:
        done = _wait_job(d, "learn", ("done",), timeout=120)
        assert "projects" in done["progress"].get("result", {}), done
        assert any(cmd.rstrip().endswith("learn") for _, cmd in _job_children(d))


def test_learn_process_off_runs_the_learn_job_in_the_daemon(tmp_path):
    home = _home(tmp_path, 300, 32, REMEM_LEARN_DELAY="0")
    env = {"HOME": str(tmp_path / "home"), "REMEM_AUTO_SYNC": "0", "REMEM_LEARN_PROCESS": "0"}
    with Daemon(home, env=env) as d:
        done = _wait_job(d, "learn", ("done",), timeout=120)
        assert "projects" in done["progress"].get("result", {}), done
        assert _job_children(d) == []

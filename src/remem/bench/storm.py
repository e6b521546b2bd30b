"""Storms: a 10,000-turn import, then the learning and feedback it sets off, while an agent works.

A home with ``--memories`` synthetic memories and a running daemon (the configured embedder); the
turn-start / turn-end / tool hooks are timed as Claude Code runs them (``hook_speed.measure``: a new
process per call) first idle, then while a second process imports ``--turns`` turns into the same home
(what `remem import` or a first `remem sync` does beside a running daemon) and the daemon works off what
that queues: the learn job (learning, packet judging = feedback) and the embedding backlog. The job
queue is sampled all along: its longest length and when it drained say whether it stays bounded.

    python -m remem.bench.storm --turns 10000 --runs 30
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from remem.bench import hook_speed as hs

IMPORT = """
import sys
import remem
from remem.bench import recall_speed as rs
mem = remem.open(sys.argv[1])
for part in rs.make_turns(int(sys.argv[2]), seed=23, chunk=500):
    mem.add_turns(part)
mem.close()
"""


def jobs(port: int, token: str) -> list[dict[str, Any]]:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/api/v1/jobs?limit=200",
                                 headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, timeout=30) as r:
        got = json.loads(r.read())
    return list(got.get("jobs", got) if isinstance(got, dict) else got)


ROUTES = {"POST /api/v1/recall/turn-start": "recall", "POST /api/v1/turns": "capture",
          "POST /api/v1/recall/session-start": "session_start"}


def route_times(log: Path, start: int, end: int) -> dict[str, dict[str, float]]:
    """The daemon's own time per hook route (its request log) between two offsets of its log file:
    which part of a hook's round trip waited."""
    with open(log, "rb") as f:
        f.seek(start)
        lines = f.read(max(0, end - start)).decode("utf-8", "replace").splitlines()
    got: dict[str, list[float]] = {}
    for line in lines:
        for route, name in ROUTES.items():
            if f" {route} " in line and line.endswith("ms"):
                got.setdefault(name, []).append(float(line.rsplit(" ", 1)[1][:-2]) / 1000)
    return {name: {"n": len(ts), "p50": round(hs.pct(ts, 50), 1), "p95": round(hs.pct(ts, 95), 1),
                   "max": round(max(ts) * 1000, 1)} for name, ts in sorted(got.items())}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--memories", type=int, default=2000)
    ap.add_argument("--turns", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--no-drain", action="store_true",
                    help="stop once the import is done (no wait for the job queue to drain)")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "remem"
        env = {**os.environ, "REMEM_HOME": str(home), "HOME": tmp}
        env.pop("REMEM_HOOK_TIMEOUT", None)
        hs.fill(home, a.memories)
        port = hs.free_port()
        d = hs.start_daemon(env, port)
        token = (home / "token").read_text().strip()
        queue: dict[str, Any] = {"max_queued": 0, "samples": 0}
        stop = threading.Event()

        def sample() -> None:
            while not stop.is_set():
                try:
                    live = [j for j in jobs(port, token) if j.get("status") in ("queued", "running")]
                    queue["max_queued"] = max(queue["max_queued"], len(live))
                    queue["samples"] += 1
                    queue["last"] = len(live)
                except OSError:
                    pass
                stop.wait(1.0)

        try:
            env_d = {**env, "REMEM_PORT": str(port)}
            log = home / "logs" / "daemon.log"
            at = log.stat().st_size
            idle = hs.measure(env_d, a.runs, 3, "idle")
            daemon_idle = route_times(log, at, log.stat().st_size)
            t0 = time.time()
            imp = subprocess.Popen([sys.executable, "-c", IMPORT, str(home), str(a.turns)], env=env,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            watcher = threading.Thread(target=sample, daemon=True)
            watcher.start()
            time.sleep(2.0)                      # the import is under way
            at = log.stat().st_size
            storm = hs.measure(env_d, a.runs, 0, "storm")
            daemon_storm = route_times(log, at, log.stat().st_size)
            still_importing = imp.poll() is None
            imp.wait(timeout=3600)
            imported = time.time() - t0
            drained = None
            deadline = time.time() + (0 if a.no_drain else 1800)
            while time.time() < deadline:      # the daemon works off the learn job and the embeddings
                if queue.get("last", 1) == 0 and queue["samples"] > 3:
                    drained = time.time() - t0
                    break
                time.sleep(1.0)
            after = hs.measure(env_d, a.runs, 0, "after") if drained is None and not a.no_drain else None
        finally:
            stop.set()
            d.terminate()
            d.wait(timeout=30)
    out = {"memories": a.memories, "turns": a.turns, "runs": a.runs, "import_s": round(imported, 1),
           "queue_drained_s": None if drained is None else round(drained, 1), "max_jobs_queued": queue["max_queued"],
           "idle": {k: round(v, 1) if isinstance(v, float) else v for k, v in idle.items()},
           "storm": {k: round(v, 1) if isinstance(v, float) else v for k, v in storm.items()},
           "daemon_ms": {"idle": daemon_idle, "storm": daemon_storm},
           "import_outlasted_storm_runs": still_importing,
           "load": round(os.getloadavg()[0], 1)}
    if after is not None:
        out["still_busy_after_30_min"] = {k: round(v, 1) if isinstance(v, float) else v for k, v in after.items()}
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

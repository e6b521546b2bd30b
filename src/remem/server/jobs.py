"""The daemon's job runner: jobs live in the database, a few threads run them.

- Bounded: ``workers`` threads, at most one running job per kind (two syncs never race).
- Back-pressure: jobs carry a dedup key, so pressing "sync" ten times queues one job; past
  ``max_queued`` waiting jobs, new requests are refused instead of piling up.
- Durable: a job killed with the daemon goes back to the queue on the next start.
- Retried: a failing job is retried with exponential back-off, then shown as failed.
- Controllable: pause / resume / stop reach the running handler through a :class:`JobControl`.

Handlers are plain functions registered per kind in :mod:`remem.server.jobkinds`.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import RememError
from ..threads import background_priority
from .events import EventBus
from .jobproc import JobProcess

if TYPE_CHECKING:
    from ..core import Remem

log = logging.getLogger("remem.jobs")

PUBLISH_EVERY = 0.2     # seconds between progress events per job: smooth bar, no event storm
PERSIST_EVERY = 1.0     # seconds between progress writes to the database


class NoRetry(RememError, RuntimeError):
    """A failure retrying cannot fix (missing module, bad payload): fail the job at once."""


class QueueFull(RememError, RuntimeError):
    """Too many jobs are waiting; the caller should try again later (HTTP 429)."""


class JobControl:
    """Pause / resume / stop for one running job, shared with the handler (and its engine)."""

    def __init__(self) -> None:
        self._go = threading.Event()
        self._go.set()
        self._stop = threading.Event()
        self.reason = ""
        self._linked: list[Any] = []

    def link(self, other: Any) -> None:
        """Forward pause/resume/stop to ``other`` (e.g. the sync engine's SyncControl)."""
        self._linked.append(other)
        if self.stopped:
            other.stop()
        elif self.paused:
            other.pause()

    def _forward(self, name: str) -> None:
        for o in self._linked:
            try:
                getattr(o, name)()
            except Exception as e:  # a broken engine control must not break the runner
                log.warning("job control %s failed: %s", name, e)

    def pause(self) -> None:
        self._go.clear()
        self._forward("pause")

    def resume(self) -> None:
        self._go.set()
        self._forward("resume")

    def stop(self, reason: str = "user") -> None:
        self.reason = self.reason or reason
        self._stop.set()
        self._go.set()
        self._forward("stop")

    @property
    def paused(self) -> bool:
        return not self._go.is_set()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def checkpoint(self) -> bool:
        """Call between units of work: blocks while paused; True means stop now."""
        while not self._go.wait(0.25):
            pass
        return self._stop.is_set()


@dataclass
class JobContext:
    job: dict[str, Any]
    mem: Remem
    control: JobControl
    report: Callable[[dict[str, Any]], None]
    runner: JobRunner

    @property
    def payload(self) -> dict[str, Any]:
        return self.job.get("payload") or {}


Handler = Callable[[JobContext], dict[str, Any] | None]


@dataclass
class _Live:
    job: dict[str, Any]
    control: JobControl
    progress: dict[str, Any] = field(default_factory=dict)
    last_publish: float = 0.0
    last_persist: float = 0.0


def fraction(progress: dict[str, Any]) -> float | None:
    """0..1 from whatever counters a handler reports (``done``/``total`` and friends)."""
    if isinstance(progress.get("fraction"), (int, float)):
        return max(0.0, min(1.0, float(progress["fraction"])))
    for done_key, total_key in (("done", "total"), ("units_done", "units_total"), ("files_done", "files_total"),
                                ("sessions_done", "sessions_total"), ("current", "total")):
        d, t = progress.get(done_key), progress.get(total_key)
        if isinstance(d, (int, float)) and isinstance(t, (int, float)) and t > 0:
            return max(0.0, min(1.0, d / t))
    return None


class JobRunner:
    def __init__(self, mem: Remem, bus: EventBus, handlers: dict[str, Handler], *, workers: int = 2,
                 max_attempts: int = 3, backoff: float = 15.0, poll: float = 1.0, max_queued: int = 100,
                 isolate: tuple[str, ...] = ()) -> None:
        self.mem = mem
        self.isolate = frozenset(isolate)  # kinds run in a child process (server/jobproc.py)
        self._procs: dict[str, JobProcess] = {}
        self.bus = bus
        self.handlers = handlers
        self.workers = workers
        self.max_attempts = max_attempts
        self.backoff = backoff
        self.poll = poll
        self.max_queued = max_queued
        self._live: dict[int, _Live] = {}
        self._again: dict[int, tuple[str, dict[str, Any] | None, str | None]] = {}  # asked for while stopping
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._closing = threading.Event()
        self._threads: list[threading.Thread] = []

    # -- lifecycle -----------------------------------------------------------------------
    def start(self) -> None:
        for i in range(self.workers):
            t = threading.Thread(target=self._loop, name=f"remem-job-{i}", daemon=True)
            t.start()
            self._threads.append(t)

    def shutdown(self, timeout: float = 5.0) -> None:
        """Stop taking jobs; interrupt running ones (they go back to the queue for next start)."""
        self._closing.set()
        self._wake.set()
        with self._lock:
            for live in self._live.values():
                live.control.stop("shutdown")
        deadline = time.monotonic() + timeout
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))
        with self._lock:
            stuck = list(self._live)
            procs = list(self._procs.values())
        for proc in procs:
            proc.end()
        for job_id in stuck:  # a unit of work outlived the wait: its job still goes back to the queue
            try:
                with self.mem.store.transaction():
                    self.mem.store.jobs.requeue(job_id)
                log.warning("job %s did not stop in %.0fs; queued again for the next start", job_id, timeout)
            except Exception as e:
                log.error("cannot queue job %s again: %s", job_id, e)

    def wake(self) -> None:
        self._wake.set()

    # -- API -------------------------------------------------------------------------------
    def enqueue(self, kind: str, payload: dict[str, Any] | None = None, *,
                dedup_key: str | None = None) -> tuple[dict[str, Any], bool]:
        """Queue a job (or find the equivalent one already waiting). Returns (job, existed)."""
        jobs = self.mem.store.jobs
        with self.mem.store.transaction():
            found = jobs.active(dedup_key) if dedup_key else None
            existing = found is not None
            if found is not None:
                job_id = found
            else:
                waiting = jobs.waiting()
                if waiting >= self.max_queued:
                    raise QueueFull(f"{waiting} jobs are already waiting; try again later")
                job_id = jobs.enqueue(kind, payload, dedup_key=dedup_key)
        self._wake.set()
        if existing and self._stopping(job_id):   # asked for while it ends: it runs again after that
            with self._lock:
                ending = job_id in self._live
                if ending:
                    self._again[job_id] = (kind, payload, dedup_key)
            if not ending:                        # it ended meanwhile: queue it now
                return self.enqueue(kind, payload, dedup_key=dedup_key)
        snap = self.get(job_id)
        assert snap is not None
        if not existing:
            self.bus.publish("job", snap)
        return snap, existing

    def _stopping(self, job_id: int) -> bool:
        """The job is running and was stopped by the user: it ends soon, but is still active in the store."""
        with self._lock:
            live = self._live.get(job_id)
            return live is not None and live.control.stopped and live.control.reason != "shutdown"

    def get(self, job_id: int) -> dict[str, Any] | None:
        row = self.mem.store.jobs.get(job_id)
        return self._snapshot(row) if row else None

    def list_jobs(self, limit: int = 50, active_only: bool = False) -> list[dict[str, Any]]:
        return [self._snapshot(r) for r in self.mem.store.jobs.recent(limit, active_only=active_only)]

    def counts(self) -> dict[str, int]:
        return self.mem.store.jobs.counts()

    def control(self, job_id: int, action: str) -> dict[str, Any]:
        """Apply ``pause`` / ``resume`` / ``stop`` to a job; raises LookupError / ValueError."""
        if action not in ("pause", "resume", "stop"):
            raise ValueError(f"unknown action {action!r}")
        snap = self.get(job_id)
        if snap is None:
            raise LookupError(f"no job {job_id}")
        with self._lock:
            live = self._live.get(job_id)
        status = snap["status"]
        if live is not None:
            if action == "pause":
                live.control.pause()
                self._set_status(job_id, "paused")
            elif action == "resume":
                live.control.resume()
                self._set_status(job_id, "running")
            else:
                live.control.stop("user")
                if live.control.paused:
                    live.control.resume()
        elif status in ("queued", "paused"):
            new = {"pause": "paused", "resume": "queued", "stop": "stopped"}[action]
            self._set_status(job_id, new)
            self._wake.set()
        elif action != "stop" or status not in ("done", "failed", "stopped"):
            raise ValueError(f"job {job_id} is {status}; cannot {action} it")
        out = self.get(job_id)
        assert out is not None
        self.bus.publish("job", out)
        return out

    def active_snapshots(self) -> list[dict[str, Any]]:
        return self.list_jobs(limit=20, active_only=True)

    # -- internals ----------------------------------------------------------------------
    def _snapshot(self, row: dict[str, Any]) -> dict[str, Any]:
        payload = row.get("payload") or "{}"
        progress = row.get("progress") or "{}"
        snap = {
            "id": row["id"], "kind": row["kind"], "status": row["status"], "attempts": row["attempts"],
            "payload": json.loads(payload) if isinstance(payload, str) else payload,
            "progress": json.loads(progress) if isinstance(progress, str) else progress,
            "error": row.get("last_error") or "", "created_at": row["created_at"], "updated_at": row["updated_at"],
            "run_after": row.get("run_after") or 0,
        }
        with self._lock:
            live = self._live.get(row["id"])
            if live is not None:
                snap["progress"] = dict(live.progress)
                if live.control.paused and snap["status"] == "running":
                    snap["status"] = "paused"
        snap["fraction"] = 1.0 if snap["status"] == "done" else fraction(snap["progress"])
        return snap

    def _set_status(self, job_id: int, status: str) -> None:
        with self.mem.store.transaction():
            self.mem.store.jobs.set_status(job_id, status)

    def _handler(self, kind: str) -> Handler:
        if kind not in self.isolate:
            return self.handlers[kind]
        with self._lock:
            proc = self._procs.get(kind)
            if proc is None:
                proc = self._procs[kind] = JobProcess(self.mem.home, kind)
        return proc.run

    def _claim(self) -> dict[str, Any] | None:
        with self._lock:
            if self._closing.is_set():  # shutdown has stopped the live jobs: claim nothing after it
                return None
            busy = {live.job["kind"] for live in self._live.values()}
            kinds = tuple(k for k in self.handlers if k not in busy)
            if not kinds:
                return None
            with self.mem.store.transaction():
                job = self.mem.store.jobs.claim(kinds)
            if job is not None:
                self._live[job["id"]] = _Live(job=job, control=JobControl())
            return job

    def _loop(self) -> None:
        background_priority()
        while not self._closing.is_set():
            try:
                job = self._claim()
            except Exception as e:  # database busy or gone: wait, try again
                log.warning("job queue unavailable: %s", e)
                job = None
            if job is None:
                self._wake.wait(self.poll)
                self._wake.clear()
                continue
            try:
                self._run(job)
            finally:
                with self._lock:   # only this run's entry: the same job (its key's id) may run again already
                    live = self._live.get(job["id"])
                    if live is not None and live.job is job:
                        del self._live[job["id"]]
                self._wake.set()
        self.mem.store.release()  # this thread's connection only: another worker may still be writing

    def _report(self, job_id: int, data: dict[str, Any], *, force: bool = False) -> None:
        with self._lock:
            live = self._live.get(job_id)
            if live is None:
                return
            live.progress.update(data)
            now = time.monotonic()
            publish = force or now - live.last_publish >= PUBLISH_EVERY
            persist = force or now - live.last_persist >= PERSIST_EVERY
            if publish:
                live.last_publish = now
            if persist:
                live.last_persist = now
            progress = dict(live.progress)
        if persist:
            try:
                with self.mem.store.transaction():
                    self.mem.store.jobs.progress(job_id, progress)
            except Exception as e:
                log.warning("cannot save progress of job %s: %s", job_id, e)
        if publish:
            snap = self.get(job_id)
            if snap is not None:
                self.bus.publish("job", snap)

    def _run(self, job: dict[str, Any]) -> None:
        job_id, kind = int(job["id"]), job["kind"]
        with self._lock:
            control = self._live[job_id].control
        log.debug("job %s (%s) started, attempt %s", job_id, kind, job["attempts"])
        self._report(job_id, {"phase": "starting"}, force=True)
        ctx = JobContext(job=job, mem=self.mem, control=control, runner=self,
                         report=lambda d: self._report(job_id, d))
        t0 = time.monotonic()
        status, error, retry_in = "done", "", None
        result: dict[str, Any] | None = None
        try:
            result = self._handler(kind)(ctx) or {}
            if control.stopped:
                status = "queued" if control.reason == "shutdown" else "stopped"
        except NoRetry as e:
            status, error = "failed", str(e)
        except Exception as e:
            error = f"{type(e).__name__}: {e}"
            if control.stopped and control.reason == "shutdown":
                status = "queued"
            elif control.stopped:  # stopped by the user while it failed (or was ended): not retried
                status = "stopped"
            elif job["attempts"] < self.max_attempts:
                status, retry_in = "queued", self.backoff * 2 ** (job["attempts"] - 1)
            else:
                status = "failed"
            log.warning("job %s (%s) failed: %s", job_id, kind, error)
        final = {"phase": {"done": "finished", "stopped": "stopped", "failed": "failed"}.get(status, "waiting"),
                 "elapsed": round(time.monotonic() - t0, 3)}
        if result is not None:
            final["result"] = result
        if retry_in is not None:
            final["retry_in"] = retry_in
        self._report(job_id, final, force=False)
        with self._lock:
            progress = dict(self._live[job_id].progress)
        for attempt in (1, 2):  # a connection lost under the write: once more, on a new one
            try:
                jobs = self.mem.store.jobs
                with self.mem.store.transaction():
                    jobs.progress(job_id, progress)
                    if status == "queued" and retry_in is None:  # interrupted by shutdown: resume next start
                        jobs.requeue(job_id)
                    else:
                        jobs.finish(job_id, status, error, retry_in=retry_in)
                break
            except Exception as e:
                if attempt == 2:
                    log.error("cannot record the end of job %s: %s", job_id, e)
                else:
                    self.mem.store.release()
        with self._lock:
            self._live.pop(job_id, None)
            again = self._again.pop(job_id, None)
        snap = self.get(job_id)
        if snap is not None:
            self.bus.publish("job", snap)
        if again is not None:     # asked for while it was stopping: the request is not lost
            self.enqueue(again[0], again[1], dedup_key=again[2])
        took = time.monotonic() - t0
        # small background jobs (index, embed after each write) run all the time: only log what matters
        level = logging.INFO if took >= 1.0 or status != "done" or kind in ("sync", "discover") else logging.DEBUG
        log.log(level, "job %s (%s) %s in %.1fs%s", job_id, kind, "retrying" if retry_in else status, took,
                f": {error}" if error else "")

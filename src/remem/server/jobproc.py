"""Job kinds that run in a process of their own, so their Python work never holds the daemon's GIL.

The daemon's job threads run at a low CPU priority (``threads.background_priority``), but a thread
shares its process's interpreter lock with the request threads: a low-priority thread that holds the
lock while the kernel gives its core to someone else makes an agent's hook wait for it (measured:
turn-start p95 392 ms during a 10,000-turn import, 187 idle; bench/RESULTS.md, "storms"). The
CPU-heavy kinds (``embed``: tokenizing and the model; ``learn``: the extractors and the packet
judge) therefore run in a child process started with ``python -m remem.server.jobproc HOME KIND``,
niced as a whole, one per kind, started on the kind's first job and ended after it has been idle
for ``IDLE_SECONDS`` (its memory goes back).

The protocol is one JSON object per line. The daemon writes ``{"run": job}``, ``{"control":
"pause" | "resume" | "stop"}`` and ``{"quit": true}`` to the child's stdin; the child writes
``{"report": {...}}``, ``{"log": [level, logger, message]}`` and finally ``{"done": result}`` or
``{"error": message, "retry": bool}`` to its stdout. The handler in the child is the kind's own
(``plugins.job_kinds()``) with a :class:`~remem.server.jobs.JobContext` over the child's
:class:`~remem.core.Remem`; ``ctx.runner`` is None there (an isolated handler queues no jobs).
A child that dies takes its job with it as a failure (retried like any other); one that does not stop
within ``STOP_GRACE`` seconds of being told to is ended (its open transaction rolls back).
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .jobs import JobContext

log = logging.getLogger("remem.jobs")

IDLE_SECONDS = 300.0  # a child with no job this long exits
STOP_GRACE = 3.0      # seconds a told-to-stop child gets before it is ended
ONNX_POLL, ONNX_WAIT = 2.0, 900.0  # how often / how long the embed child looks for the daemon's encoder


class JobProcessError(RuntimeError):
    """The child process could not start or ended under a job."""


class JobProcess:
    """The daemon's side of one child: start on demand, run one job at a time, forward control."""

    def __init__(self, home: Path, kind: str) -> None:
        self.home, self.kind = home, kind
        self._proc: subprocess.Popen[bytes] | None = None
        self._lines: list[dict[str, Any]] = []
        self._cond = threading.Condition()
        self._send_lock = threading.Lock()
        self._reader: threading.Thread | None = None

    # -- the child's life ----------------------------------------------------------------------
    def _alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def _start(self) -> subprocess.Popen[bytes]:
        env = dict(os.environ, REMEM_HOME=str(self.home))
        try:
            proc = subprocess.Popen([sys.executable, "-m", "remem.server.jobproc", str(self.home), self.kind],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None, env=env,
                                    close_fds=True)
        except OSError as e:
            raise JobProcessError(f"cannot start the {self.kind} job process: {e}") from None
        self._proc = proc
        with self._cond:
            self._lines = []
        assert proc.stdout is not None
        self._reader = threading.Thread(target=self._read, args=(proc, proc.stdout),
                                        name=f"remem-jobproc-{self.kind}", daemon=True)
        self._reader.start()
        log.debug("started the %s job process (pid %s)", self.kind, proc.pid)
        return proc

    def _read(self, proc: subprocess.Popen[bytes], out: IO[bytes]) -> None:
        for raw in out:
            try:
                msg = json.loads(raw)
            except ValueError:
                continue  # not the protocol (a library printing): ignored
            if isinstance(msg, dict) and "log" in msg:
                level, name, text = msg["log"]
                logging.getLogger(str(name)).log(int(level), "%s", text)
                continue
            with self._cond:
                self._lines.append(msg)
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def _send(self, msg: dict[str, Any]) -> bool:
        proc = self._proc
        if proc is None or proc.stdin is None:
            return False
        try:
            with self._send_lock:
                proc.stdin.write(json.dumps(msg).encode() + b"\n")
                proc.stdin.flush()
            return True
        except (OSError, ValueError):  # the child is gone: the reader notices
            return False

    def end(self, timeout: float = 2.0) -> None:
        """Ask the child to quit; end it if it does not."""
        proc = self._proc
        if proc is None:
            return
        self._send({"quit": True})
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        self._proc = None

    # -- one job -------------------------------------------------------------------------------
    def run(self, ctx: JobContext) -> dict[str, Any]:
        """Run ``ctx.job`` in the child; its reports reach ``ctx.report``; its result is returned,
        its failure raised (NoRetry when the handler said retrying cannot help)."""
        from .jobs import NoRetry

        proc = self._proc if self._proc is not None and self._alive() else self._start()
        with self._cond:
            self._lines = []
        if not self._send({"run": ctx.job}):
            raise JobProcessError(f"the {self.kind} job process did not take the job (exit code {proc.poll()})")
        # after the job on the child's stdin, so a pause or stop (even one already made) follows it there
        ctx.control.link(_Forward(self, int(ctx.job["id"])))
        told_stop: float | None = None
        while True:
            with self._cond:
                if not self._lines and proc.poll() is None:
                    self._cond.wait(0.25)
                lines, self._lines = self._lines, []
            for msg in lines:
                if "report" in msg:
                    ctx.report(msg["report"])
                elif "done" in msg:
                    return dict(msg["done"] or {})
                elif "error" in msg:
                    if msg.get("retry", True):
                        raise JobProcessError(str(msg["error"]))
                    raise NoRetry(str(msg["error"]))
            if proc.poll() is not None and not lines:
                self._proc = None
                raise JobProcessError(f"the {self.kind} job process ended (exit code {proc.returncode})")
            if ctx.control.stopped:
                told_stop = told_stop or time.monotonic()
                if time.monotonic() - told_stop > STOP_GRACE:
                    log.warning("the %s job process did not stop in %.0fs: ended", self.kind, STOP_GRACE)
                    proc.kill()
                    proc.wait(5)
                    self._proc = None
                    raise JobProcessError(f"the {self.kind} job was stopped")


class _Forward:
    """Linked to a job's control: pause / resume / stop go to the child."""

    def __init__(self, owner: JobProcess, job_id: int) -> None:
        self.owner, self.job_id = owner, job_id

    def pause(self) -> None:
        self.owner._send({"control": "pause", "job": self.job_id})

    def resume(self) -> None:
        self.owner._send({"control": "resume", "job": self.job_id})

    def stop(self) -> None:
        self.owner._send({"control": "stop", "job": self.job_id})


# -- the child ---------------------------------------------------------------------------------------

class _ToParent(logging.Handler):
    """The child's log records go to the daemon's log (scrubbed there like its own)."""

    def __init__(self, write: Any) -> None:
        super().__init__(level=logging.INFO)
        self.write = write

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
        except Exception:
            text = str(record.msg)
        if record.exc_info:
            text += "\n" + logging.Formatter().formatException(record.exc_info)
        self.write({"log": [record.levelno, record.name, text]})


def _open_encoder(mem: Any) -> None:
    """Switch the child's embedder to the onnxruntime encoder once the daemon has built it (the
    engine embeds until then; a running job switches at its next batch)."""
    state = ""
    for _ in range(int(ONNX_WAIT / ONNX_POLL)):
        try:
            state = mem.prepare_onnx(build=False)
        except Exception as e:
            state = f"not used: {type(e).__name__}: {e}"
        if state != "building":
            break
        time.sleep(ONNX_POLL)
    if state.startswith("not used") and "turned off" not in state and "no faster runtime" not in state:
        logging.getLogger("remem.embed").info("the embed job process keeps the engine: %s", state)


def child_main(home: Path, kind: str) -> int:
    """Serve ``{"run": job}`` lines for ``kind`` until told to quit, stdin closes or idle too long."""
    from ..threads import BACKGROUND_NICE

    out = sys.stdout.buffer
    sys.stdout = sys.stderr  # anything a library prints must not break the protocol
    out_lock = threading.Lock()

    def write(msg: dict[str, Any]) -> None:
        data = json.dumps(msg, default=str).encode() + b"\n"
        with out_lock:
            out.write(data)
            out.flush()

    try:
        os.nice(BACKGROUND_NICE)  # the whole process is background work: nothing here waits on a person
    except (OSError, AttributeError):  # refused, or no nice() on this system
        pass
    root = logging.getLogger()
    root.handlers[:] = [_ToParent(write)]
    root.setLevel(logging.INFO)

    from .. import plugins
    from ..core import Remem
    from .jobkinds import plain
    from .jobs import JobContext, JobControl, NoRetry

    handler = plugins.job_kinds().get(kind)
    if handler is None:
        write({"error": f"no job kind {kind!r}", "retry": False})
        return 2
    mem = Remem(home)
    inbox: list[tuple[dict[str, Any], JobControl | None]] = []
    cond = threading.Condition()
    controls: dict[int, JobControl] = {}  # by job id: made when the job is read, so every later line reaches it

    def read() -> None:
        for raw in sys.stdin.buffer:
            try:
                msg = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(msg, dict):
                continue
            if "control" in msg:
                with cond:
                    control = controls.get(int(msg.get("job") or 0))
                if control is not None:  # a job that ended meanwhile: nothing to do
                    getattr(control, {"pause": "pause", "resume": "resume"}.get(msg["control"], "stop"))()
                continue
            made = None
            if isinstance(msg.get("run"), dict):
                made = JobControl()
            with cond:
                if made is not None:
                    controls[int(msg["run"].get("id") or 0)] = made
                inbox.append((msg, made))
                cond.notify_all()
        with cond:
            inbox.append(({"quit": True}, None))
            cond.notify_all()

    threading.Thread(target=read, name="remem-jobproc-stdin", daemon=True).start()
    if kind == "embed" and mem.config.get("embedding.onnx"):
        threading.Thread(target=_open_encoder, args=(mem,), name="remem-jobproc-onnx", daemon=True).start()
    try:
        while True:
            with cond:
                if not inbox:
                    cond.wait(IDLE_SECONDS)
                if not inbox:
                    return 0  # idle too long
                msg, control = inbox.pop(0)
            if msg.get("quit"):
                return 0
            job = msg.get("run")
            if not isinstance(job, dict) or control is None:
                continue
            ctx = JobContext(job=job, mem=mem, control=control, runner=None,  # type: ignore[arg-type]
                             report=lambda d: write({"report": d}))
            try:
                write({"done": plain(handler(ctx) or {})})
            except NoRetry as e:
                write({"error": str(e), "retry": False})
            except Exception as e:
                write({"error": f"{type(e).__name__}: {e}", "retry": True})
            finally:
                with cond:
                    controls.pop(int(job.get("id") or 0), None)
    finally:
        mem.close()


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print("usage: python -m remem.server.jobproc HOME KIND", file=sys.stderr)
        raise SystemExit(2)
    raise SystemExit(child_main(Path(sys.argv[1]), sys.argv[2]))

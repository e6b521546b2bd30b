"""The ASGI app uvicorn starts with. It answers ``/health`` from the first millisecond and loads
everything else (FastAPI, the database, the job runner) in a background thread, then hands every
other request to the real app. Slow start-up work never delays ``/health``."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from typing import Any

from .security import ASGIApp, Receive, Scope, Send
from .state import DaemonState

log = logging.getLogger("remem.daemon")
WAIT_FOR_APP = 30.0  # seconds a request made during start-up waits for the API before a 503


class Front:
    def __init__(self, state: DaemonState) -> None:
        self.state = state
        self.app: ASGIApp | None = None
        self._loader: threading.Thread | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if self.app is None and scope["type"] == "http" and scope["path"] == "/health":
            await _json(send, 200, self.state.health())
            return
        if self.app is None:
            deadline = time.monotonic() + WAIT_FOR_APP
            while self.app is None and self.state.status == "starting" and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
        if self.app is None:
            if scope["type"] == "http":
                await _json(send, 503, {"detail": f"remem is not ready ({self.state.status}) "
                                                  f"{self.state.error}".strip()})
            return
        await self.app(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self._loader = threading.Thread(target=self.load, name="remem-startup", daemon=True)
                self._loader.start()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await asyncio.get_running_loop().run_in_executor(None, self.shutdown)
                await send({"type": "lifespan.shutdown.complete"})
                return

    def load(self) -> None:
        """Runs once the port answers: open the database, build the API, start the job runner."""
        st = self.state
        t0 = time.monotonic()
        try:
            from .. import plugins
            from ..core import Remem
            from . import heap
            from .app import create_app
            from .jobkinds import Scheduler, recover, startup
            from .jobs import JobRunner
            from .livewrite import LiveWriter
            from .state import version

            log.info("remem %s starting", version())
            mem = Remem(st.home)
            st.mem = mem
            st.writer = LiveWriter(mem)
            recovered = recover(mem)  # before any worker claims a job
            isolate = (("embed", "learn") if mem.config.get("server.job_processes")
                       else ("learn",) if mem.config.get("server.learn_process") else ())
            runner = JobRunner(mem, st.bus, plugins.job_kinds(), isolate=isolate)  # built-ins and plugins' kinds
            st.runner = runner
            self.app = create_app(st)
            st.status = "ready"
            log.info("API ready in %.2fs (database %s)", time.monotonic() - t0, mem.config.database_label)
            runner.start()
            st.startup_result = {"recovered": recovered, **startup(runner, background=st.background),
                                 "onnx": _prepare_onnx(mem), "warm": _warm(mem), "gc_frozen": heap.settle()}
            if st.background:
                st.scheduler = Scheduler(runner)
                st.scheduler.start()
            log.info("background start-up done: %s", st.startup_result)
        except Exception as e:
            st.error = f"{type(e).__name__}: {e}"
            if st.mem is None or self.app is None:
                st.status = "error"
            log.exception("start-up failed")

    def shutdown(self) -> None:
        st = self.state
        log.info("shutting down")
        st.bus.close()
        if st.scheduler is not None:
            st.scheduler.stop()
        if st.writer is not None:
            st.writer.close()          # queued captures are written before the database closes
        if st.runner is not None:
            st.runner.shutdown()
        if st.mem is not None:
            st.mem.close()


def _prepare_onnx(mem: Any) -> str:
    try:
        return str(mem.prepare_onnx())
    except Exception as e:  # the embedder then keeps its own runtime
        log.warning("onnxruntime encoder not prepared: %s", e)
        return f"not used: {type(e).__name__}: {e}"


def _warm(mem: Any) -> dict[str, Any]:
    """The first recall's loading done now (``Remem.warm``): the first prompt after a start does not
    wait for the vector indexes."""
    try:
        return dict(mem.warm())
    except Exception as e:  # the first recall then loads what it needs itself
        log.warning("warm-up failed: %s", e)
        return {"error": f"{type(e).__name__}: {e}"}


async def _json(send: Send, status: int, body: dict[str, Any]) -> None:
    data = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()),
                            (b"cache-control", b"no-store")]})
    await send({"type": "http.response.body", "body": data})

"""The daemon itself: status, logs, jobs and their controls, live events (SSE), viewer login."""

import hmac
import os
import shutil
import subprocess
import sys
import threading
import time
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Request, Response
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field

from ... import privacy
from .. import deps, events, logs, optional, security
from ..jobs import JobRunner
from ..state import DaemonState

router = APIRouter(tags=["system"])
State = Annotated[DaemonState, Depends(deps.state)]
Runner = Annotated[JobRunner, Depends(deps.runner)]
LOGIN_WINDOW = 60.0   # seconds
LOGIN_ATTEMPTS = 10   # failed logins per client per window before 429: the token is 256 bits, this stops noise
LOGIN_CLIENTS = 1024  # clients remembered at most; the oldest are dropped first
_failures: dict[str, list[float]] = {}
_failures_lock = threading.Lock()


class LoginBody(BaseModel):
    token: str = Field(min_length=1, max_length=512)


@router.post("/auth/login", summary="Viewer login: exchange the token for an HttpOnly session cookie")
def login(body: LoginBody, state: State, request: Request, response: Response) -> dict[str, Any]:
    """Wrong tokens back off per client (its address): after 10 in a minute that client gets 429 until
    the minute has passed. The right token is never refused, so guessing elsewhere locks nobody out."""
    client = request.client.host if request.client else "?"
    token = body.token.strip()
    right = hmac.compare_digest(token.encode(), state.token.encode()) or _is_user_token(state, token)
    now = time.monotonic()
    with _failures_lock:
        recent = [t for t in _failures.pop(client, []) if now - t < LOGIN_WINDOW]
        if not right:
            if len(recent) >= LOGIN_ATTEMPTS:
                _failures[client] = recent
                wait = max(1, int(LOGIN_WINDOW - (now - recent[0])) + 1)
                raise HTTPException(429, f"too many failed logins from {client}; wait {wait} s",
                                    headers={"retry-after": str(wait)})
            _failures[client] = [*recent, now]
            while len(_failures) > LOGIN_CLIENTS:
                del _failures[next(iter(_failures))]
    if not right:
        raise HTTPException(401, "that is not this remem's token")
    response.set_cookie(security.COOKIE, security.session_value(token), max_age=security.COOKIE_MAX_AGE,
                        httponly=True, samesite="strict", path="/")
    return {"ok": True}


def _is_user_token(state: DaemonState, token: str) -> bool:
    """A user's token logs in too (team use); its cookie then acts as that user."""
    from ...team import principal_of

    return state.mem is not None and principal_of(state.mem.store, token=token) is not None


@router.post("/auth/logout", summary="Forget the viewer session cookie")
def logout(response: Response) -> dict[str, Any]:
    response.delete_cookie(security.COOKIE, path="/", httponly=True, samesite="strict")
    return {"ok": True}


@router.get("/status", summary="Daemon, job queue, database, embedder and recent errors")
def status(state: State) -> dict[str, Any]:
    mem = deps.mem_or_none(state)
    out: dict[str, Any] = {"daemon": {**state.health(), "host": state.host, "port": state.port,
                                      "started_at": state.started_at, "startup": state.startup_result,
                                      "event_subscribers": state.bus.subscribers},
                           "recent_errors": logs.RECENT.snapshot(),
                           "features": {"sync": optional.has(optional.sync_engine),
                                        "integrations": optional.has(optional.integrations)}}
    if mem is not None:
        if mem.config.on_server:
            out["database"] = {"path": mem.config.database_label, "bytes": mem.store.maintenance.size_bytes(),
                               "home": str(mem.home)}
        else:
            db_path = mem.config.db_path
            size = sum(os.path.getsize(p) for p in (str(db_path), f"{db_path}-wal", f"{db_path}-shm")
                       if os.path.exists(p))
            out["database"] = {"path": str(db_path), "bytes": size, "home": str(mem.home)}
        out["embedder"] = mem.embedder_status()
    if state.runner is not None:
        out["jobs"] = {"counts": state.runner.counts(), "active": state.runner.active_snapshots()}
    if state.writer is not None:
        out["live_captures"] = state.writer.status()
    out["privacy"] = privacy.status(state.home)
    return out


class PrivacyBody(BaseModel):
    incognito: bool


@router.get("/privacy", summary="The home's incognito switch (capture paused for every agent) and counts")
def get_privacy(state: State) -> dict[str, Any]:
    return privacy.status(state.home)


@router.put("/privacy", summary="Switch the home's incognito on (nothing captured, learned or recalled "
            "for any agent) or off")
def put_privacy(body: PrivacyBody, state: State) -> dict[str, Any]:
    try:
        privacy.set_paused(state.home, body.incognito)
    except privacy.PrivacyFileError as e:
        raise HTTPException(409, str(e)) from None
    got = privacy.status(state.home)
    state.bus.publish("privacy", got)
    return got


@router.get("/logs", summary="The last lines of the daemon log (secrets already scrubbed)")
def get_logs(state: State, lines: int = 200) -> dict[str, Any]:
    lines = max(1, min(lines, 2000))
    return {"path": str(state.log_path or ""), "lines": logs.tail(state.log_path, lines) if state.log_path else []}


@router.get("/jobs", summary="Recent jobs, newest first")
def list_jobs(runner: Runner, limit: int = 50, active: bool = False) -> dict[str, Any]:
    return {"jobs": runner.list_jobs(limit=max(1, min(limit, 500)), active_only=active)}


@router.get("/jobs/{job_id}", summary="One job with its progress")
def get_job(runner: Runner, job_id: deps.JobId) -> dict[str, Any]:
    job = runner.get(job_id)
    if job is None:
        raise HTTPException(404, f"no job {job_id}")
    return job


@router.post("/jobs/{job_id}/{action}", summary="Pause, resume or stop a job")
def control_job(runner: Runner, job_id: deps.JobId, action: str) -> dict[str, Any]:
    if action not in ("pause", "resume", "stop"):
        raise HTTPException(404, "unknown action")
    return runner.control(job_id, action)


@router.post("/embed", status_code=202, summary="Embed memories waiting for vectors now")
def embed_now(runner: Runner) -> dict[str, Any]:
    job, existed = runner.enqueue("embed", {}, dedup_key="embed:pending")
    return {"job": job, "already_queued": existed}


@router.get("/events", summary="Server-Sent Events: job progress and daemon events",
            response_class=StreamingResponse)
async def event_stream(request: Request, state: State) -> StreamingResponse:
    first: list[dict[str, Any]] = []
    if state.runner is not None:
        from starlette.concurrency import run_in_threadpool

        active = await run_in_threadpool(state.runner.active_snapshots)
        first.append({"event": "hello", "id": 0, "data": {"jobs": active, "status": state.status}})
    else:
        first.append({"event": "hello", "id": 0, "data": {"jobs": [], "status": state.status}})
    return StreamingResponse(events.stream(state.bus, first, request.is_disconnected, state.should_exit),
                             media_type="text/event-stream",
                             headers={"cache-control": "no-store", "x-accel-buffering": "no"})


@router.post("/system/open-data-dir", summary="Open the data folder in the file manager (local desktop only)")
def open_data_dir(state: State) -> dict[str, Any]:
    opener = "open" if sys.platform == "darwin" else "xdg-open"
    path = str(state.home)
    if not shutil.which(opener):
        raise HTTPException(501, f"no file manager available here; the data folder is {path}")
    subprocess.Popen([opener, path], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL, start_new_session=True)
    return {"opened": path}

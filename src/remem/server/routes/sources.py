"""Sources and sync: detected sources, sync new history, deep rescan (two steps), add another agent."""

from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException
from pydantic import BaseModel, Field

from ...agents import canonical_agent
from ...core import Remem
from .. import deps, optional
from ..jobkinds import sync_key
from ..jobs import JobRunner
from ..state import DaemonState

router = APIRouter(tags=["sources"])
Mem = Annotated[Remem, Depends(deps.mem)]
Runner = Annotated[JobRunner, Depends(deps.runner)]
State = Annotated[DaemonState, Depends(deps.state)]


class SyncBody(BaseModel):
    agents: list[str] | None = Field(None, description="Agents to sync; empty or null means every detected source")


class RescanBody(BaseModel):
    agents: list[str] | None = None
    confirm: str | None = Field(None, description="The token from the first call")


class AddSourceBody(BaseModel):
    name: str = Field(min_length=1, max_length=64)
    paths: list[str] = Field(default_factory=list, max_length=20)


def _agents(names: list[str] | None) -> list[str] | None:
    if not names:
        return None
    try:
        return sorted({canonical_agent(n) for n in names})
    except ValueError as e:
        raise HTTPException(400, str(e)) from None


def _engine() -> Any:
    try:
        return optional.sync_engine()
    except optional.Unavailable as e:
        raise HTTPException(503, str(e)) from None


def _queue_sync(runner: JobRunner, agents: list[str] | None, full: bool = False) -> dict[str, Any]:
    job, existed = runner.enqueue("sync", {"agents": agents, "full": full}, dedup_key=sync_key(agents, full))
    return {"job": job, "already_queued": existed}


@router.get("/sources", summary="Sources detected on this machine, with their last sync")
def list_sources(mem: Mem) -> dict[str, Any]:
    sync = _engine()
    found = sync.detect_sources(mem)
    try:
        presets = optional.discovery()[1]
    except optional.Unavailable:
        presets = list(optional.DEFAULT_PRESETS)
    return {"sources": found, "presets": presets}


@router.post("/sources/sync", status_code=202, summary="Sync new history of every (or the given) source")
def sync_all(runner: Runner, body: SyncBody | None = None) -> dict[str, Any]:
    _engine()
    return _queue_sync(runner, _agents(body.agents if body else None))


@router.post("/sources/{agent}/sync", status_code=202, summary="Sync new history of one source")
def sync_one(runner: Runner, agent: str) -> dict[str, Any]:
    _engine()
    return _queue_sync(runner, _agents([agent]))


@router.post("/sources/rescan", summary="Deep rescan: first call returns a confirmation token, second runs it")
def rescan(runner: Runner, state: State, body: RescanBody) -> Any:
    _engine()
    agents = _agents(body.agents)
    if not body.confirm:
        tok = state.confirmations.issue("rescan", {"agents": agents})
        return {"confirm": tok, "agents": agents or "all", "expires_in": 300,
                "message": "A deep rescan re-reads every history file of these sources. Nothing is duplicated, "
                           "but it can take minutes on a large history. Send this token back to start it."}
    if not state.confirmations.redeem("rescan", body.confirm, {"agents": agents}):
        raise HTTPException(409, "confirmation token is invalid, used or expired; ask for a new one")
    from fastapi.responses import JSONResponse

    return JSONResponse(_queue_sync(runner, agents, full=True), status_code=202)


@router.post("/sources/add", status_code=202, summary="Add another agent: discovery runs as a job")
def add_source(runner: Runner, body: AddSourceBody) -> dict[str, Any]:
    try:
        optional.discovery()
    except optional.Unavailable as e:
        raise HTTPException(503, str(e)) from None
    name = body.name.strip()
    if not name:
        raise HTTPException(400, "an agent name is required")
    job, existed = runner.enqueue("discover", {"name": name, "paths": body.paths},
                                  dedup_key=f"discover:{name.lower()}")
    return {"job": job, "already_queued": existed}


def _current_sync(runner: JobRunner) -> int:
    for j in runner.active_snapshots():
        if j["kind"] == "sync":
            return int(j["id"])
    raise HTTPException(404, "no sync is running or waiting")


@router.post("/sources/sync/{action}", summary="Pause, resume or stop the current sync")
def control_sync(runner: Runner, action: str) -> dict[str, Any]:
    if action not in ("pause", "resume", "stop"):
        raise HTTPException(404, "unknown action")
    return runner.control(_current_sync(runner), action)

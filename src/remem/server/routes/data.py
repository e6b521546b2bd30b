"""Data: stats, export (JSONL, memory.sqlite), import, clear everything (two steps), config, doctor, recall."""

import contextlib
import os
import tempfile
import time
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import FileResponse
from pydantic import BaseModel, Field
from starlette.background import BackgroundTask

from ... import config as configmod
from ...core import Remem, iter_lines
from .. import deps
from ..state import DaemonState

router = APIRouter(tags=["data"])
Mem = Annotated[Remem, Depends(deps.mem)]
State = Annotated[DaemonState, Depends(deps.state)]
RESTART_KEYS = ("server.", "database", "embedding.model", "embedding.openai")


class TurnStartBody(BaseModel):
    prompt: str = Field(min_length=1, max_length=200_000)
    agent: str | None = None
    project: str | None = None
    owner: str | None = None
    budget: int | None = Field(None, ge=100, le=20_000)
    session_id: str | None = Field(None, max_length=400)
    core_shown: bool = False      # the session's start context already carried the core facts


class SessionStartBody(BaseModel):
    agent: str | None = None
    project: str = Field(min_length=1, max_length=4000)
    owner: str | None = None
    budget: int | None = Field(None, ge=100, le=20_000)


class RepairBody(BaseModel):
    """What ``Remem.repair`` takes: the failed call's output (``error``), its tool and shell command,
    the session and the open turn's calls so far (``attempts``: the avoid lines count them)."""
    error: str = Field(min_length=1, max_length=200_000)
    tool: str = Field("", max_length=400)
    command: str = Field("", max_length=20_000)
    agent: str | None = None
    project: str | None = None
    owner: str | None = None
    budget: int | None = Field(None, ge=100, le=20_000)
    session_id: str | None = Field(None, max_length=400)
    attempts: list[dict[str, Any]] | None = Field(None, max_length=200)


class ClearBody(BaseModel):
    confirm: str | None = None


def _tmp_dir(mem: Remem) -> Path:
    d = mem.home / "tmp"
    d.mkdir(exist_ok=True)
    return d


def _unlink(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


@router.get("/stats", summary="Counts by agent, status and embedding state; database size")
def stats(mem: Mem, who: deps.Who, owner: str | None = None) -> dict[str, Any]:
    out = mem.stats(owner=deps.owners(who, owner))
    if not who.is_home:  # a user sees the counts of its own scope, not the installation's
        for key in ("vectors", "jobs_pending", "database_bytes", "home"):
            out.pop(key, None)
    return out


@router.get("/export/jsonl", summary="Export memories as JSONL (download)")
def export_jsonl(mem: Mem, who: deps.Who, owner: str | None = None) -> FileResponse:
    fd, path = tempfile.mkstemp(prefix="export-", suffix=".jsonl", dir=_tmp_dir(mem))
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        mem.export_jsonl(f, owner=deps.owners(who, owner))
    return FileResponse(path, media_type="application/x-ndjson", filename="remem-export.jsonl",
                        background=BackgroundTask(_unlink, path))


@router.get("/export/sqlite", summary="Download a consistent copy of the whole database (memory.sqlite)")
def export_sqlite(mem: Mem) -> FileResponse:
    path = _tmp_dir(mem) / f"memory-{os.getpid()}-{time.time_ns()}.sqlite"
    mem.export_sqlite(path)
    return FileResponse(path, media_type="application/vnd.sqlite3", filename="memory.sqlite",
                        background=BackgroundTask(_unlink, str(path)))


@router.post("/import", summary="Import a JSONL export (request body); importing twice adds nothing")
async def import_jsonl(request: Request, owner: str | None = None) -> dict[str, Any]:
    from starlette.concurrency import run_in_threadpool

    mem = deps.mem(request)
    owner = deps.own(deps.principal(request), owner)  # a user imports into its own memory only
    fd, path = tempfile.mkstemp(prefix="import-", suffix=".jsonl", dir=_tmp_dir(mem))
    try:
        with os.fdopen(fd, "wb") as f:
            async for chunk in request.stream():
                f.write(chunk)

        def work() -> dict[str, int]:
            with open(path, "rb") as f:
                try:
                    return mem.import_jsonl(iter_lines(f), owner=owner or None)
                except (TypeError, AttributeError) as e:  # a field of the wrong JSON type ("tags": 5)
                    raise HTTPException(400, f"not a valid turn record: {e}") from None

        counts = await run_in_threadpool(work)
    finally:
        _unlink(path)
    return {"counts": counts}


@router.post("/data/clear", summary="Delete every memory: first call returns a token, second call deletes")
def clear_all(mem: Mem, state: State, body: ClearBody | None = None) -> dict[str, Any]:
    if body is None or not body.confirm:
        counts = mem.store.turns.clear_preview()
        tok = state.confirmations.issue("clear")
        return {"confirm": tok, "expires_in": 300, "will_delete": counts,
                "message": "This deletes every memory, session, source watermark and job in "
                           f"{mem.home}. Settings and the token stay. Send this token back to confirm."}
    if not state.confirmations.redeem("clear", body.confirm):
        raise HTTPException(409, "confirmation token is invalid, used or expired; ask for a new one")
    if state.runner is not None:
        for job in state.runner.active_snapshots():
            with contextlib.suppress(LookupError, ValueError):
                state.runner.control(job["id"], "stop")
    deleted = mem.clear_all()
    state.bus.publish("cleared", {"deleted": deleted})
    return {"cleared": deleted}


@router.get("/config", summary="Every setting with its effective value")
def get_config(mem: Mem) -> dict[str, Any]:
    from ...embed.embedders import EMBEDDERS

    env = sorted(k for k, v in configmod.ENV_KEYS.items() if os.environ.get(k))
    names = ["default", *sorted(n for n in EMBEDDERS if n != "default")]
    from ... import settings as model

    return {"values": model.masked(mem.config.values), "file": model.masked(mem.config.file_values),
            "path": str(mem.config.path),
            "home": str(mem.home), "env_overrides": {configmod.ENV_KEYS[k]: k for k in env},
            "embedders": names}


@router.patch("/config", summary="Change settings: a JSON object of dotted keys to values")
def patch_config(mem: Mem, body: dict[str, Any]) -> dict[str, Any]:
    """Settings that change where data lives or send it off this machine (the database path, the
    listening host, model server URLs) are refused with 403: they are set with ``remem config set``
    in a terminal, never by whoever holds a browser session or the API token."""
    if not body:
        raise HTTPException(400, "nothing to change")
    for key, value in body.items():
        why = cli_only(key, value, mem.config)
        if why:
            raise HTTPException(403, f"{key} {why}, so it cannot be changed from the viewer or the API; "
                                     f"run `remem config set {key} VALUE` in a terminal on this machine")
    # validate every key on a scratch copy first, so a bad value changes nothing
    with tempfile.TemporaryDirectory() as scratch:
        trial = configmod.Config(home=Path(scratch), values=configmod._merge(mem.config.values, {}),
                                 file_values={})
        for key, value in body.items():
            try:
                _check_type(key, value)
                _check_value(key, value)
                trial.set(key, value)
            except configmod.ConfigError as e:
                raise HTTPException(400, f"{key}: {e}") from None
    from ... import settings as model

    stored = {key: mem.config.set(key, value) for key, value in body.items()}
    restart = [k for k in stored if k.startswith(RESTART_KEYS)]
    if any(k.startswith("embedding.") for k in stored):
        mem.reset_embedder()  # next embedding job loads the new choice
    overridden = [k for k in stored if k in configmod.ENV_KEYS.values()
                  and any(os.environ.get(v) for v, key in configmod.ENV_KEYS.items() if key == k)]
    return {"changed": stored, "restart_required": restart, "overridden_by_environment": overridden,
            "values": model.masked(mem.config.values)}


def _check_type(key: str, value: Any) -> None:
    """JSON values must already have the setting's type (strings are parsed like the CLI does)."""
    if isinstance(value, str):
        return
    try:
        like = configmod._get(configmod.DEFAULTS, key)
    except KeyError:
        return  # agents.* and unknown keys: Config.set decides
    ok = (isinstance(value, bool) if isinstance(like, bool) else
          isinstance(value, (int, float)) and not isinstance(value, bool) if isinstance(like, (int, float)) else
          isinstance(value, type(like)))
    if not ok:
        raise configmod.ConfigError(f"expected {type(like).__name__}, got {type(value).__name__}")


# settings whose change moves data: where the database lives, who can reach the daemon, which
# servers get memory text (embedding, and any later model-server URL)
CLI_ONLY = {"database": "decides where your memories are stored", "database.url": "decides where your memories are stored",
            "server.host": "decides who can reach the daemon"}
CLI_ONLY_WORDS = ("url", "host", "endpoint", "api_key")  # in a key's last part: a server to talk to
AGENT_KEYS: dict[str, type] = {"isolated": bool, "owner": str, "read_owners": list}
MAX_NUMBER = 2 ** 53  # no setting needs more; bigger ones overflow SQLite and JSON readers


def cli_only(key: str, value: Any, cfg: configmod.Config) -> str | None:
    """Why ``key`` may only be set from the CLI (a reason for the 403), or None."""
    if isinstance(value, dict):  # a whole section at once: every setting inside it counts
        for sub, v in value.items():
            why = cli_only(f"{key}.{sub}", v, cfg)
            if why:
                return f"holds {key}.{sub}, which {why}"
        return None
    if key in CLI_ONLY:
        return CLI_ONLY[key]
    last = key.rsplit(".", 1)[-1].lower()
    if not key.startswith("agents.") and any(w in last for w in CLI_ONLY_WORDS):
        return "names a server that receives your memories"
    if key == "embedding.model" and str(value).strip().lower() == "openai":
        url = str(cfg.values.get("embedding", {}).get("openai_base_url") or "")
        if not _loopback_url(url):
            return (f"would send every memory to {url or 'an unset server'} (embedding.openai_base_url "
                    "is not on this machine)")
    return None


def _loopback_url(url: str) -> bool:
    from urllib.parse import urlsplit

    try:
        host = (urlsplit(url).hostname or "").lower()
    except ValueError:
        return False
    return host in ("localhost", "::1") or host.startswith("127.")


def _check_value(key: str, value: Any) -> None:
    """What the type check cannot see: numbers JSON can carry but no setting can hold, sections and
    agent settings of the wrong shape (Config.set range-checks the declared numbers)."""
    import math

    if isinstance(value, float) and not math.isfinite(value):
        raise configmod.ConfigError(f"expected a finite number, got {value!r}")
    if isinstance(value, int | float) and not isinstance(value, bool) and abs(value) > MAX_NUMBER:
        raise configmod.ConfigError(f"number out of range: {value!r}")
    if key != "agents" and isinstance(configmod.DEFAULTS.get(key), dict):
        raise configmod.ConfigError(f"a whole section cannot be replaced at once (the settings left out would "
                                    f"be lost); set them one by one, e.g. {key}.{next(iter(configmod.DEFAULTS[key]))}")
    parts = key.split(".")
    if parts[0] == "agents":
        if len(parts) == 1:
            if not isinstance(value, dict):
                raise configmod.ConfigError("expected a mapping of agent names to their settings")
            for name, v in value.items():
                _check_value(f"agents.{name}", v)
        elif len(parts) == 2:
            if not isinstance(value, dict):
                raise configmod.ConfigError("expected a mapping like {\"isolated\": true}")
            for sub, v in value.items():
                _check_value(f"{key}.{sub}", v)
        elif len(parts) == 3:
            want = AGENT_KEYS.get(parts[2])
            if want is None:
                raise configmod.ConfigError(f"unknown agent setting {parts[2]!r}; known: {', '.join(AGENT_KEYS)}")
            if not isinstance(value, want) or (isinstance(value, list) and not all(isinstance(o, str) for o in value)):
                raise configmod.ConfigError(f"expected {'a list of owner names' if want is list else want.__name__}"
                                            f", got {type(value).__name__}")
        else:
            raise configmod.ConfigError("agent settings are agents.<agent>.<setting>")


@router.get("/doctor", summary="Check database, index, token, embedder and job queue")
def doctor(mem: Mem, embedder: bool = False) -> dict[str, Any]:
    return mem.doctor(load_embedder=embedder)


@router.post("/recall/turn-start", summary="The memory packet an agent gets before it answers")
def turn_start(mem: Mem, who: deps.Who, body: TurnStartBody) -> dict[str, Any]:
    t0 = time.perf_counter()
    packet = mem.turn_start(body.prompt, owner=deps.owners(who, body.owner), agent=body.agent or None,
                            project=body.project or None, budget=body.budget, session=body.session_id or None,
                            core_shown=body.core_shown)
    packet = dict(packet)
    packet.setdefault("took_ms", round((time.perf_counter() - t0) * 1000, 2))
    return packet


@router.post("/recall/repair", summary="The repair packet after the same tool failure came back")
def repair(mem: Mem, who: deps.Who, body: RepairBody) -> dict[str, Any]:
    """Scoped like turn-start (the caller's owners, never wider); the packet is recorded here
    (entry ``repair``), so a hook that got it from the daemon records nothing itself."""
    t0 = time.perf_counter()
    packet = mem.repair(body.error, tool=body.tool, owner=deps.owners(who, body.owner), agent=body.agent or None,
                        budget=body.budget, project=body.project or None, command=body.command,
                        session=body.session_id or None, attempts=body.attempts)
    packet = dict(packet)
    packet.setdefault("took_ms", round((time.perf_counter() - t0) * 1000, 2))
    return packet


@router.post("/recall/session-start", summary="The project's core facts for a session's start context")
def session_start(mem: Mem, who: deps.Who, body: SessionStartBody) -> dict[str, Any]:
    return mem.session_start(project=body.project, owner=deps.owners(who, body.owner), agent=body.agent or None,
                             budget=body.budget)

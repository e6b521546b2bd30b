"""What each kind of background job does. One handler per kind, registered in ``HANDLERS``; each
adapts a job (payload, progress, pause / stop) to the task the CLI runs too (``remem.tasks``).

- ``embed``: vectors for turns in the embedding backlog (queued by every write).
- ``index``: the trigram (substring) index for turns written in bulk (queued by big writes).
- ``sync``: import new agent history through the sync engine (``remem.sources.sync``).
- ``discover``: the "add another agent" flow (``add_custom_source``).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import TYPE_CHECKING, Any

from .. import tasks
from . import optional
from .jobs import Handler, JobContext, NoRetry

if TYPE_CHECKING:
    from ..core import Remem
    from .jobs import JobRunner

log = logging.getLogger("remem.jobs")


def run_embed(ctx: JobContext) -> dict[str, Any]:
    """``tasks.embed`` with the job's pause / stop and progress (the daemon prepares the faster
    runtime at start-up, in the background: a job does not wait for it)."""
    try:
        return tasks.embed(ctx.mem, check_model=bool(ctx.payload.get("check_model")), wait_for_runtime=False,
                           should_stop=ctx.control.checkpoint, report=ctx.report)
    except tasks.EmbedderUnavailable as e:
        raise NoRetry(str(e)) from None


def run_sync_job(ctx: JobContext) -> dict[str, Any]:
    try:
        sync = optional.sync_engine()
    except optional.Unavailable as e:
        raise NoRetry(str(e)) from None
    control = sync.SyncControl()
    ctx.control.link(control)
    agents = ctx.payload.get("agents") or None
    full = bool(ctx.payload.get("full"))
    planned = planned_sources(ctx.mem, sync, agents)
    tracker = SyncProgress(planned)
    ctx.report({"phase": "syncing", "agents": agents or "all", "full": full, **tracker.view()})

    def progress(event: dict[str, Any]) -> None:
        if isinstance(event, dict):
            tracker.see(event)
            ctx.report(tracker.view())

    result = tasks.sync(ctx.mem, agents, full=full, control=control, on_progress=progress, engine=sync)
    return plain(result)


def planned_sources(mem: Remem, sync: Any, agents: list[str] | None) -> int | None:
    """How many sources this sync will walk, so the bar can span all of them (None if unknown)."""
    try:
        found = sync.detect_sources(mem)
    except Exception:
        return None
    if agents:
        found = [s for s in found if s.get("agent") in agents or s.get("name") in agents]
    return len(found) or None


class SyncProgress:
    """Folds the sync engine's per-source events into one bar and running totals."""

    def __init__(self, planned: int | None) -> None:
        self.planned = planned
        self.sources_done = 0
        self.current = ""
        self.units_done = 0
        self.units_total = 0
        self.finished: dict[str, int] = {}
        self.current_counts: dict[str, int] = {}
        self.per_source: list[dict[str, Any]] = []

    def see(self, ev: dict[str, Any]) -> None:
        kind = ev.get("event")
        counts = {k: v for k, v in ev.items() if isinstance(v, int) and not isinstance(v, bool)
                  and k not in ("units_done", "units_total", "units_read", "units_unchanged")}
        if kind == "source_start":
            self.current = str(ev.get("source") or "")
            self.units_done, self.units_total = 0, int(ev.get("units_total") or 0)
            self.current_counts = {}
        elif kind == "progress":
            self.units_done = int(ev.get("units_done") or 0)
            self.units_total = int(ev.get("units_total") or self.units_total)
            self.current_counts = counts
        elif kind == "source_done":
            self.sources_done += 1
            for k, v in counts.items():
                self.finished[k] = self.finished.get(k, 0) + v
            self.current_counts = {}
            self.units_done = self.units_total
            self.per_source.append({k: v for k, v in ev.items() if k != "event"})
        elif kind == "done":
            self.current = ""
            self.units_done = self.units_total

    def view(self) -> dict[str, Any]:
        totals = dict(self.finished)
        for k, v in self.current_counts.items():
            totals[k] = totals.get(k, 0) + v
        planned = self.planned
        if planned is not None and planned < self.sources_done + (1 if self.current else 0):
            planned = self.sources_done + (1 if self.current else 0)
        part = self.units_done / self.units_total if self.units_total else 0.0
        in_flight = 0.0 if self.current == "" or self.units_done >= self.units_total else part
        frac = (self.sources_done + in_flight) / planned if planned else (part if self.current else None)
        out: dict[str, Any] = {"source": self.current, "sources_done": self.sources_done,
                               "sources_total": planned, "units_done": self.units_done,
                               "units_total": self.units_total, "counts": totals, "sources": self.per_source}
        if frac is not None:
            out["fraction"] = round(min(1.0, frac), 4)
        return out


def run_index(ctx: JobContext) -> dict[str, Any]:
    """``tasks.index``: turns written in bulk into the trigram (substring) index."""
    return tasks.index(ctx.mem, should_stop=ctx.control.checkpoint, report=ctx.report)


def run_discover(ctx: JobContext) -> dict[str, Any]:
    try:
        add_custom_source, _ = optional.discovery()
    except optional.Unavailable as e:
        raise NoRetry(str(e)) from None
    name = str(ctx.payload.get("name") or "").strip()
    if not name:
        raise NoRetry("an agent name is required")
    ctx.report({"phase": "discovering", "name": name})
    paths = list(ctx.payload.get("paths") or [])

    def progress(event: dict[str, Any]) -> None:
        if isinstance(event, dict):
            ctx.report({k: v for k, v in event.items() if k != "event"})

    try:
        result = tasks.discover(ctx.mem, name, paths, on_progress=progress, add_source=add_custom_source)
    except ValueError as e:  # a bad name or path: retrying will not help
        raise NoRetry(str(e)) from None
    return plain(result)


def plain(value: Any) -> dict[str, Any]:
    """Results go into JSON columns and SSE events: make sure they are plain data."""
    if hasattr(value, "to_dict"):
        value = value.to_dict()
    data = json.loads(json.dumps(value, default=str))
    return data if isinstance(data, dict) else {"result": data}


def run_learn(ctx: JobContext) -> dict[str, Any]:
    """Learned memories for one owner after a sync or capture (``layers.service``)."""
    from ..layers import service

    ctx.report({"phase": "learning", "owner": ctx.payload.get("owner")})
    return plain(service.run_job(ctx.mem, ctx.payload))


def run_team_sync(ctx: JobContext) -> dict[str, Any]:
    """Push the shared projects' new turns to the team server and pull the teams' (``teamsync``)."""
    from .. import teamsync

    ctx.report({"phase": "team sync"})
    return plain(teamsync.sync(ctx.mem))


def team_joined(mem: Remem) -> bool:
    from .. import teamsync

    try:
        return bool(teamsync.link(mem.home).get("url")) and int(mem.config.get("team.sync_interval_seconds")) > 0
    except Exception:  # an unreadable link file is reported by `remem team status`, not here
        return False


#: kind → handler: the one registry of job kinds (a plugin hook can add to it later)
HANDLERS: dict[str, Handler] = {"embed": run_embed, "index": run_index, "sync": run_sync_job,
                                "discover": run_discover, "learn": run_learn,
                                "team_sync": run_team_sync}


def register(kind: str, handler: Handler) -> None:
    """Add (or replace) the handler of a job kind."""
    HANDLERS[kind] = handler


# -- background work the daemon schedules by itself ------------------------------------------

def sync_key(agents: list[str] | None, full: bool = False) -> str:
    return ("sync-full:" if full else "sync:") + (",".join(sorted(agents)) if agents else "all")


def recover(mem: Remem) -> int:
    """Jobs a killed daemon left 'running' go back to the queue (call before workers start)."""
    with mem.store.transaction():
        n = mem.store.jobs.recover()
    if n:
        log.info("recovered %s interrupted job(s)", n)
    return n


def startup(runner: JobRunner, *, background: bool = True) -> dict[str, Any]:
    """After the port is bound: queue re-embedding, auto-sync and auto-install."""
    mem = runner.mem
    out: dict[str, Any] = {}
    if not background:
        return out
    if mem.config.get("embedding.enabled"):
        runner.enqueue("embed", {"check_model": True}, dedup_key="embed:pending")
        out["embed"] = "queued"
    if mem.config.get("sync.auto") and optional.has(optional.sync_engine):
        runner.enqueue("sync", {"agents": None, "auto": True}, dedup_key=sync_key(None))
        out["sync"] = "queued"
    if team_joined(mem):
        runner.enqueue("team_sync", {}, dedup_key="team_sync")
        out["team_sync"] = "queued"
    auto_install(mem)
    return out


def auto_install(mem: Remem) -> list[str]:
    """Install integrations for agents detected for the first time (config switch, off by default)."""
    if not mem.config.get("integrations.auto_install"):
        return []
    try:
        integ = optional.integrations()
    except optional.Unavailable:
        return []
    known_path = mem.home / "known-agents.json"
    try:
        known = set(json.loads(known_path.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        known = set()
    try:
        if hasattr(integ, "detected_agents"):
            detected = set(integ.detected_agents())
        else:
            detected = {str(s["agent"]) for s in integ.status(mem) if s.get("detected")}
    except Exception as e:
        log.warning("agent detection failed: %s", e)
        return []
    installed = []
    for agent in sorted(detected - known):
        try:
            # never take over another memory provider unasked: replace=False
            res = integ.install(mem, agent, replace=False)
            status = res.get("status", "ok") if isinstance(res, dict) else "ok"
            if status in ("ok", "needs_confirmation"):
                installed.append(agent)
                log.info("installed the %s integration (auto-install is on): %s", agent, status)
            else:
                log.warning("auto-install for %s: %s %s", agent, status, res.get("error", ""))
        except Exception as e:
            log.warning("auto-install for %s failed: %s", agent, e)
    known_path.write_text(json.dumps(sorted(known | detected)), encoding="utf-8")
    return installed


class Scheduler:
    """Queues an auto-sync every ``sync.interval_seconds`` while "auto-sync sessions" is on."""

    def __init__(self, runner: JobRunner) -> None:
        self.runner = runner
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="remem-scheduler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _loop(self) -> None:
        mem = self.runner.mem
        last = team_last = time.monotonic()
        while not self._stop.wait(5.0):
            try:
                if team_joined(mem) and time.monotonic() - team_last >= int(mem.config.get("team.sync_interval_seconds")):
                    team_last = time.monotonic()
                    self.runner.enqueue("team_sync", {}, dedup_key="team_sync")
            except Exception as e:
                log.warning("scheduled team sync skipped: %s", e)
            try:
                mem.flush_access(wait=False)  # recall's access counts that met a busy database
            except Exception as e:
                log.debug("access counts not written yet: %s", e)
            try:
                interval = max(30, int(mem.config.get("sync.interval_seconds")))
                if time.monotonic() - last < interval:
                    continue
                last = time.monotonic()
                if mem.config.get("sync.auto") and optional.has(optional.sync_engine):
                    self.runner.enqueue("sync", {"agents": None, "auto": True}, dedup_key=sync_key(None))
                    auto_install(mem)
            except Exception as e:
                log.warning("scheduled sync skipped: %s", e)
        mem.store.release()  # this thread's connection only: running jobs still record their end

"""The sync engine: per-source watermarks, per-unit checkpoints, honest counts, pause/resume/stop.

Rules (see docs/sync.md):

* A unit (a file, or a session inside a database) whose size and mtime match its checkpoint is not
  re-parsed. A unit that changed (it gained messages at or after the cursor), is new, or had errors
  last time is read *whole*, so a cursor landing mid-turn never loses the opening request.
* Before importing, a content checkpoint (last message time, last message id, hash of the message
  ids) skips units whose messages did not change. Stable turn ids make the import idempotent.
* The cursor advances to the newest message time seen unless the run was stopped, left a turn
  incomplete or met a problem a later read may clear (a locked database, an unreadable file or
  directory, a half-written last line); the first such clean run uses max(scan start, newest
  message). Permanent problems (a malformed or too deeply nested line) are counted as ``failed``
  and records of an unknown type as ``skipped_unknown``; neither holds the cursor back, since
  reading the same bytes again finds nothing more.
* Imports commit in batches; a unit's checkpoint is written after its last batch, so a run killed
  in the middle is finished by the next one without duplicates.
* A unit that folds in sessions once imported on their own (``meta["absorbs"]``: a sub-agent whose
  parent showed up later, or an import from before sub-agents were folded) removes their separate
  turns and checkpoints once it has been read, before its own turns are written: the work now
  lives in the parent's turn.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import privacy
from ..agents import canonical_agent
from ..errors import RememError
from ..ingest.workers import held_lock
from ..model import Message, TurnIn
from ..scope import Scope
from .base import SOURCES, ParseStats, Source, Unit
from .turns import TurnAssembler as _Assembler

if TYPE_CHECKING:
    from ..core import Remem

BATCH = 500                  # turns per write transaction
COUNT_KEYS = ("messages_scanned", "unique_messages", "turns_added", "turns_updated", "duplicates",
              "skipped_incomplete", "skipped_oversize", "skipped_empty", "skipped_unknown", "failed",
              "turns_removed", "skipped_forgotten", "times_fixed", "ignored", "skipped_private",
              "sessions_private")
MAX_NOTES = 50               # error and skip reasons a result keeps (the counts are always complete)

ProgressFn = Callable[[dict[str, Any]], None]


class SyncBusy(RememError, RuntimeError):
    """Another sync holds this home's sync lock."""


class SyncControl:
    """Pause / resume / stop a running sync from another thread (the daemon, a signal handler)."""

    def __init__(self) -> None:
        self._run = threading.Event()
        self._run.set()
        self._stop = threading.Event()

    def pause(self) -> None:
        self._run.clear()

    def resume(self) -> None:
        self._run.set()

    def stop(self) -> None:
        self._stop.set()
        self._run.set()

    @property
    def paused(self) -> bool:
        return not self._run.is_set()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def checkpoint(self) -> bool:
        """Block while paused; True when the sync should stop."""
        while not self._run.wait(0.2):
            if self._stop.is_set():
                break
        return self._stop.is_set()


@dataclass
class SourceResult:
    source: str
    agent: str
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNT_KEYS, 0))
    errors: list[str] = field(default_factory=list)
    units_total: int = 0
    units_read: int = 0
    units_unchanged: int = 0
    newest_ts: float | None = None
    cursor: float | None = None
    newest_start: float | None = None   # newest opening request imported (custom boundary)
    stopped: bool = False
    held: int = 0                       # problems a later read may clear: they hold the cursor
    skipped: list[str] = field(default_factory=list)   # where records of an unknown type were skipped
    private_sessions: set[str] = field(default_factory=set)   # sessions with turns kept out (privacy.py)

    def kept_private(self, agent: str, sessions: set[str] | list[str], turns: int) -> None:
        """Count turns kept out for privacy, and the distinct sessions they came from."""
        self.counts["skipped_private"] += turns
        self.private_sessions.update(f"{agent}\0{s}" for s in sessions)
        self.counts["sessions_private"] = len(self.private_sessions)

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "agent": self.agent, **self.counts, "errors": self.errors[:MAX_NOTES],
                "skipped": self.skipped[:MAX_NOTES],
                "units_total": self.units_total, "units_read": self.units_read,
                "units_unchanged": self.units_unchanged, "cursor": self.cursor, "stopped": self.stopped}


# ----------------------------------------------------------------------------- state rows


def _save_checkpoint(mem: Remem, name: str, unit: Unit, *, fingerprint: bool, last_ts: float | None,
                     last_id: str, digest: str) -> None:
    """A unit's checkpoint (inside the caller's transaction when one is open); without a
    fingerprint the next sync reads the unit again."""
    mem.store.sources.save_checkpoint(name, unit.key, path=str(unit.path), size=unit.size if fingerprint else None,
                                      mtime=unit.mtime if fingerprint else None, last_ts=last_ts,
                                      last_msg_id=last_id, content_hash=digest)


def _in_projects(source: Source) -> bool:
    """A source whose histories live inside project folders (SpecStory, aider): it has no fixed
    location, ``discover_in(project folders)`` finds them."""
    return callable(getattr(source, "discover_in", None))


def _exports(source: Source) -> bool:
    """A saved export (SpecStory, aider): its last turn is as complete as the file is."""
    return _in_projects(source)


def project_dirs(mem: Remem, name: str) -> list[Path]:
    """Where source ``name`` looks for histories kept inside projects: every project folder the
    synced histories name (any agent, any owner of this home) and the folders the user added
    (``remem sources add specstory --path DIR``)."""
    owners = {mem.owner_for()} | {mem.owner_for(src.agent) for src in SOURCES.values()}
    seen = mem.store.sources.project_paths(Scope.of(sorted(owners)))
    state = mem.store.sources.state(name) or {}
    added = [str(p) for p in (state.get("rules") or {}).get("projects", [])]
    return [Path(p) for p in dict.fromkeys([*added, *seen])]


def _discover(mem: Remem, key: str, source: Source, env: Mapping[str, str]) -> list[Path]:
    if _in_projects(source):
        return list(source.discover_in(project_dirs(mem, key), env))  # type: ignore[attr-defined]
    return source.discover(env)


def _imported_twins(mem: Remem, owner: str, units: list[Unit]) -> dict[str, str]:
    """Unit key -> why it is skipped, for units that are exports of a session another source
    (``meta["twin"] = (source, session id)``) already imported."""
    by_source: dict[str, dict[str, str]] = {}
    for u in units:
        twin = u.meta.get("twin")
        if twin:
            by_source.setdefault(str(twin[0]), {})[str(twin[1])] = u.key
    out: dict[str, str] = {}
    for source, keys in by_source.items():
        for sid in mem.store.sources.imported_sessions(Scope.of(owner), source, keys):
            out[keys[sid]] = f"the same chat as {source} session {sid}, already imported from {source}"
    return out


# ----------------------------------------------------------------------------- pure rules


def needs_read(unit: Unit, checkpoint: dict[str, Any] | None, full: bool) -> bool:
    """Whether a unit must be re-read (pure; table-tested).

    A session that gained a message at or after the cursor has a new size or mtime, so the
    fingerprint check selects exactly those sessions (plus new ones, and ones whose last read
    had errors) without parsing anything else.
    """
    if full or checkpoint is None or checkpoint.get("size") is None:
        return True
    return checkpoint.get("size") != unit.size or checkpoint.get("mtime") != unit.mtime


def next_cursor(old: float | None, *, scan_start: float, newest: float | None, clean: bool) -> float | None:
    """The watermark after a run (pure; table-tested)."""
    if not clean:
        return old
    if old is None:
        return max(scan_start, newest or 0.0)
    return max(old, newest) if newest is not None else old


# ----------------------------------------------------------------------------- the run


class _Digest:
    def __init__(self) -> None:
        self.h = hashlib.sha256()
        self.last_ts: float | None = None
        self.last_id = ""
        self.newest: float | None = None
        self.ids: set[str] = set()
        self.scanned = 0

    def see(self, m: Message) -> None:
        self.scanned += 1
        self.h.update(f"{m.session_id}\x00{m.source_id}\x00{len(m.text)}\x00{m.status}\n".encode(
            "utf-8", "replace"))
        self.ids.add(f"{m.session_id}\x00{m.source_id}")
        self.last_id = m.source_id
        if m.ts is not None:
            self.last_ts = m.ts
            if self.newest is None or m.ts > self.newest:
                self.newest = m.ts


def policy_for(mem: Remem) -> privacy.Policy:
    """What this sync keeps out: incognito sessions, the home switch's spans, ignored projects."""
    return privacy.Policy.load(mem.home, mem.config.get("capture.ignore_projects"))


def _write(mem: Remem, res: SourceResult, turns: list[TurnIn],
           fallback_ts: float | list[float | None] | None = None, policy: privacy.Policy | None = None) -> None:
    """Write one batch; ``fallback_ts`` (the history file's time, one or one per turn) replaces a
    time no turn can hold. Turns ``policy`` keeps out are counted, never written."""
    if policy is not None and turns:
        per = fallback_ts if isinstance(fallback_ts, list) else None
        keep = [i for i, t in enumerate(turns) if not policy.reason(t.session_id, t.project, t.started_at)]
        if len(keep) < len(turns):
            out = set(range(len(turns))) - set(keep)
            res.kept_private(turns[0].agent, {turns[i].session_id for i in out}, len(out))
            turns = [turns[i] for i in keep]
            fallback_ts = [per[i] for i in keep] if per is not None else fallback_ts
    if not turns:
        return
    batch = mem.add_turns(turns, defer_index=True, fallback_ts=fallback_ts)
    c = batch.counts
    res.counts["turns_added"] += c["added"]
    res.counts["turns_updated"] += c["updated"]
    res.counts["duplicates"] += c["duplicate"]
    res.counts["skipped_oversize"] += c["skipped_oversize"]
    res.counts["skipped_empty"] += c["skipped_empty"]
    res.counts["skipped_forgotten"] += c["skipped_forgotten"]  # the user forgot them (tombstones)
    res.counts["times_fixed"] += c["times_fixed"]  # an implausible time replaced by the turn's other one


class _Group:
    """The turns and checkpoints of several units, written together: one transaction per ~BATCH
    turns instead of one per file (each commit flushes the word index and rewrites the entity
    indexes' pages). A unit's checkpoint is saved only after all of its turns are committed."""

    def __init__(self, mem: Remem, name: str, res: SourceResult, policy: privacy.Policy | None = None) -> None:
        self.mem, self.name, self.res = mem, name, res
        self.policy = policy if policy is not None else policy_for(mem)
        self.turns: list[TurnIn] = []
        self.fallbacks: list[float | None] = []
        self.done: list[tuple[Unit, bool, float | None, str, str]] = []

    def add(self, turns: list[TurnIn], fallback_ts: float | None) -> None:
        self.turns.extend(turns)
        self.fallbacks.extend([fallback_ts] * len(turns))
        if len(self.turns) >= BATCH:
            self.flush()

    def finish(self, unit: Unit, *, fingerprint: bool, last_ts: float | None, last_id: str, digest: str) -> None:
        self.done.append((unit, fingerprint, last_ts, last_id, digest))

    def flush(self) -> None:
        """Write what is held; on an error, each finished unit held is counted failed (no checkpoint,
        so the next sync reads it again) and the error is raised for the unit being read."""
        turns, fallbacks, done = self.turns, self.fallbacks, self.done
        self.turns, self.fallbacks, self.done = [], [], []
        try:
            _write(self.mem, self.res, turns, fallbacks, self.policy)
        except Exception as e:
            for unit, *_ in done:
                self.res.counts["failed"] += 1
                self.res.held += 1
                self.res.errors.append(f"{unit.path}: {type(e).__name__}: {e}")
            raise
        if done:
            with self.mem.store.transaction():
                for unit, fingerprint, last_ts, last_id, digest in done:
                    _save_checkpoint(self.mem, self.name, unit, fingerprint=fingerprint, last_ts=last_ts,
                                     last_id=last_id, digest=digest)


def _drop_absorbed(mem: Remem, name: str, unit: Unit, owner: str, ckpts: dict[str, dict[str, Any]],
                   res: SourceResult) -> None:
    """Remove the separate turns of sessions this unit now folds in (only those once imported as a
    unit of their own, known by their checkpoint), and their checkpoints."""
    for key, session_id in unit.meta.get("absorbs", ()):
        if key == unit.key or key not in ckpts:
            continue
        gone = mem.forget(session=session_id, owner=owner, keep_out=False)  # moved, not forgotten
        res.counts["turns_removed"] += len(gone)
        mem.store.sources.drop_checkpoint(name, key)
        del ckpts[key]


def _import_unit(mem: Remem, source: Source, name: str, unit: Unit, ckpt: dict[str, Any] | None,
                 res: SourceResult, owner: str, control: SyncControl,
                 boundary: float | None, ckpts: dict[str, dict[str, Any]] | None = None,
                 group: _Group | None = None) -> bool:
    """Read and import one unit (its writes held in ``group`` with other units'; without one they
    are written before this returns). Returns False when stopped midway."""
    own = group is None
    group = group or _Group(mem, name, res)
    stats = ParseStats()
    digest = _Digest()
    asm = _Assembler(source.agent, owner, int(mem.config.get("ingest.max_tool_output")), True)

    def stream() -> Iterator[Message]:
        for m in source.read(unit, stats):
            digest.see(m)
            yield m

    # pass 1 (cheap): was the unit's content already imported exactly like this?
    pending: list[TurnIn] = []
    stopped = False
    try:
        messages = list(stream()) if unit.size < 8 * 1024 * 1024 else None
    except Exception as e:  # a parser bug must not abort the whole source
        res.counts["failed"] += 1
        res.held += 1
        res.errors.append(f"{unit.path}: {type(e).__name__}: {e}")
        return True
    if ckpts is not None:
        if unit.meta.get("absorbs"):
            try:  # what it absorbs may be held unwritten
                group.flush()
            except Exception:
                return True
        # before writing: a stored twin of a folded-in turn must not be matched and updated in place
        _drop_absorbed(mem, name, unit, owner, ckpts, res)
    if messages is not None and ckpt and ckpt.get("content_hash") == digest.h.hexdigest():
        res.counts["messages_scanned"] += digest.scanned
        res.counts["unique_messages"] += len(digest.ids)
        _finish_unit(group, unit, stats, digest, res)
        if own:
            return _flushed(group)
        return True
    if messages is None:  # large unit: stream it, bounded memory
        source_iter: Iterator[Message] = stream()
    else:
        source_iter = iter(messages)
    try:
        for i, m in enumerate(source_iter):
            asm.feed(m)
            if asm.result.turns:
                pending.extend(_keep(asm.result.turns, name, boundary, res))
                asm.result.turns.clear()
            if len(pending) >= BATCH:
                group.add(pending, unit.mtime)
                pending = []
            if i % 2000 == 0 and control.checkpoint():
                stopped = True
                break
        if not stopped:
            done = asm.finish(complete=_exports(source))
            pending.extend(_keep(done.turns, name, boundary, res))
            group.add(pending, unit.mtime)
    except Exception as e:
        res.counts["failed"] += 1
        res.held += 1
        res.errors.append(f"{unit.path}: {type(e).__name__}: {e}")
        return True
    res.counts["messages_scanned"] += digest.scanned
    res.counts["unique_messages"] += len(digest.ids)
    if stopped:
        if own:
            _flushed(group)
        return False
    res.counts["skipped_incomplete"] += asm.result.incomplete
    res.counts["ignored"] += asm.result.ignored   # /remem-resume requests and picks: no memories
    if asm.result.private:   # /remem-incognito stretches recorded in the history itself
        res.kept_private(source.agent, asm.result.private_sessions, asm.result.private)
    _finish_unit(group, unit, stats, digest, res)
    if own:
        return _flushed(group)
    return True


def _flushed(group: _Group) -> bool:
    """Flush ``group``; its failure is already counted (``_Group.flush``)."""
    with contextlib.suppress(Exception):
        group.flush()
    return True


def _keep(turns: list[TurnIn], name: str, boundary: float | None, res: SourceResult) -> list[TurnIn]:
    out = []
    for t in turns:
        t.source_name = name
        # discovered sources: only turns whose opening request is strictly newer than the boundary
        if boundary is not None and (t.started_at is None or t.started_at <= boundary):
            continue
        if t.started_at is not None and (res.newest_start is None or t.started_at > res.newest_start):
            res.newest_start = t.started_at
        out.append(t)
    return out


def _finish_unit(group: _Group, unit: Unit, stats: ParseStats, digest: _Digest,
                 res: SourceResult) -> None:
    _count_stats(res, stats, str(unit.path))
    if digest.newest is not None and (res.newest_ts is None or digest.newest > res.newest_ts):
        res.newest_ts = digest.newest
    # a unit whose read may find more next time (half-written line, locked or unreadable file) keeps
    # no fingerprint, so the next sync reads it again; permanent problems are reported once per change
    group.finish(unit, fingerprint=not stats.transient, last_ts=digest.last_ts,
                 last_id=digest.last_id, digest=digest.h.hexdigest())


def _count_stats(res: SourceResult, stats: ParseStats, where: str) -> None:
    """Fold one read's (or listing's) problems into a source's result."""
    if stats.bad:
        res.counts["failed"] += stats.bad
        for reason, n in stats.errors.items():
            res.errors.append(f"{where}: {reason} ×{n}")
    if stats.unknown:
        res.counts["skipped_unknown"] += sum(stats.unknown.values())
        for reason, n in stats.unknown.items():
            res.skipped.append(f"{where}: {reason} ×{n}")
    if stats.transient:
        res.held += 1


def sync_source(mem: Remem, source: Source, *, name: str | None = None, roots: list[Path] | None = None,
                env: Mapping[str, str] | None = None, full: bool = False, control: SyncControl | None = None,
                on_progress: ProgressFn | None = None, boundary_mode: bool = False,
                limit_turns: int | None = None) -> SourceResult:
    """Sync one source. ``roots`` overrides discovery (custom sources)."""
    control = control or SyncControl()
    env = os.environ if env is None else env
    name = name or source.agent
    res = SourceResult(source=name, agent=source.agent)
    scan_start = time.time()
    stats = ParseStats()
    found: list[Path] = roots if roots is not None else source.discover(env)
    state = mem.store.sources.ensure(name, agent=source.agent, path=str(found[0]) if found else "",
                                     format=source.format)
    units: list[Unit] = []
    for root in found:
        try:
            units.extend(source.list_units(root, stats))
        except Exception as e:
            res.counts["failed"] += 1
            res.held += 1
            res.errors.append(f"{root}: {type(e).__name__}: {e}")
    # listing problems (an unreadable directory) are reported with the path they concern
    res.counts["failed"] += stats.bad
    res.errors.extend(stats.samples if stats.samples else
                      [f"{name}: {reason} ×{n}" for reason, n in stats.errors.items()])
    if stats.transient:
        res.held += 1
    cursor = state.get("cursor")
    boundary = state.get("boundary") if boundary_mode else None
    ckpts = mem.store.sources.checkpoints(name)
    owner = mem.owner_for(source.agent)
    res.units_total = len(units)
    emit = on_progress or (lambda _e: None)
    emit({"event": "source_start", "source": name, "agent": source.agent, "units_total": len(units)})
    group = _Group(mem, name, res, policy_for(mem))
    twins = _imported_twins(mem, owner, [u for u in units if needs_read(u, ckpts.get(u.key), full)])
    for i, unit in enumerate(units, 1):
        if control.checkpoint():
            res.stopped = True
            break
        ck = ckpts.get(unit.key)
        if not needs_read(unit, ck, full):
            res.units_unchanged += 1
        elif unit.key in twins:
            # an export of a chat already imported from the agent's own store: not stored twice
            res.units_unchanged += 1
            res.skipped.append(f"{unit.path}: {twins[unit.key]}")
            group.finish(unit, fingerprint=True, last_ts=None, last_id="", digest="twin")
        else:
            res.units_read += 1
            if not _import_unit(mem, source, name, unit, None if full else ck, res, owner, control, boundary,
                                ckpts, group):
                res.stopped = True
                break
        if i == len(units):
            _flushed(group)
        if i % 5 == 0 or i == len(units):
            emit({"event": "progress", "source": name, "units_done": i, "units_total": len(units),
                  **res.counts})
    _flushed(group)   # what a stop left held
    clean = not res.stopped and res.held == 0 and res.counts["skipped_incomplete"] == 0
    res.cursor = next_cursor(cursor, scan_start=scan_start, newest=res.newest_ts, clean=clean)
    raise_boundary = res.newest_start if boundary_mode and clean else None
    mem.store.sources.record_run(name, cursor=res.cursor, scan_start=scan_start, clean=clean,
                                 result=res.to_dict(), boundary=raise_boundary)
    emit({"event": "source_done", **res.to_dict()})
    return res


@contextlib.contextmanager
def sync_lock(mem: Remem) -> Iterator[None]:
    path = mem.home / "sync.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SyncBusy("another sync is running for this remem home") from None
        with held_lock(fd):        # the sync's forked import workers never hold it (a kill -9 frees it)
            yield
    finally:
        os.close(fd)


def run_sync(mem: Remem, agents: list[str] | None = None, *, full: bool = False,
             control: SyncControl | None = None, on_progress: ProgressFn | None = None,
             env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Sync the given agents (default: every detected source, built-in and discovered)."""
    from .custom import custom_sources

    env = os.environ if env is None else env
    control = control or SyncControl()
    policy_for(mem)   # an unreadable privacy.json stops the sync before it reads anything
    wanted = [canonical_agent(a) for a in agents] if agents else None
    plan: list[tuple[Source, str, list[Path] | None, bool]] = []
    for key, src in SOURCES.items():
        if wanted is not None and key not in wanted and src.agent not in wanted:
            continue
        if _in_projects(src):
            plan.append((src, key, None, False))   # its roots are found when its turn comes (below)
            continue
        roots = src.discover(env)
        if roots:
            plan.append((src, key, roots, False))
    for name, src, roots in custom_sources(mem):
        if wanted is None or src.agent in wanted or name in (agents or []):
            plan.append((src, name, roots, True))
    total = dict.fromkeys(COUNT_KEYS, 0)
    per: list[dict[str, Any]] = []
    errors: list[str] = []
    skipped: list[str] = []
    synced: set[str] = set()
    t0 = time.time()
    with sync_lock(mem), mem.import_workers():
        for src, name, given, custom in plan:
            if control.stopped:
                break
            if given is None:
                # inside project folders: the ones the histories synced so far name, and the user's
                given = _discover(mem, name, src, env)
                if not given:
                    continue
            synced.update((name, src.agent))
            r = sync_source(mem, src, name=name, roots=given, env=env, full=full, control=control,
                            on_progress=on_progress, boundary_mode=custom)
            per.append(r.to_dict())
            for k in COUNT_KEYS:
                total[k] += r.counts[k]
            errors.extend(r.errors)
            skipped.extend(r.skipped)
    missing = [a for a in wanted or [] if a not in synced and not control.stopped]
    errors[:0] = [f"{a}: no history found on this machine" for a in missing]
    total["errors"] = errors[:100]  # type: ignore[assignment]
    total["skipped"] = skipped[:100]  # type: ignore[assignment]
    out = {"sources": per, "total": total, "stopped": control.stopped, "seconds": round(time.time() - t0, 3)}
    if on_progress:
        on_progress({"event": "done", **out})
    return out


def run_first_import(mem: Remem, name: str, source: Source, roots: list[Path], *,
                     limit: int = 500) -> dict[str, Any]:
    """A discovered source's first import: the most recent ``limit`` complete turns, then the
    boundary (newest opening request seen) for later syncs."""
    import heapq

    res = SourceResult(source=name, agent=source.agent)
    owner = mem.owner_for(source.agent)
    best: list[tuple[float, int, TurnIn]] = []
    newest: float | None = None
    seq = 0
    units: list[Unit] = []
    stats = ParseStats()
    for root in roots:
        units.extend(source.list_units(root, stats))
    group = _Group(mem, name, res)
    with sync_lock(mem):
        for unit in units:
            ustats = ParseStats()
            digest = _Digest()
            asm = _Assembler(source.agent, owner, int(mem.config.get("ingest.max_tool_output")), True)
            for m in source.read(unit, ustats):
                digest.see(m)
                asm.feed(m)
            done = asm.finish(complete=_exports(source))
            res.counts["messages_scanned"] += digest.scanned
            res.counts["unique_messages"] += len(digest.ids)
            res.counts["skipped_incomplete"] += done.incomplete
            if done.private:
                res.kept_private(source.agent, done.private_sessions, done.private)
            for t in done.turns:
                t.source_name = name
                start = t.started_at or 0.0
                newest = start if newest is None else max(newest, start)
                seq += 1
                item = (start, seq, t)
                if len(best) < limit:
                    heapq.heappush(best, item)
                else:
                    heapq.heappushpop(best, item)
            _finish_unit(group, unit, ustats, digest, res)
        group.flush()   # the checkpoints (no turns held)
        chosen = [t for _, _, t in sorted(best)]
        for i in range(0, len(chosen), BATCH):
            _write(mem, res, chosen[i : i + BATCH], policy=group.policy)
        mem.store.sources.record_first_import(name, boundary=newest, cursor=res.newest_ts,
                                              result=res.to_dict())
    return res.to_dict()


def _bytes_on_disk(units: list[Unit]) -> int:
    """What a source's history takes on disk. A file unit's ``size`` is its bytes (with its parts);
    a database session's is a row count, so a database counts once, by the size of its files."""
    total = 0
    databases: set[Path] = set()
    for u in units:
        if not u.path.is_file():
            continue
        if "#" in u.key and u.key.rsplit("#", 1)[0] == f"{u.agent}:{u.path}":
            databases.add(u.path)  # "<agent>:<db path>#<session>": one session of a database
        else:
            total += u.size
    for db in databases:
        for f in (db, db.with_name(db.name + "-wal")):
            with contextlib.suppress(OSError):
                total += f.stat().st_size
    return total


def detect_sources(mem: Remem, env: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """Sources found on this machine (built-in and discovered), with size, last sync and cursor.

    Drafts (discovery not verified) are not listed. Nothing is written to any agent's files.
    """
    from .custom import custom_sources

    env = os.environ if env is None else env
    states = mem.store.sources.states()
    found: list[tuple[str, Source, list[Path]]] = []
    for key, src in SOURCES.items():
        roots = _discover(mem, key, src, env)
        if roots:
            found.append((key, src, roots))
    found.extend(custom_sources(mem))
    out = []
    for name, src, roots in found:
        stats = ParseStats()
        units: list[Unit] = []
        for root in roots:
            with contextlib.suppress(Exception):
                units.extend(src.list_units(root, stats))
        st = states.get(name, {})
        out.append({"name": name, "agent": src.agent, "format": src.format, "paths": [str(r) for r in roots],
                    "units": len(units), "bytes": _bytes_on_disk(units),
                    "last_sync_at": st.get("last_sync_at"), "last_scan_at": st.get("last_scan_at"),
                    "cursor": st.get("cursor"), "custom": name.startswith("custom:")})
    return out

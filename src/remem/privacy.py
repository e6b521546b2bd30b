"""Privacy modes: incognito sessions, the home's incognito switch and per-project capture opt-out
(standard library only: the hook reads it on every call).

What is kept out is never captured by a hook, never imported by ``remem sync``, never learned from,
and an incognito session or an ignored project gets nothing recalled into it.

* **Incognito sessions.** ``REMEM_INCOGNITO=1`` in a hook run's environment, or the prompt
  ``/remem-incognito`` in a session (``/remem-incognito off`` ends it). The session's id and the
  span of time it was incognito are kept in ``REMEM_HOME/privacy/sessions/<hash>.json`` (ids and
  times only, never text; one small file per session, so a hook reads only its own), so that a later ``remem sync`` of the same agent's history files skips those turns too.
  A span opened by the variable ends at the session's first hook run without it; one opened by the
  command only by ``/remem-incognito off``.
* **The home switch** (the viewer's Incognito toggle, ``PUT /api/v1/privacy``): capture paused for
  every agent of this home until switched off; its spans are kept in ``REMEM_HOME/privacy.json``, so a sync
  after it skips what the agents wrote meanwhile.
* **Ignored projects.** A ``.remem-ignore`` file (its content is not read: an empty file will do)
  in the project folder or any parent up to the user's home, or a match in the setting
  ``capture.ignore_projects`` (absolute or ``~`` paths: that folder and below; or glob patterns).

The spans are never pruned: the agents' history files outlive them otherwise, and a later sync would
import what was meant to stay out. A session's span starts ``SLACK`` seconds before the hook saw it,
because the agent may write the prompt to its history a moment before it runs the hook.
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import json
import os
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from .errors import RememError

try:  # POSIX only; elsewhere the file is rewritten without a lock
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

FILE = "privacy.json"
IGNORE_FILE = ".remem-ignore"
ENV = "REMEM_INCOGNITO"
SLACK = 2.0          # seconds a session's span starts before the hook run that opened it
VERSION = 1
TRUE = ("1", "true", "yes", "on", "t", "y")

_COMMAND = re.compile(r"^\s*/?remem[-_]incognito\b:?[ \t]*(.*)$", re.S | re.I)
_WRAPPER = re.compile(r"<command-name>\s*/?remem[-_]incognito\s*</command-name>", re.I)
_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.S)
_GLOB = re.compile(r"[*?\[]")


def env_incognito(env: Mapping[str, str]) -> bool:
    """``REMEM_INCOGNITO`` is set to a true value (1, true, yes, on)."""
    return str(env.get(ENV) or "").strip().lower() in TRUE


def parse_command(text: str) -> str | None:
    """"on", "off" or "status" when ``text`` is a ``/remem-incognito`` command (typed, or Claude Code's
    ``<command-name>`` wrapper in a history file), else None. An unknown argument means "on": a typo
    must never leave a session recorded."""
    text = text or ""
    m = _COMMAND.match(text)
    if m:
        arg = m.group(1).strip()
        arg = arg.splitlines()[0].strip().lower() if arg else ""   # Claude Code appends the command file
    elif _WRAPPER.search(text):
        a = _ARGS.search(text)
        arg = (a.group(1).strip().lower() if a else "")
    else:
        return None
    if arg in ("off", "stop", "end", "false", "0", "no"):
        return "off"
    if arg == "status":
        return "status"
    return "on"


# -- the spans file ----------------------------------------------------------------------------


class State:
    """The kept-out spans: the home switch's and each incognito session's. A span is
    ``[since, until]`` (``until`` None while open); a session's spans also say what opened them."""

    def __init__(self, data: Mapping[str, Any] | None = None, *, broken: str = "") -> None:
        self.broken = broken     # why a privacy file could not be read ("" = they could, or are absent)
        data = data if isinstance(data, Mapping) else {}
        self.paused: list[list[Any]] = [list(s) for s in data.get("paused") or [] if _span(s)]
        self.sessions: dict[str, dict[str, Any]] = {}
        for sid, entry in (data.get("sessions") or {}).items():
            if isinstance(entry, Mapping):
                self.add_session({**entry, "session_id": sid})

    @classmethod
    def copy_of(cls, other: State) -> State:
        st = cls(broken=other.broken)
        st.paused = [list(s) for s in other.paused]
        st.sessions = {k: {"agent": v["agent"], "spans": [list(s) for s in v["spans"]]}
                       for k, v in other.sessions.items()}
        return st

    def add_session(self, entry: Mapping[str, Any]) -> None:
        """One session's file (``{"session_id", "agent", "spans"}``); malformed spans are skipped."""
        sid = str(entry.get("session_id") or "")
        spans = [list(s) for s in entry.get("spans") or [] if _span(s)]
        if sid and spans:
            self.sessions[sid] = {"agent": str(entry.get("agent") or ""), "spans": spans}

    def to_dict(self) -> dict[str, Any]:
        return {"version": VERSION, "paused": self.paused, "sessions": self.sessions}

    # -- the home switch
    @property
    def home_paused(self) -> bool:
        return bool(self.paused) and self.paused[-1][1] is None

    @property
    def paused_since(self) -> float | None:
        return float(self.paused[-1][0]) if self.home_paused else None

    def pause(self, now: float) -> bool:
        if self.home_paused:
            return False
        self.paused.append([now, None])
        return True

    def unpause(self, now: float) -> bool:
        if not self.home_paused:
            return False
        self.paused[-1][1] = max(now, float(self.paused[-1][0]))
        return True

    # -- sessions
    def open_span(self, session_id: str) -> list[Any] | None:
        spans = (self.sessions.get(session_id) or {}).get("spans") or []
        return spans[-1] if spans and spans[-1][1] is None else None

    def session_on(self, session_id: str, agent: str, now: float, by: str) -> bool:
        if not session_id or self.open_span(session_id) is not None:
            return False
        entry = self.sessions.setdefault(session_id, {"agent": agent, "spans": []})
        entry["spans"].append([now - SLACK, None, by])
        return True

    def session_off(self, session_id: str, now: float, *, by: str | None = None) -> bool:
        """Close the session's open span (only one opened by ``by``, when given)."""
        span = self.open_span(session_id)
        if span is None or by is not None and (span[2] if len(span) > 2 else "") != by:
            return False
        span[1] = max(now, float(span[0]))
        return True

    # -- what is kept out
    def keeps_out(self, session_id: str, ts: float | None) -> str | None:
        """Why a turn of ``session_id`` started at ``ts`` stays out ("incognito", "paused"), or None.
        A turn without a time stays out when its session was ever incognito."""
        spans = (self.sessions.get(session_id) or {}).get("spans") or [] if session_id else []
        if spans and (ts is None or any(_inside(s, ts) for s in spans)):
            return "incognito"
        if ts is not None and any(_inside(s, ts) for s in self.paused):
            return "paused"
        return None

    def incognito_sessions(self) -> set[str]:
        return set(self.sessions)


def _span(s: Any) -> bool:
    return isinstance(s, (list, tuple)) and len(s) >= 2 and isinstance(s[0], (int, float)) \
        and (s[1] is None or isinstance(s[1], (int, float)))


def _inside(span: Sequence[Any], ts: float) -> bool:
    return float(span[0]) <= ts and (span[1] is None or ts < float(span[1]))


def path_of(home: Path) -> Path:
    """The home switch's spans."""
    return Path(home) / FILE


def sessions_dir(home: Path) -> Path:
    """One small file per incognito session (its id, agent and spans): a hook reads only its own."""
    return Path(home) / "privacy" / "sessions"


def session_path(home: Path, session_id: str) -> Path:
    digest = hashlib.sha256(session_id.encode("utf-8", "replace")).hexdigest()[:32]
    return sessions_dir(home) / f"{digest}.json"


def _read(path: Path) -> tuple[dict[str, Any] | None, str]:
    """(data, "") or (None, why it is unreadable); ({}, "") when the file does not exist."""
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}, ""
    except (OSError, UnicodeDecodeError) as e:
        return None, f"{path}: cannot read it ({getattr(e, 'strerror', None) or e}); fix its permissions"
    try:
        data = json.loads(raw) if raw.strip() else {}
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return None, (f"{path}: not remem's privacy file (invalid JSON); fix or move it away: it holds "
                      "which sessions stay out of memory")
    return data, ""


def load(home: Path, session_id: str | None = None) -> State:
    """The spans of ``home``: the home switch's and every incognito session's, or with ``session_id``
    only that session's (what a hook needs: two small reads whatever the number of sessions). A file
    that cannot be read or is not a spans file gives a State whose ``broken`` says why: the hook then
    keeps everything out (it cannot tell which sessions are incognito), ``remem sync`` refuses with
    that reason, and :func:`edit` never overwrites it — the spans are never lost."""
    if session_id is None:
        stamp = (str(home), _stamp(path_of(home)), _stamp(sessions_dir(home)))
        hit = _FULL.get(stamp[0])
        if hit is not None and hit[0] == stamp:
            return State.copy_of(hit[1])
    data, broken = _read(path_of(home))
    st = State(data or {}, broken=broken)
    if session_id is not None:
        paths = [session_path(home, session_id)] if session_id else []
    else:
        try:
            paths = sorted(sessions_dir(home).glob("*.json"))
        except OSError as e:
            st.broken = st.broken or f"{sessions_dir(home)}: cannot list it ({e.strerror or e})"
            paths = []
    for path in paths:
        entry, why = _read(path)
        if why:
            st.broken = st.broken or why
        elif entry:
            st.add_session(entry)
    if session_id is None and not st.broken:
        _FULL[stamp[0]] = (stamp, State.copy_of(st))   # every change replaces a file: new stamps
    return st


_FULL: dict[str, tuple[tuple[Any, ...], State]] = {}   # a sync or a learn run reads all sessions once


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


class PrivacyFileError(RememError):
    """A privacy file exists but cannot be read as spans: it is left as it is."""


@contextlib.contextmanager
def edit(home: Path, session_id: str | None = None) -> Iterator[State]:
    """Read, change and atomically rewrite the spans under a lock (hooks run in parallel); with
    ``session_id`` only that session's spans are read (and may be changed)."""
    home = Path(home)
    home.mkdir(parents=True, exist_ok=True)
    lock_fd = os.open(str(path_of(home)) + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        if fcntl is not None:
            fcntl.flock(lock_fd, fcntl.LOCK_EX)
        st = load(home, session_id)
        if st.broken:
            raise PrivacyFileError(st.broken)
        paused = json.dumps(st.paused)
        sessions = {sid: json.dumps(e, sort_keys=True) for sid, e in st.sessions.items()}
        yield st
        if json.dumps(st.paused) != paused:
            _write(path_of(home), {"version": VERSION, "paused": st.paused})
        for sid, entry in st.sessions.items():
            if sessions.get(sid) != json.dumps(entry, sort_keys=True):
                _write(session_path(home, sid), {"version": VERSION, "session_id": sid, **entry})
    finally:
        os.close(lock_fd)


def _write(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(data, f, sort_keys=True)
    os.replace(tmp, path)


def set_paused(home: Path, on: bool, now: float | None = None) -> State:
    """Switch the home's incognito on or off; returns the new state."""
    now = time.time() if now is None else now
    with edit(home, "") as st:      # the switch's own file only
        if on:
            st.pause(now)
        else:
            st.unpause(now)
    return st


def status(home: Path) -> dict[str, Any]:
    """What ``remem status``, the REST endpoint and the viewer show."""
    st = load(home)
    if st.broken:
        return {"incognito": None, "since": None, "incognito_sessions": 0, "sessions_kept_out": 0,
                "error": st.broken}
    return {"incognito": st.home_paused, "since": st.paused_since,
            "incognito_sessions": sum(1 for s in st.sessions if st.open_span(s) is not None),
            "sessions_kept_out": len(st.sessions)}


# -- ignored projects --------------------------------------------------------------------------


def check_pattern(entry: str) -> str:
    """One ``capture.ignore_projects`` entry, checked: an absolute or ``~`` path, or a glob pattern.
    ValueError (with what is allowed) for anything else, e.g. an empty or a relative path."""
    e = str(entry).strip()
    if not e:
        raise ValueError("an empty entry")
    if _GLOB.search(e) or e.startswith("~") or os.path.isabs(e):
        return e
    raise ValueError(f"{e!r} is neither an absolute path, a ~/path nor a glob pattern")


def _norm(path: str) -> str:
    return os.path.normpath(os.path.expanduser(path))


def listed(project: str, patterns: Sequence[str]) -> str | None:
    """The ``capture.ignore_projects`` entry that matches ``project`` (a folder), or None. Entries
    that are not valid (a hand-edited mirror) match nothing."""
    if not project:
        return None
    p = _norm(project)
    for raw in patterns or ():
        try:
            e = check_pattern(raw)
        except ValueError:
            continue
        if _GLOB.search(e):
            if fnmatch.fnmatchcase(p, _norm(e)) or fnmatch.fnmatchcase(p, _norm(e).rstrip(os.sep) + os.sep + "*"):
                return e
            continue
        root = _norm(e)
        if p == root or p.startswith(root.rstrip(os.sep) + os.sep):
            return e
    return None


def ignore_file(project: str, home_dir: Path | None = None) -> Path | None:
    """The ``.remem-ignore`` in ``project`` or a parent (up to and including the user's home, else up
    to the root), or None. Only its presence counts: an unreadable file still keeps the project out."""
    if not project or not os.path.isabs(os.path.expanduser(project)):
        return None
    d = Path(_norm(project))
    stop = Path(_norm(str(home_dir))) if home_dir is not None else _home_dir()
    for folder in (d, *d.parents):
        candidate = folder / IGNORE_FILE
        try:
            if os.path.lexists(candidate):
                return candidate
        except (OSError, ValueError):
            pass
        if stop is not None and folder == stop:
            break
    return None


def _home_dir() -> Path | None:
    try:
        return Path(_norm(str(Path.home())))
    except (RuntimeError, KeyError, OSError):
        return None


class Policy:
    """What capture keeps out, for one run (a hook call, a sync, a learn): the spans file read once,
    the ignore list, and each project's answer cached."""

    def __init__(self, state: State, ignore_projects: Sequence[str] = (), home_dir: Path | None = None) -> None:
        self.state = state
        self.patterns = [str(p) for p in ignore_projects or () if isinstance(p, (str, int, float))]
        self.home_dir = home_dir
        self._projects: dict[str, str | None] = {}

    @classmethod
    def load(cls, home: Path, ignore_projects: Sequence[str] = ()) -> Policy:
        """The policy of ``home``; :class:`PrivacyFileError` when its spans cannot be read (a sync
        must not import what may have been incognito: the history files wait until it is fixed)."""
        st = load(home)
        if st.broken:
            raise PrivacyFileError(st.broken)
        return cls(st, ignore_projects)

    def project_reason(self, project: str) -> str | None:
        """Why ``project`` is not captured ("ignored by …"), or None."""
        if project not in self._projects:
            hit = listed(project, self.patterns)
            if hit is not None:
                self._projects[project] = f"capture.ignore_projects: {hit}"
            else:
                f = ignore_file(project, self.home_dir)
                self._projects[project] = f"{f}" if f is not None else None
        return self._projects[project]

    def reason(self, session_id: str, project: str, started_at: float | None) -> str | None:
        """Why a turn stays out ("incognito", "paused", an ignore file or entry), or None."""
        return self.state.keeps_out(session_id, started_at) or self.project_reason(project)

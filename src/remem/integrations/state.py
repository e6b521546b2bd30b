"""Per-session hook state in ``REMEM_HOME/hooks/state``: the open turn, its tool trajectory,
the transcript offset already processed and the last ``/remem-resume`` candidates.

Every hook call is a new process, so whatever one call learns (the prompt at turn start, each
tool result) is kept here for the call that completes the turn. A session's file is locked
(``flock``) while a call reads and rewrites it, because agents may run tool hooks in parallel.

What is written is redacted first (the same stdlib-only redactor as the store), so a secret in a
prompt or a tool's output never reaches the disk in clear, not even for the seconds a turn is
open. Only strings that are new since the file was read are redacted: the rest already was.
State files of sessions idle longer than ``MAX_AGE_SECONDS`` are pruned whenever a new session's
file is created.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..ingest.redact import redact_value as redacted  # every string of a JSON value; `seen` skipped

try:  # POSIX only; on other systems the state is simply not locked
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

MAX_AGE_SECONDS = 2 * 24 * 3600   # an open turn or a resume list is useless after two idle days
MAX_TOOLS = 200                   # a runaway loop must not grow one state file without bound


def state_dir(home: Path) -> Path:
    return home / "hooks" / "state"


def _key(agent: str, session_id: str) -> str:
    digest = hashlib.sha256(f"{agent}\0{session_id}".encode("utf-8", "replace")).hexdigest()[:24]
    return f"{agent}-{digest}"


def state_path(home: Path, agent: str, session_id: str) -> Path:
    return state_dir(home) / f"{_key(agent, session_id or 'no-session')}.json"


@contextlib.contextmanager
def session_state(home: Path, agent: str, session_id: str) -> Iterator[dict[str, Any]]:
    """Yield the session's state dict; it is written back (atomically) when the block ends."""
    path = state_path(home, agent, session_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    new_session = not path.exists()
    lock_fd = os.open(str(path) + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        if fcntl is not None:
            fcntl.flock(lock_fd, fcntl.LOCK_EX)
        data = load(path)
        before = json.dumps(data, sort_keys=True)
        seen = _strings(data)
        yield data
        if json.dumps(data, sort_keys=True) != before:
            data["updated_at"] = time.time()
            save(path, data, seen)
    finally:
        os.close(lock_fd)
    if new_session:
        prune(home)


def load(path: Path) -> dict[str, Any]:
    try:
        got = json.loads(path.read_text(encoding="utf-8"))
        return got if isinstance(got, dict) else {}
    except (OSError, ValueError):
        return {}


def save(path: Path, data: dict[str, Any], seen: frozenset[str] = frozenset()) -> None:
    """Write ``data`` redacted (strings in ``seen`` were read from this file: already redacted)."""
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(redacted(data, seen), f, ensure_ascii=False)
    os.replace(tmp, path)


def _strings(value: Any) -> frozenset[str]:
    out: set[str] = set()
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            out.add(v)
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return frozenset(out)


def add_tool(data: dict[str, Any], tool: dict[str, Any]) -> None:
    """Append (or complete, by call id) one tool call of the open turn."""
    tools: list[dict[str, Any]] = data.setdefault("tools", [])
    cid = tool.get("call_id")
    if cid:
        for t in tools:
            if t.get("call_id") == cid:
                for k, v in tool.items():
                    if v not in ("", None) or k == "is_error":
                        t[k] = v
                return
    if len(tools) < MAX_TOOLS:
        tools.append(tool)


def prune(home: Path, now: float | None = None, max_age: float = MAX_AGE_SECONDS) -> int:
    """Remove state files of sessions idle longer than ``max_age``. Returns how many went."""
    now = now or time.time()
    gone = 0
    d = state_dir(home)
    if not d.is_dir():
        return 0
    for p in d.iterdir():
        try:
            if now - p.stat().st_mtime > max_age and p.suffix in (".json", ".lock", ".tmp"):
                p.unlink()
                gone += 1
        except OSError:
            continue
    return gone

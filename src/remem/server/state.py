"""What the running daemon holds: the memory handle, job runner, event bus, and its own facts."""

from __future__ import annotations

import functools
import hashlib
import os
import secrets
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .events import EventBus

if TYPE_CHECKING:
    from ..core import Remem
    from .jobkinds import Scheduler
    from .jobs import JobRunner
    from .livewrite import LiveWriter

CONFIRM_SECONDS = 300  # a confirmation token lives five minutes: time to read the warning, not a day


def home_id(home: Path) -> str:
    """A short fingerprint of a home path: lets ``/health`` say which home it serves without showing it."""
    return hashlib.sha256(str(Path(home).resolve()).encode()).hexdigest()[:16]


@functools.cache
def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("remem")
    except PackageNotFoundError:
        return "unknown"


class Confirmations:
    """One-time tokens for two-step actions (deep rescan, clear all data)."""

    def __init__(self) -> None:
        self._items: dict[str, tuple[str, float, dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def issue(self, action: str, data: dict[str, Any] | None = None) -> str:
        tok = secrets.token_urlsafe(16)
        now = time.monotonic()
        with self._lock:
            self._items = {k: v for k, v in self._items.items() if v[1] > now}
            self._items[tok] = (action, now + CONFIRM_SECONDS, data or {})
        return tok

    def redeem(self, action: str, tok: str, data: dict[str, Any] | None = None) -> bool:
        """True (and the token is spent) if ``tok`` was issued for this action and data, unexpired."""
        with self._lock:
            got = self._items.get(tok)
            if got is None or got[0] != action or got[1] < time.monotonic() or got[2] != (data or {}):
                return False
            del self._items[tok]
            return True


@dataclass
class DaemonState:
    home: Path
    token: str
    host: str
    port: int
    background: bool = True
    started_at: float = field(default_factory=time.time)
    status: str = "starting"        # starting | ready | error
    error: str = ""
    mem: Remem | None = None
    runner: JobRunner | None = None
    writer: LiveWriter | None = None    # live captures: written at once, or queued while the lock is busy
    scheduler: Scheduler | None = None
    bus: EventBus = field(default_factory=EventBus)
    confirmations: Confirmations = field(default_factory=Confirmations)
    log_path: Path | None = None
    startup_result: dict[str, Any] = field(default_factory=dict)
    server: Any = None              # the uvicorn Server, to notice shutdown from long streams

    def should_exit(self) -> bool:
        return bool(getattr(self.server, "should_exit", False))

    def health(self) -> dict[str, Any]:
        # the version is looked up by the loader thread: reading package metadata is too slow for /health
        ver = version() if self.status != "starting" else None
        out = {"ok": self.status != "error", "service": "remem", "status": self.status, "version": ver,
               "pid": os.getpid(), "home_id": home_id(self.home), "uptime": round(time.time() - self.started_at, 3)}
        if self.error:
            out["error"] = self.error
        return out

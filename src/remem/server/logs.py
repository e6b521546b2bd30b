"""Daemon logging: one rotating file in ``REMEM_HOME/logs``, secrets scrubbed before any handler.

The API token, anything shaped like an ``Authorization`` value and everything the ingest
redactor recognises (API keys, passwords, private keys) are replaced before a record is
formatted, so no handler (file, stderr, the in-memory "recent errors" list) ever sees them.
"""

from __future__ import annotations

import collections
import logging
import logging.handlers
import os
import re
import threading
import time
from pathlib import Path
from typing import Any

LOG_NAME = "daemon.log"
MAX_BYTES = 5 * 1024 * 1024  # five files of 5 MiB: weeks of normal use, never a full disk
BACKUPS = 4
_BEARER = re.compile(r"(?i)\b(bearer|token)([\s=:\"']+)([A-Za-z0-9._~+/=-]{8,})")
_COOKIE = re.compile(r"(?i)(remem_session=)[^;\s]+")


def scrub(text: str, secrets: tuple[str, ...] = ()) -> str:
    """``text`` with the given secrets, bearer values and recognisable secrets removed."""
    for s in secrets:
        if s:
            text = text.replace(s, "[REDACTED:token]")
    text = _BEARER.sub(lambda m: f"{m.group(1)}{m.group(2)}[REDACTED:token]", text)
    text = _COOKIE.sub(r"\1[REDACTED:cookie]", text)
    from ..ingest.redact import redact_text

    return redact_text(text)


class ScrubFilter(logging.Filter):
    """Rewrites each record's message (args applied) through :func:`scrub`."""

    def __init__(self, secrets: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.secrets = secrets

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            msg = record.getMessage()
        except Exception:  # a broken format string must not break logging
            msg = str(record.msg)
        if record.exc_info:
            msg += "\n" + logging.Formatter().formatException(record.exc_info)
            record.exc_info = None
            record.exc_text = None
        record.msg = scrub(msg, self.secrets)
        record.args = None
        return True


class RecentErrors(logging.Handler):
    """Keeps the last warnings and errors in memory for the viewer's health page."""

    def __init__(self, size: int = 50) -> None:
        super().__init__(level=logging.WARNING)
        self.items: collections.deque[dict[str, Any]] = collections.deque(maxlen=size)
        self._lock2 = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        with self._lock2:
            self.items.append({"ts": record.created, "level": record.levelname, "logger": record.name,
                               "message": record.getMessage()[:2000]})

    def snapshot(self) -> list[dict[str, Any]]:
        with self._lock2:
            return list(reversed(self.items))


RECENT = RecentErrors()
_configured: dict[str, Any] = {}


def setup(log_dir: Path, token: str, *, stderr: bool = True, level: int = logging.INFO) -> Path:
    """Route ``remem`` and ``uvicorn`` loggers to ``log_dir/daemon.log`` (mode 0600), scrubbed."""
    log_dir.mkdir(parents=True, exist_ok=True)
    path = log_dir / LOG_NAME
    flt = ScrubFilter((token,))
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    fmt.converter = time.gmtime
    fh = logging.handlers.RotatingFileHandler(path, maxBytes=MAX_BYTES, backupCount=BACKUPS, encoding="utf-8")
    os.chmod(path, 0o600)
    handlers: list[logging.Handler] = [fh, RECENT]
    if stderr:
        handlers.append(logging.StreamHandler())
    for h in handlers:
        h.addFilter(flt)
        h.setFormatter(fmt)
    for name in ("remem", "uvicorn", "uvicorn.error"):
        lg = logging.getLogger(name)
        for old in list(lg.handlers):
            lg.removeHandler(old)
        lg.propagate = False
        lg.setLevel(level)
        for h in handlers:
            lg.addHandler(h)
    # request lines are logged by our own middleware (path only, never the query string)
    logging.getLogger("uvicorn.access").disabled = True
    _configured["path"] = path
    return path


def tail(path: Path, lines: int = 200) -> list[str]:
    """The last ``lines`` lines of a log file (reads at most 1 MiB from the end)."""
    if not path.exists():
        return []
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        f.seek(max(0, size - 1024 * 1024))
        data = f.read().decode("utf-8", "replace")
    return data.splitlines()[-lines:]

"""The hook's log: ``REMEM_HOME/logs/hooks.log``, one line per call, tracebacks on errors.

Hooks must never print diagnostics where the agent would read them (stdout) or show them to the
user (stderr, on some agents), so everything goes here. The file is rotated at ``MAX_BYTES``.
"""

from __future__ import annotations

import os
import time
import traceback
from pathlib import Path

from ..ingest.redact import redact_text

MAX_BYTES = 2 * 1024 * 1024   # two files of 2 MiB keep weeks of hook calls


def log_path(home: Path) -> Path:
    return home / "logs" / "hooks.log"


def write(home: Path, level: str, message: str, *, exc: BaseException | None = None) -> None:
    """Append one line (and a traceback for ``exc``). Never raises."""
    try:
        path = log_path(home)
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            if path.stat().st_size > MAX_BYTES:
                os.replace(path, path.with_suffix(".log.1"))
        except OSError:
            pass
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime())
        text = f"{stamp} pid={os.getpid()} {level} {message}\n"
        if exc is not None:
            text += "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        text = redact_text(text)  # an error message may quote a prompt or a tool's output
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8", errors="replace") as f:
            f.write(text)
    except Exception:  # noqa: BLE001 - logging must never break the hook
        pass

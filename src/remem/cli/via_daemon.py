"""Ask the running daemon first: ``remem search``, ``recall`` and ``get`` from a shell.

A daemon that holds this home's lock (``server.daemon``) has the embedder, the vector index and
the ranking caches warm, so it answers in milliseconds what a fresh CLI process needs a second
for. The request goes through the hooks' raw-socket client (``integrations.client``) with the
home's token and a hard deadline; when no daemon holds the lock, or it does not answer in time,
answers an error, or lacks the route, the command runs directly on the database and prints the
same thing. A daemon that timed out trips the hooks' circuit breaker (``integrations.client``): the
next commands and hooks skip it for 30 s instead of waiting again. ``REMEM_CLI_DAEMON=0`` always runs
directly; ``REMEM_CLI_TIMEOUT`` (seconds) bounds the wait for the daemon.
"""

from __future__ import annotations

import os
from typing import Any

DEFAULT_TIMEOUT = 3.0   # a warm daemon answers in well under 0.3 s; past this the direct path is quicker

used = {"daemon": 0}    # requests the daemon answered in this process (for tests and --explain)


def timeout() -> float:
    try:
        return max(0.05, min(60.0, float(os.environ.get("REMEM_CLI_TIMEOUT") or DEFAULT_TIMEOUT)))
    except ValueError:
        return DEFAULT_TIMEOUT


def ask(home: str | None, method: str, path: str, body: Any = None,
        params: dict[str, Any] | None = None) -> Any:
    """The daemon's JSON answer for ``path`` (under ``/api/v1``), or None: run it directly."""
    if os.environ.get("REMEM_CLI_DAEMON", "1").strip().lower() in ("0", "false", "no", "off"):
        return None
    from ..config import home_dir
    from ..integrations.client import DaemonClient, DaemonUnavailable
    from ..server import API_PREFIX
    from ..server.daemon import is_locked, read_info

    try:
        where = home_dir(home)
        if not is_locked(where):
            return None         # no daemon serves this home: nothing to wait for
        info = read_info(where) or {}
        token = (where / "token").read_text(encoding="utf-8").strip()
        port = int(info.get("port") or 0)
    except (OSError, ValueError):
        return None
    if not port or not token:
        return None
    host = str(info.get("host") or "127.0.0.1")
    host = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}.get(host, host)
    # the hooks' circuit breaker: a daemon that timed out is skipped for a while by both
    client = DaemonClient(host, port, token, timeout=timeout(), breaker=where / "hooks" / "daemon.down")
    try:
        got = client.request(method, API_PREFIX + path, body, params=params)
    except DaemonUnavailable:
        return None
    used["daemon"] += 1
    return got

"""A tiny HTTP client for the remem daemon (stdlib ``http.client``, loopback only).

Every request carries the Bearer token from ``REMEM_HOME/token`` and a hard timeout. A daemon
that is not listening fails in about a millisecond (connection refused). A daemon that does not
answer in time trips a short circuit breaker (a file in ``REMEM_HOME/hooks``), so the next hook
calls go straight to the SQLite fallback instead of waiting again.
"""

from __future__ import annotations

import http.client
import json
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

BREAKER_SECONDS = 30.0   # after a timeout, skip the daemon this long (hooks stay fast meanwhile)


class DaemonUnavailable(Exception):
    """Not running, not answering in time, or not ours (wrong token): use the fallback."""


class EndpointMissing(DaemonUnavailable):
    """The daemon runs but has no such endpoint (an older or newer version)."""


class DaemonClient:
    def __init__(self, host: str, port: int, token: str, *, timeout: float = 10.0,
                 breaker: Path | None = None) -> None:
        self.host = host or "127.0.0.1"
        self.port = int(port)
        self.token = token
        self.timeout = timeout
        self.breaker = breaker

    # -- circuit breaker -------------------------------------------------------------------
    def tripped(self, now: float | None = None) -> bool:
        if self.breaker is None:
            return False
        try:
            until = float(self.breaker.read_text(encoding="utf-8").strip() or 0)
        except (OSError, ValueError):
            return False
        return (now or time.time()) < until

    def trip(self, seconds: float = BREAKER_SECONDS) -> None:
        if self.breaker is None:
            return
        try:
            self.breaker.parent.mkdir(parents=True, exist_ok=True)
            self.breaker.write_text(str(time.time() + seconds), encoding="utf-8")
        except OSError:
            pass

    def reset(self) -> None:
        if self.breaker is not None:
            try:
                self.breaker.unlink()
            except OSError:
                pass

    # -- requests ----------------------------------------------------------------------------
    def request(self, method: str, path: str, body: Any = None, *, params: dict[str, Any] | None = None,
                timeout: float | None = None) -> Any:
        """One JSON request. Raises DaemonUnavailable (or EndpointMissing) on any failure."""
        if self.tripped():
            raise DaemonUnavailable("daemon skipped (timed out recently)")
        if params:
            path = f"{path}?{urlencode({k: v for k, v in params.items() if v not in (None, '')})}"
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body, ensure_ascii=False).encode("utf-8")
            headers["Content-Type"] = "application/json"
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout or self.timeout)
        try:
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            raw = resp.read()
        except TimeoutError as e:
            self.trip()
            raise DaemonUnavailable(f"daemon did not answer within {timeout or self.timeout:g}s") from e
        except (OSError, http.client.HTTPException) as e:
            raise DaemonUnavailable(f"daemon not reachable: {e}") from e
        finally:
            conn.close()
        if resp.status in (404, 405, 501):
            raise EndpointMissing(f"{method} {path}: {resp.status}")
        if resp.status >= 400:
            raise DaemonUnavailable(f"{method} {path}: HTTP {resp.status}")
        try:
            return json.loads(raw or b"null")
        except ValueError as e:
            raise DaemonUnavailable(f"{method} {path}: not JSON") from e

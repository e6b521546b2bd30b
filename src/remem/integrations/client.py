"""A tiny HTTP/1.1 client for the remem daemon (a raw socket, loopback only).

``http.client`` drags in the ``email`` package, which costs a hook process more than the request
itself; the daemon answers JSON with ``Connection: close``, so a socket, one request and a read to
EOF is all that is needed. Every request carries the Bearer token from ``REMEM_HOME/token`` and a
hard overall deadline. A daemon
that is not listening fails in about a millisecond (connection refused). A daemon that does not
answer in time trips a short circuit breaker (a file in ``REMEM_HOME/hooks``), so the next hook
calls go straight to the SQLite fallback instead of waiting again.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..errors import RememError

BREAKER_SECONDS = 30.0   # after a timeout, skip the daemon this long (hooks stay fast meanwhile)


class DaemonUnavailable(RememError):
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
            path += "?" + "&".join(f"{quote(str(k))}={quote(str(v))}" for k, v in params.items()
                                   if v not in (None, ""))
        data = b"" if body is None else json.dumps(body, ensure_ascii=False).encode("utf-8")
        head = (f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\nConnection: close\r\n"
                f"Authorization: Bearer {self.token}\r\nAccept: application/json\r\n"
                f"Content-Length: {len(data)}\r\n")
        if body is not None:
            head += "Content-Type: application/json\r\n"
        budget = timeout or self.timeout
        try:
            status, raw = exchange(self.host, self.port, head.encode("latin-1") + b"\r\n" + data, budget)
        except TimeoutError as e:
            self.trip()
            raise DaemonUnavailable(f"daemon did not answer within {budget:g}s") from e
        except (OSError, ValueError) as e:
            raise DaemonUnavailable(f"daemon not reachable: {e}") from e
        if status in (404, 405, 501):
            raise EndpointMissing(f"{method} {path}: {status}")
        if status >= 400 or status < 200:
            raise DaemonUnavailable(f"{method} {path}: HTTP {status}")
        try:
            return json.loads(raw or b"null")
        except ValueError as e:
            raise DaemonUnavailable(f"{method} {path}: not JSON") from e


def exchange(host: str, port: int, request: bytes, budget: float) -> tuple[int, bytes]:
    """Send ``request``, read the whole response within ``budget`` seconds: (status, body)."""
    deadline = time.monotonic() + budget
    with socket.create_connection((host, port), timeout=budget) as s:
        s.sendall(request)
        chunks: list[bytes] = []
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("deadline")
            s.settimeout(left)
            got = s.recv(65536)              # socket.timeout is TimeoutError
            if not got:
                break
            chunks.append(got)
    return parse_response(b"".join(chunks))


def parse_response(raw: bytes) -> tuple[int, bytes]:
    head, sep, body = raw.partition(b"\r\n\r\n")
    if not sep:
        raise ValueError("incomplete HTTP response")
    lines = head.split(b"\r\n")
    parts = lines[0].split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/"):
        raise ValueError("not an HTTP response")
    status = int(parts[1])
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(b":")
        headers[k.strip().lower()] = v.strip()
    if headers.get(b"transfer-encoding", b"").lower() == b"chunked":
        body = _dechunk(body)
    elif b"content-length" in headers:
        body = body[: int(headers[b"content-length"])]
    return status, body


def _dechunk(data: bytes) -> bytes:
    out = []
    while data:
        size_line, _, rest = data.partition(b"\r\n")
        size = int(size_line.split(b";")[0] or b"0", 16)
        if size == 0:
            break
        out.append(rest[:size])
        data = rest[size + 2:]
    return b"".join(out)

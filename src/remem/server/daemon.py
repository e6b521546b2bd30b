"""Daemon lifecycle: one per ``REMEM_HOME`` (lock file + port check), start, stop, status, spawn.

The lock is an ``flock`` on ``REMEM_HOME/daemon.lock`` held for the daemon's lifetime, so a
killed daemon leaves no lock behind (the kernel drops it); the file's JSON (pid, host, port)
is only information. The order in :func:`serve` is what makes ``/health`` fast: lock, bind,
answer — and only then import FastAPI and open the database.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import RememError
from . import API_PREFIX

LOCK_NAME = "daemon.lock"
MIN_TOKEN_CHARS = 32  # what `secrets.token_urlsafe(32)` gives; shorter tokens are refused off loopback


class DaemonError(RememError, RuntimeError):
    """A start/stop that cannot proceed, with the reason for the user."""


@dataclass
class Running:
    pid: int
    host: str
    port: int
    health: dict[str, Any] | None

    @property
    def url(self) -> str:
        return base_url(self.host, self.port)


def base_url(host: str, port: int) -> str:
    h = "127.0.0.1" if host in ("0.0.0.0", "") else ("[::1]" if host in ("::", "::1") else host)
    return f"http://{h}:{port}"


def is_loopback(host: str) -> bool:
    return host in ("localhost", "::1") or host.startswith("127.")


# -- the lock file -------------------------------------------------------------------------------

class DaemonLock:
    def __init__(self, home: Path) -> None:
        self.path = home / LOCK_NAME
        self.fd: int | None = None
        self.previous: dict[str, Any] | None = None

    def acquire(self) -> bool:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self.fd = fd
        self.previous = read_info(self.path.parent)
        return True

    def write(self, info: dict[str, Any]) -> None:
        assert self.fd is not None
        data = json.dumps(info).encode()
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, data, 0)

    def release(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self.fd, 0)
            os.close(self.fd)
            self.fd = None


def read_info(home: Path) -> dict[str, Any] | None:
    try:
        data = (home / LOCK_NAME).read_text(encoding="utf-8").strip()
        return json.loads(data) if data else None
    except (OSError, ValueError):
        return None


def is_locked(home: Path) -> bool:
    """True while a live daemon holds this home's lock."""
    path = home / LOCK_NAME
    if not path.exists():
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


# -- probing -----------------------------------------------------------------------------------------

def probe(host: str, port: int, timeout: float = 1.0) -> dict[str, Any] | None:
    """``/health`` of whatever listens on host:port, or None."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(base_url(host, port) + "/health", timeout=timeout) as r:  # noqa: S310
            data = json.loads(r.read())
            return data if isinstance(data, dict) else None
    except (OSError, ValueError, urllib.error.URLError):
        return None


def find(home: Path, wait: float = 0.0) -> Running | None:
    """The daemon serving ``home`` if one holds the lock (waits up to ``wait`` s for its /health)."""
    if not is_locked(home):
        return None
    deadline = time.monotonic() + wait
    while True:
        info = read_info(home) or {}
        health = probe(info["host"], int(info["port"])) if info.get("port") else None
        if health is not None or time.monotonic() >= deadline:
            if not info.get("pid"):
                return Running(pid=0, host=str(info.get("host", "")), port=int(info.get("port") or 0), health=None)
            return Running(pid=int(info["pid"]), host=str(info["host"]), port=int(info["port"]), health=health)
        time.sleep(0.1)


def api(home: Path, running: Running, path: str, token: str, method: str = "GET",
        body: Any = None, timeout: float = 5.0) -> Any:
    """One authenticated JSON call to a running daemon (used by ``status`` and ``up``)."""
    import urllib.request

    req = urllib.request.Request(running.url + API_PREFIX + path, method=method,
                                 headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
                                 data=json.dumps(body).encode() if body is not None else None)
    with urllib.request.urlopen(req, timeout=timeout) as r:  # noqa: S310
        return json.loads(r.read() or b"null")


# -- start ---------------------------------------------------------------------------------------------

def check_host(host: str, explicit: bool, token_path: Path) -> None:
    """Loopback needs nothing; anything else needs ``--host`` given explicitly and a real token."""
    if is_loopback(host):
        return
    if not explicit:
        raise DaemonError(f"server.host is {host!r} in the settings, which is beyond this machine; "
                          "binding there needs an explicit --host")
    try:
        tok = token_path.read_text(encoding="utf-8").strip()
        mode = token_path.stat().st_mode & 0o777
    except OSError:
        raise DaemonError(f"refusing to listen on {host} without a token: run `remem init` first to create "
                          f"{token_path}") from None
    if len(tok) < MIN_TOKEN_CHARS:
        raise DaemonError(f"refusing to listen on {host}: the token in {token_path} is too short")
    if mode & 0o077:
        raise DaemonError(f"refusing to listen on {host}: {token_path} is readable by others (chmod 600 it)")


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP said out loud: asyncio turns Nagle off (TCP_NODELAY) only on connections whose
    # socket names it, and with Nagle on every response waited ~40 ms for the client's delayed ACK
    # between its headers and its body (bench/RESULTS.md, "Service")
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.listen(512)
    sock.set_inheritable(True)
    return sock


def port_free(host: str, port: int) -> bool:
    """Can this process listen on host:port right now? (Port 0 always can.)"""
    if port == 0:
        return True
    try:
        bind(host, port).close()
    except OSError as e:
        return e.errno != errno.EADDRINUSE
    return True


def port_taken(host: str, port: int) -> str:
    """The one line a user reads when host:port is taken: who holds it, if this user can tell, and what to do."""
    return (f"port {port} is used by {port_holder(host, port)}; "
            f"use --port N or `remem config set server.port N`")


def port_holder(host: str, port: int) -> str:
    h = probe(host, port)
    if h and h.get("service") == "remem":
        return f"the remem daemon of another home (pid {h.get('pid', '?')})"
    proc = _listening_process(port)
    return f"another program ({proc})" if proc else "another program"


def _listening_process(port: int) -> str | None:
    """'cmdline (pid N)' of the process listening on ``port``, from /proc (Linux, this user's processes);
    None where that cannot be seen."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text(encoding="ascii").splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if len(f) > 9 and f[3] == "0A" and int(f[1].rsplit(":", 1)[1], 16) == port:  # 0A: LISTEN
                inodes.add(f"socket:[{f[9]}]")
    if not inodes:
        return None
    for pid_dir in Path("/proc").iterdir():
        if not pid_dir.name.isdigit():
            continue
        try:
            if not any(os.readlink(fd) in inodes for fd in (pid_dir / "fd").iterdir()):
                continue
            argv = (pid_dir / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        cmd = " ".join(" ".join([os.path.basename(argv[0]), *argv[1:]]).split())  # one line, program by name
        cmd = cmd if len(cmd) <= 80 else cmd[:79] + "…"
        return f"{cmd or '?'}, pid {pid_dir.name}"
    return None


def serve(home: Path, host: str, port: int, *, explicit_host: bool = False, background: bool = True,
          echo: Any = print) -> int:
    """Run the daemon in this process until SIGTERM/SIGINT. Returns the exit code."""
    from .. import config as configmod

    home.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(OSError):
        os.chmod(home, 0o700)
    token_path = home / "token"
    check_host(host, explicit_host, token_path)
    token = configmod.ensure_token(token_path)
    lock = DaemonLock(home)
    if not lock.acquire():
        other = find(home, wait=5.0)
        where = f" at {other.url}" if other and other.port else ""
        echo(f"remem is already running for {home} (pid {other.pid if other else '?'}){where}")
        return 0
    try:
        try:
            sock = bind(host, port)
        except OSError as e:
            if e.errno != errno.EADDRINUSE:
                raise DaemonError(f"cannot listen on {host}:{port}: {e.strerror}") from None
            raise DaemonError(port_taken(host, port)) from None
        actual = sock.getsockname()[1]
        lock.write({"pid": os.getpid(), "host": host, "port": actual, "started_at": time.time(),
                    "home": str(home)})
        return _run(home, host, actual, sock, token, lock.previous, background, echo)
    finally:
        lock.release()


def _run(home: Path, host: str, port: int, sock: socket.socket, token: str, previous: dict[str, Any] | None,
         background: bool, echo: Any) -> int:
    import logging

    import uvicorn

    from . import logs
    from .front import Front
    from .state import DaemonState

    os.umask(0o077)  # logs (also after rotation), exports and temp files stay private to this user
    state = DaemonState(home=home, token=token, host=host, port=port, background=background)
    state.log_path = logs.setup(home / "logs", token)
    log = logging.getLogger("remem.daemon")
    if previous and previous.get("pid") and previous.get("pid") != os.getpid():
        log.info("recovered a stale lock left by pid %s", previous["pid"])
    log.info("listening on %s (pid %s)", base_url(host, port), os.getpid())
    echo(f"remem serving {home} at {base_url(host, port)} (pid {os.getpid()}); stop with `remem serve --stop`")
    config = uvicorn.Config(Front(state), lifespan="on", log_config=None, access_log=False, server_header=False,
                            timeout_graceful_shutdown=3, limit_concurrency=256, timeout_keep_alive=5)
    server = uvicorn.Server(config)
    state.server = server
    # uvicorn re-raises SIGTERM/SIGINT after its graceful shutdown; with these no-op handlers in
    # place the process then returns normally (lock released, exit code 0) instead of dying by signal
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: None)
    server.run(sockets=[sock])
    log.info("stopped")
    return 0


# -- stop / spawn -------------------------------------------------------------------------------------

def stop(home: Path, timeout: float = 10.0) -> tuple[bool, str]:
    """Stop the daemon of ``home``: SIGTERM, wait, SIGKILL as a last resort. (stopped?, message)."""
    if not is_locked(home):
        return False, "remem is not running"
    info = read_info(home) or {}
    pid = int(info.get("pid") or 0)
    if pid <= 0 or pid == os.getpid():
        return False, "cannot tell which process holds the daemon lock"
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not is_locked(home):
            return True, f"stopped remem (pid {pid})"
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    for _ in range(30):
        if not is_locked(home):
            return True, f"remem (pid {pid}) did not stop in {timeout:g}s and was killed"
        time.sleep(0.1)
    return False, f"remem (pid {pid}) is still running"


def spawn(home: Path, port: int, wait: float = 30.0) -> Running:
    """Start ``remem serve`` detached from this terminal; return once ``/health`` answers.

    No ``--host`` is passed: the daemon reads it from the settings, where anything beyond loopback
    is refused unless a person starts ``remem serve --host`` themselves."""
    log_dir = home / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, REMEM_HOME=str(home))
    with open(log_dir / "daemon.out", "ab") as out:
        start = out.tell()
        proc = subprocess.Popen([sys.executable, "-m", "remem", "serve", "--port", str(port)],
                                stdin=subprocess.DEVNULL, stdout=out, stderr=out, env=env,
                                start_new_session=True, close_fds=True)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        running = find(home)
        if running is not None and running.health is not None:
            return running
        if proc.poll() is not None:
            running = find(home)
            if running is not None:
                return running
            said = _last_error(log_dir / "daemon.out", start)
            raise DaemonError(said or f"the daemon exited at start (code {proc.returncode}); "
                              f"see {log_dir / 'daemon.out'}")
        time.sleep(0.1)
    raise DaemonError(f"the daemon did not answer within {wait:g}s; see {log_dir / 'daemon.log'}")


def _last_error(path: Path, start: int) -> str | None:
    """The ``remem: error: …`` line a spawned daemon wrote to its output after ``start``, if any."""
    try:
        with open(path, "rb") as f:
            f.seek(start)
            text = f.read(64 * 1024).decode(errors="replace")
    except OSError:
        return None
    said = [ln.split("remem: error: ", 1)[1] for ln in text.splitlines() if "remem: error: " in ln]
    return said[-1].strip() if said else None

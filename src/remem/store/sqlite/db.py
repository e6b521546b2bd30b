"""SQLite connection with the pragmas remem relies on, and a retrying transaction helper."""

from __future__ import annotations

import contextlib
import functools
import random
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import Locked, StoreError

BUSY_TIMEOUT_MS = 30_000  # long enough that eight concurrent writers never see "locked"
# Reads through a memory map of the file instead of a copy per page: a real-shaped turn row (~8 KB)
# spans overflow pages, and recall reads hundreds of rows a prompt (at 100k turns: turn_start p50
# 58 → 53 ms, p95 92–98 → 80–83, bench/RESULTS.md). SQLite caps it at its build's maximum (2 GB for
# Python's usual build); the map is read-only, writes still go through the file.
MMAP_BYTES = 8 << 30


def _explain(e: sqlite3.Error, path: Path | str) -> StoreError:
    msg = str(e)
    low = msg.lower()
    if "not a database" in low or "malformed" in low or "file is encrypted" in low:
        return StoreError(f"database {path} is corrupted ({msg}); restore a backup or move it aside")
    if "readonly" in low or "read-only" in low:
        return StoreError(f"database {path} is read-only; check the file and folder permissions")
    if "disk is full" in low or "database or disk is full" in low:
        return StoreError(f"no space left for database {path}; nothing was written")
    if "unable to open" in low:
        return StoreError(f"cannot open database {path} ({msg})")
    if "locked" in low or "busy" in low:
        return StoreError(f"database {path} stayed locked by another process; try again")
    return StoreError(f"database error: {msg}")


def connect(path: Path | str, *, readonly: bool = False) -> sqlite3.Connection:
    """Open ``path`` in WAL mode with synchronous=NORMAL, foreign keys and a busy timeout."""
    p = Path(path)
    try:
        if readonly:
            conn = sqlite3.connect(f"file:{p}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_MS / 1000,
                                   isolation_level=None, check_same_thread=False)
        else:
            p.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(str(p), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                                   check_same_thread=False)
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if not readonly:
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise StoreError(f"database {p} could not switch to WAL mode (got {mode})")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA temp_store = MEMORY")
        conn.execute("PRAGMA cache_size = -32000")
        conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
        # touch the schema so a corrupt file fails here, not halfway through a write
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.Error as e:
        raise _explain(e, p) from None
    except OSError as e:
        raise StoreError(f"cannot open database {p}: {e.strerror or e}") from None
    return conn


@contextlib.contextmanager
def transaction(conn: sqlite3.Connection, *, immediate: bool = True,
                wait: bool = True) -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE … COMMIT, rolled back on any error; retries a locked BEGIN with jitter.

    ``wait=False``: take the lock now or raise StoreError at once (no busy timeout, no retries),
    for work that can as well be done later.
    """
    for attempt in range(50):
        try:
            if wait:
                conn.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")
            else:
                conn.execute("PRAGMA busy_timeout = 0")
                try:
                    conn.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")
                finally:
                    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            break
        except sqlite3.OperationalError as e:
            if "locked" not in str(e).lower() and "busy" not in str(e).lower():
                raise _explain(e, "") from None
            if not wait:
                raise Locked("database is locked by another writer") from None
            time.sleep(min(0.5, 0.01 * (attempt + 1)) * random.random())
    else:
        raise StoreError("database stayed locked by another process; try again")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    else:
        try:
            conn.execute("COMMIT")
        except sqlite3.Error as e:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise _explain(e, "") from None


def script(db: sqlite3.Connection, sql: str) -> None:
    """Run a multi-statement script inside the caller's transaction (executescript would commit)."""
    for stmt in _split_sql(sql):
        db.execute(stmt)


def _split_sql(sql: str) -> list[str]:
    """Split a script into statements, keeping CREATE TRIGGER … END; bodies whole."""
    out, buf = [], ""
    for line in sql.splitlines(keepends=True):
        stripped = line.split("--", 1)[0]
        buf += stripped if stripped.strip() else ""
        if sqlite3.complete_statement(buf):
            if buf.strip():
                out.append(buf.strip())
            buf = ""
    if buf.strip():
        out.append(buf.strip())
    return out


def db_path(conn: sqlite3.Connection) -> str:
    """The file behind a connection ("" for an in-memory database): the key of per-database caches."""
    return str(conn.execute("PRAGMA database_list").fetchone()[2] or "")


def explain_error(e: sqlite3.Error, path: Path | str = "") -> StoreError:
    return _explain(e, path)


def guarded(cls: type) -> type:
    """Make every public method of a store area raise StoreError instead of ``sqlite3.Error``
    (the layers above ``store/`` catch StoreError only). A method's own StoreError passes through."""

    def wrap(fn: Any) -> Any:
        @functools.wraps(fn)
        def call(self: Any, *a: Any, **kw: Any) -> Any:
            try:
                return fn(self, *a, **kw)
            except sqlite3.Error as e:
                raise _explain(e, getattr(getattr(self, "_store", None), "path", "")) from None

        return call

    for name, fn in list(vars(cls).items()):
        if not name.startswith("_") and callable(fn):
            setattr(cls, name, wrap(fn))
    return cls

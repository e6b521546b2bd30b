"""The jobs queue: rows in the database, so jobs survive a restart."""

from __future__ import annotations

import json
import sqlite3
import time
from typing import TYPE_CHECKING, Any

from .db import guarded

if TYPE_CHECKING:
    from . import SqliteStore


def enqueue(db: sqlite3.Connection, kind: str, payload: dict[str, Any] | None = None, *,
            dedup_key: str | None = None, run_after: float = 0.0, now: float | None = None) -> int:
    """Queue a job; with ``dedup_key`` an already queued or running job of that key is reused (two
    writers racing to queue the same key get one job: the key is unique, the loser reads the winner's)."""
    now = now or time.time()
    row = (kind, dedup_key, json.dumps(payload or {}), "queued", run_after, now, now)
    insert = ("INSERT INTO jobs (kind, dedup_key, payload, status, run_after, created_at, updated_at) "
              "VALUES (?,?,?,?,?,?,?)")
    if not dedup_key:
        return int(db.execute(insert, row).lastrowid or 0)
    if db.execute(insert + " ON CONFLICT (dedup_key) DO NOTHING", row).rowcount == 1:
        return int(db.execute("SELECT id FROM jobs WHERE dedup_key = ?", (dedup_key,)).fetchone()[0])
    got = db.execute("SELECT id, status FROM jobs WHERE dedup_key = ?", (dedup_key,)).fetchone()
    if got["status"] not in ("queued", "running", "paused"):
        db.execute("UPDATE jobs SET status='queued', attempts=0, payload=?, run_after=?, last_error='', "
                   "progress='{}', updated_at=? WHERE id=?", (json.dumps(payload or {}), run_after, now, got["id"]))
    return int(got["id"])


def claim(db: sqlite3.Connection, kinds: tuple[str, ...] | None = None,
          now: float | None = None) -> dict[str, Any] | None:
    """Atomically take the oldest runnable job (caller holds a write transaction)."""
    now = now or time.time()
    sql = "SELECT * FROM jobs WHERE status = 'queued' AND run_after <= ?"
    params: list[Any] = [now]
    if kinds:
        sql += f" AND kind IN ({','.join('?' * len(kinds))})"
        params.extend(kinds)
    row = db.execute(sql + " ORDER BY run_after, id LIMIT 1", params).fetchone()
    if not row:
        return None
    db.execute("UPDATE jobs SET status='running', attempts=attempts+1, updated_at=? WHERE id=?", (now, row["id"]))
    d = dict(row)
    d["payload"] = json.loads(d["payload"] or "{}")
    d["attempts"] += 1
    return d


def finish(db: sqlite3.Connection, job_id: int, status: str = "done", error: str = "",
           retry_in: float | None = None) -> None:
    now = time.time()
    if retry_in is not None:
        db.execute("UPDATE jobs SET status='queued', run_after=?, last_error=?, updated_at=? WHERE id=?",
                   (now + retry_in, error[:500], now, job_id))
    else:
        db.execute("UPDATE jobs SET status=?, last_error=?, updated_at=? WHERE id=?",
                   (status, error[:500], now, job_id))


def progress(db: sqlite3.Connection, job_id: int, data: dict[str, Any]) -> None:
    db.execute("UPDATE jobs SET progress=?, updated_at=? WHERE id=?", (json.dumps(data), time.time(), job_id))


def recover(db: sqlite3.Connection) -> int:
    """Jobs left 'running' by a killed process go back to the queue."""
    return db.execute("UPDATE jobs SET status='queued' WHERE status='running'").rowcount


def list_jobs(db: sqlite3.Connection, limit: int = 50) -> list[dict[str, Any]]:
    out = []
    for r in db.execute("SELECT * FROM jobs ORDER BY id DESC LIMIT ?", (limit,)):
        d = dict(r)
        d["payload"] = json.loads(d["payload"] or "{}")
        d["progress"] = json.loads(d["progress"] or "{}")
        out.append(d)
    return out


def pending_count(db: sqlite3.Connection) -> int:
    return int(db.execute("SELECT count(*) FROM jobs WHERE status IN ('queued','running')").fetchone()[0])


ACTIVE = ("queued", "running", "paused")


def _decoded(row: sqlite3.Row) -> dict[str, Any]:
    d = dict(row)
    d["payload"] = json.loads(d.get("payload") or "{}")
    d["progress"] = json.loads(d.get("progress") or "{}")
    return d


@guarded
class SqliteJobs:
    """``store.jobs``: the durable background job queue (the daemon's runner takes from it)."""

    def __init__(self, store: SqliteStore) -> None:
        self._store = store

    @property
    def _db(self) -> sqlite3.Connection:
        return self._store.conn

    def enqueue(self, kind: str, payload: dict[str, Any] | None = None, *, dedup_key: str | None = None,
                run_after: float = 0.0, now: float | None = None) -> int:
        """Queue a job; with ``dedup_key`` an already waiting or running job of that key is reused."""
        return enqueue(self._db, kind, payload, dedup_key=dedup_key, run_after=run_after, now=now)

    def active(self, dedup_key: str) -> int | None:
        """The id of the queued, running or paused job of ``dedup_key``, if any."""
        got = self._db.execute("SELECT id, status FROM jobs WHERE dedup_key = ?", (dedup_key,)).fetchone()
        return int(got["id"]) if got and got["status"] in ACTIVE else None

    def waiting(self) -> int:
        """Jobs queued and not yet taken."""
        return int(self._db.execute("SELECT count(*) FROM jobs WHERE status = 'queued'").fetchone()[0])

    def pending(self) -> int:
        """Jobs queued or running."""
        return pending_count(self._db)

    def failed(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM jobs WHERE status = 'failed'").fetchone()[0])

    def get(self, job_id: int) -> dict[str, Any] | None:
        row = self._db.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
        return _decoded(row) if row else None

    def recent(self, limit: int = 50, *, active_only: bool = False) -> list[dict[str, Any]]:
        """The newest jobs (only the queued, running and paused ones with ``active_only``)."""
        sql = "SELECT * FROM jobs" + (" WHERE status IN ('queued','running','paused')" if active_only else "")
        return [_decoded(r) for r in self._db.execute(sql + " ORDER BY id DESC LIMIT ?", (limit,))]

    def counts(self) -> dict[str, int]:
        """Jobs by status."""
        return {r[0]: r[1] for r in self._db.execute("SELECT status, count(*) FROM jobs GROUP BY status")}

    def set_status(self, job_id: int, status: str) -> None:
        self._db.execute("UPDATE jobs SET status = ?, updated_at = ? WHERE id = ?", (status, time.time(), job_id))

    def claim(self, kinds: tuple[str, ...] | None = None) -> dict[str, Any] | None:
        """Take the oldest runnable job of ``kinds`` (inside the caller's transaction)."""
        return claim(self._db, kinds)

    def progress(self, job_id: int, data: dict[str, Any]) -> None:
        progress(self._db, job_id, data)

    def finish(self, job_id: int, status: str = "done", error: str = "", retry_in: float | None = None) -> None:
        """Record the end of a run; ``retry_in`` seconds queues it again after a failure."""
        finish(self._db, job_id, status, error, retry_in=retry_in)

    def requeue(self, job_id: int) -> None:
        """An interrupted run (the daemon stopped): back to the queue, the attempt not counted."""
        self._db.execute("UPDATE jobs SET status='queued', attempts=max(0, attempts-1) WHERE id=?", (job_id,))

    def recover(self) -> int:
        """Jobs left running by a killed process go back to the queue."""
        return int(recover(self._db))

"""The jobs queue: rows in the database, so jobs survive a restart."""

from __future__ import annotations

import json
import sqlite3
import time
from typing import Any


def enqueue(db: sqlite3.Connection, kind: str, payload: dict[str, Any] | None = None, *,
            dedup_key: str | None = None, run_after: float = 0.0, now: float | None = None) -> int:
    """Queue a job; with ``dedup_key`` an already queued or running job of that key is reused."""
    now = now or time.time()
    if dedup_key:
        got = db.execute("SELECT id, status FROM jobs WHERE dedup_key = ?", (dedup_key,)).fetchone()
        if got and got["status"] in ("queued", "running", "paused"):
            return int(got["id"])
        if got:
            db.execute("UPDATE jobs SET status='queued', attempts=0, payload=?, run_after=?, last_error='', "
                       "progress='{}', updated_at=? WHERE id=?",
                       (json.dumps(payload or {}), run_after, now, got["id"]))
            return int(got["id"])
    cur = db.execute(
        "INSERT INTO jobs (kind, dedup_key, payload, status, run_after, created_at, updated_at) "
        "VALUES (?,?,?,?,?,?,?)", (kind, dedup_key, json.dumps(payload or {}), "queued", run_after, now, now))
    return int(cur.lastrowid or 0)


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

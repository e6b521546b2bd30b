"""Per-source state of the sync engine: watermarks, checkpoints, sync history, custom source rules.

Rows of ``sources`` (one per source name: ``claude-code``, ``specstory``, ``custom:kimi-code``) and
``checkpoints`` (one per unit of a source). Writes join the caller's transaction when one is open
(``with store.transaction():``), else commit on their own. Also the two reads of turns the sources
need to find histories kept inside project folders: the project paths every agent's history named,
and which sessions another source already imported (so an export of a chat is not stored twice).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from ...scope import Scope

if TYPE_CHECKING:
    from . import SqliteStore

_CHUNK = 500   # ids per IN (…) list, well under SQLite's variable limit


class SqliteSources:
    def __init__(self, store: SqliteStore) -> None:
        self._s = store

    @contextlib.contextmanager
    def _write(self) -> Iterator[Any]:
        conn = self._s.conn
        if conn.in_transaction:
            yield conn
        else:
            with self._s.transaction() as c:
                yield c

    # -- source rows ---------------------------------------------------------------------------

    def state(self, name: str) -> dict[str, Any] | None:
        row = self._s.conn.execute("SELECT * FROM sources WHERE name = ?", (name,)).fetchone()
        return _state(row) if row is not None else None

    def ensure(self, name: str, *, agent: str, path: str, format: str) -> dict[str, Any]:
        """The state of source ``name``, created (active, no cursor) on first use."""
        got = self.state(name)
        if got is not None:
            return got
        with self._write() as c:
            c.execute("INSERT OR IGNORE INTO sources (name, agent, path, format, status, created_at) "
                      "VALUES (?,?,?,?, 'active', ?)", (name, agent, path, format, time.time()))
        got = self.state(name)
        assert got is not None
        return got

    def states(self) -> dict[str, dict[str, Any]]:
        """Every source's state by name."""
        return {r["name"]: _state(r) for r in self._s.conn.execute("SELECT * FROM sources")}

    def record_run(self, name: str, *, cursor: float | None, scan_start: float, clean: bool,
                   result: dict[str, Any], boundary: float | None = None, now: float | None = None) -> None:
        """After a sync of one source: the new cursor, the baseline (first scan start), scan and sync
        times (the sync time only when the run was clean), the result; ``boundary`` raises the custom
        source's boundary (never lowers it)."""
        now = time.time() if now is None else now
        with self._write() as c:
            if boundary is not None:
                c.execute("UPDATE sources SET boundary = max(coalesce(boundary, 0), ?) WHERE name = ?",
                          (boundary, name))
            c.execute("UPDATE sources SET cursor=?, baseline=coalesce(baseline, ?), last_scan_at=?, "
                      "last_sync_at=CASE WHEN ? THEN ? ELSE last_sync_at END, last_result=? WHERE name=?",
                      (cursor, scan_start, now, clean, now, json.dumps(result), name))

    def record_first_import(self, name: str, *, boundary: float | None, cursor: float | None,
                            result: dict[str, Any], now: float | None = None) -> None:
        """After a discovered source's first import: its boundary and cursor set outright."""
        now = time.time() if now is None else now
        with self._write() as c:
            c.execute("UPDATE sources SET boundary=?, cursor=?, last_scan_at=?, last_sync_at=?, last_result=? "
                      "WHERE name=?", (boundary, cursor, now, now, json.dumps(result), name))

    def save_rules(self, name: str, *, agent: str, status: str, format: str, rules: dict[str, Any]) -> None:
        """Create or update a source with its rules (JSON: roots, pattern, evidence, project folders…)
        and status (``draft`` | ``active`` | ``paused``); cursor and checkpoints are kept."""
        with self._write() as c:
            c.execute("INSERT INTO sources (name, agent, path, format, status, rules, created_at) "
                      "VALUES (?,?,?,?,?,?,?) ON CONFLICT(name) DO UPDATE SET status=excluded.status, "
                      "rules=excluded.rules, path=excluded.path",
                      (name, agent, (rules.get("roots") or [""])[0], format, status, json.dumps(rules),
                       time.time()))

    def custom(self, *, status: str = "active") -> list[dict[str, Any]]:
        """The discovered sources (``custom:…``) of a status, with their rules parsed."""
        return [_state(r) for r in self._s.conn.execute(
            "SELECT * FROM sources WHERE name LIKE 'custom:%' AND status = ? ORDER BY name", (status,))]

    # -- checkpoints ---------------------------------------------------------------------------

    def checkpoints(self, name: str) -> dict[str, dict[str, Any]]:
        """Unit key → its checkpoint (path, size, mtime, last_ts, last_msg_id, content_hash)."""
        return {r["unit"]: dict(r) for r in self._s.conn.execute(
            "SELECT * FROM checkpoints WHERE source = ?", (name,))}

    def save_checkpoint(self, name: str, unit: str, *, path: str, size: int | None, mtime: float | None,
                        last_ts: float | None, last_msg_id: str, content_hash: str) -> None:
        """A unit's checkpoint; ``size``/``mtime`` None when the unit must be read again next time."""
        with self._write() as c:
            c.execute(
                "INSERT INTO checkpoints (source, unit, path, size, mtime, last_ts, last_msg_id, content_hash, "
                "updated_at) VALUES (?,?,?,?,?,?,?,?,?) ON CONFLICT(source, unit) DO UPDATE SET "
                "path=excluded.path, size=excluded.size, mtime=excluded.mtime, last_ts=excluded.last_ts, "
                "last_msg_id=excluded.last_msg_id, content_hash=excluded.content_hash, "
                "updated_at=excluded.updated_at",
                (name, unit, path, size, mtime, last_ts, last_msg_id, content_hash, time.time()))

    def drop_checkpoint(self, name: str, unit: str) -> None:
        with self._write() as c:
            c.execute("DELETE FROM checkpoints WHERE source = ? AND unit = ?", (name, unit))

    # -- what the histories already hold --------------------------------------------------------

    def project_paths(self, scope: Scope) -> list[str]:
        """The distinct project folders (absolute paths) the scope's turns and sessions name, sorted:
        where SpecStory exports and aider histories kept inside projects are looked for."""
        where, params = scope.sql()
        rows = self._s.conn.execute(
            f"SELECT DISTINCT project FROM turns WHERE {where} AND project != '' "
            f"UNION SELECT DISTINCT project FROM sessions WHERE {where} AND project != ''",
            [*params, *params])
        return sorted({str(r[0]) for r in rows if os.path.isabs(str(r[0]))})

    def imported_sessions(self, scope: Scope, source: str, session_ids: Iterable[str]) -> set[str]:
        """Which of ``session_ids`` hold turns imported by source ``source`` in the scope."""
        ids = list(dict.fromkeys(s for s in session_ids if s))
        where, params = scope.sql()
        found: set[str] = set()
        for i in range(0, len(ids), _CHUNK):
            part = ids[i : i + _CHUNK]
            found.update(str(r[0]) for r in self._s.conn.execute(
                f"SELECT DISTINCT session_id FROM turns WHERE {where} AND source_name = ? "
                f"AND session_id IN ({','.join('?' * len(part))})", [*params, source, *part]))
        return found


def _state(row: Any) -> dict[str, Any]:
    d = dict(row)
    try:
        d["rules"] = json.loads(d.get("rules") or "{}")
    except ValueError:
        d["rules"] = {}
    return d

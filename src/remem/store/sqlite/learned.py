"""Learned memories (issue 16) in SQLite: the ``learned`` rows, their evidence turns, their events
and the per-project learn cursor. Every read takes a Scope (owners always, the project when set;
learned memories belong to an owner and a project, not to one agent, so the scope's agent does not
narrow them). The cascade from forgotten turns is a trigger (migration ``m009_learned``).
"""

from __future__ import annotations

import builtins
import json
from typing import TYPE_CHECKING, Any

from ...scope import Scope

if TYPE_CHECKING:
    from . import SqliteStore

_COLS = ("owner, id, project, layer, kind, slot, value, text, status, confidence, support_sessions, "
         "support_turns, locked, edited, decided, polarity, scope, data, stale, created_at, updated_at, "
         "superseded_by")
_NAMES = [c.strip() for c in _COLS.split(",")]
_UPSERT = ", ".join(f"{c} = excluded.{c}" for c in _NAMES if c not in ("owner", "id"))


def _where(scope: Scope, alias: str = "") -> tuple[str, list[Any]]:
    p = f"{alias}." if alias else ""
    clause = f"{p}owner IN ({','.join('?' * len(scope.owners))})"
    params: list[Any] = list(scope.owners)
    if scope.project is not None:
        clause += f" AND {p}project = ?"
        params.append(scope.project)
    return clause, params


def _record(row: Any, evidence: list[dict[str, Any]]) -> dict[str, Any]:
    d = dict(zip(_NAMES, tuple(row), strict=True))
    d["data"] = json.loads(d["data"] or "{}")
    d["locked"], d["edited"] = bool(d["locked"]), bool(d["edited"])
    d["sessions"], d["turns"] = d.pop("support_sessions"), d.pop("support_turns")
    d["evidence"] = evidence
    return d


class SqliteLearned:
    """``store.learned``: learned memories, evidence, events and cursors (protocol ``Learned``)."""

    def __init__(self, store: SqliteStore) -> None:
        self._store = store

    @property
    def _db(self) -> Any:
        return self._store.conn

    # -- the turns learning reads ----------------------------------------------------------
    def projects(self, scope: Scope) -> dict[tuple[str, str], tuple[int, int, float]]:
        """(owner, project) → (turn count, newest rowid, newest write time) of the turns in scope."""
        where, params = _where(scope)
        rows = self._db.execute(
            f"SELECT owner, project, count(*), max(rowid), max(updated_at) FROM turns WHERE {where} "
            f"AND deleted = 0 GROUP BY owner, project", params)
        return {(r[0], r[1]): (int(r[2]), int(r[3] or 0), float(r[4] or 0.0)) for r in rows}

    def turns_in_time_order(self, owner: str, project: str) -> list[dict[str, Any]]:
        """Every turn of one owner's project, oldest first (start time, then write order)."""
        rows = self._db.execute(
            "SELECT id, session_id, project, request, reply, actions_json, status, started_at, ended_at, "
            "created_at FROM turns WHERE owner = ? AND project = ? AND deleted = 0 "
            "ORDER BY coalesce(started_at, ended_at, created_at), rowid", (owner, project))
        return [dict(r) for r in rows]

    def clock(self, owner: str, project: str) -> float:
        """The newest turn time of one owner's project, as the learn job's time order reads it."""
        row = self._db.execute(
            "SELECT max(coalesce(started_at, ended_at, created_at)) FROM turns WHERE owner = ? AND project = ? "
            "AND deleted = 0", (owner, project)).fetchone()
        return float(row[0] or 0.0) if row else 0.0

    def turn_requests(self, scope: Scope, turn_ids: list[str]) -> dict[str, dict[str, Any]]:
        """The evidence turns' requests and times (for ``show``), within the scope's owners."""
        if not turn_ids:
            return {}
        marks = ",".join("?" * len(turn_ids))
        owners = ",".join("?" * len(scope.owners))
        rows = self._db.execute(
            f"SELECT id, session_id, request, started_at FROM turns WHERE id IN ({marks}) "
            f"AND owner IN ({owners}) AND deleted = 0", [*turn_ids, *scope.owners])
        return {r["id"]: dict(r) for r in rows}

    # -- cursors ---------------------------------------------------------------------------
    def cursors(self, scope: Scope) -> dict[tuple[str, str], dict[str, Any]]:
        where, params = _where(scope)
        rows = self._db.execute(
            f"SELECT owner, project, turns, last_rowid, last_update, learned_at, dirty, learner FROM learned_cursor "
            f"WHERE {where}", params)
        return {(r[0], r[1]): dict(r) for r in rows}

    def set_cursor(self, owner: str, project: str, seen: tuple[int, int, float], now: float,
                   learner: str = "") -> None:
        self._db.execute(
            "INSERT INTO learned_cursor (owner, project, turns, last_rowid, last_update, learned_at, dirty, learner) "
            "VALUES (?,?,?,?,?,?,0,?) ON CONFLICT (owner, project) DO UPDATE SET turns = excluded.turns, "
            "last_rowid = excluded.last_rowid, last_update = excluded.last_update, "
            "learned_at = excluded.learned_at, dirty = 0, learner = excluded.learner",
            (owner, project, *seen, now, learner))

    def drop_cursor(self, owner: str, project: str) -> None:
        self._db.execute("DELETE FROM learned_cursor WHERE owner = ? AND project = ?", (owner, project))

    # -- memories --------------------------------------------------------------------------
    def _evidence(self, keys: list[tuple[str, str]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
        out: dict[tuple[str, str], list[dict[str, Any]]] = {k: [] for k in keys}
        owners = sorted({o for o, _ in keys})
        for owner in owners:
            ids = [i for o, i in keys if o == owner]
            for start in range(0, len(ids), 500):
                chunk = ids[start:start + 500]
                rows = self._db.execute(
                    f"SELECT learned_id, turn_id, session_id, against FROM learned_evidence WHERE owner = ? "
                    f"AND learned_id IN ({','.join('?' * len(chunk))}) ORDER BY learned_id, pos", [owner, *chunk])
                for r in rows:
                    out[(owner, r[0])].append({"turn_id": r[1], "session_id": r[2], "against": bool(r[3])})
        return out

    def list(self, scope: Scope, *, statuses: tuple[str, ...] | None = None, kind: str | None = None,
             ids: builtins.list[str] | None = None, limit: int | None = None) -> builtins.list[dict[str, Any]]:
        """Memories in scope, best first (status, confidence, newest), each with its evidence."""
        where, params = _where(scope)
        if statuses:
            where += f" AND status IN ({','.join('?' * len(statuses))})"
            params.extend(statuses)
        if kind:
            where += " AND kind = ?"
            params.append(kind)
        if ids is not None:
            if not ids:
                return []
            where += f" AND id IN ({','.join('?' * len(ids))})"
            params.extend(ids)
        sql = (f"SELECT {_COLS} FROM learned WHERE {where} ORDER BY project, "
               f"CASE status WHEN 'active' THEN 0 WHEN 'candidate' THEN 1 ELSE 2 END, confidence DESC, "
               f"updated_at DESC, id")
        if limit:
            sql += f" LIMIT {int(limit)}"
        rows = self._db.execute(sql, params).fetchall()
        ev = self._evidence([(r[0], r[1]) for r in rows])
        return [_record(r, ev[(r[0], r[1])]) for r in rows]

    def get(self, scope: Scope, memory_id: str) -> dict[str, Any] | None:
        got = self.list(scope, ids=[memory_id])
        return got[0] if got else None

    def count(self, scope: Scope) -> dict[str, int]:
        where, params = _where(scope)
        return {r[0]: int(r[1]) for r in self._db.execute(
            f"SELECT status, count(*) FROM learned WHERE {where} GROUP BY status", params)}

    def put(self, rec: dict[str, Any]) -> None:
        """Insert or replace one memory with its evidence (caller holds a transaction)."""
        vals = {**rec, "support_sessions": rec.get("sessions", 0), "support_turns": rec.get("turns", 0),
                "data": json.dumps(rec.get("data") or {}, ensure_ascii=False, sort_keys=True, default=str),
                "locked": int(bool(rec.get("locked"))), "edited": int(bool(rec.get("edited")))}
        vals.setdefault("stale", 0)
        vals.setdefault("superseded_by", "")
        self._db.execute(f"INSERT INTO learned ({_COLS}) VALUES ({','.join('?' * len(_NAMES))}) "
                         f"ON CONFLICT (owner, id) DO UPDATE SET {_UPSERT}",
                         [vals[c] if vals[c] is not None else "" for c in _NAMES])
        self._db.execute("DELETE FROM learned_evidence WHERE owner = ? AND learned_id = ?", (rec["owner"], rec["id"]))
        self._db.executemany(
            "INSERT OR IGNORE INTO learned_evidence (owner, learned_id, turn_id, session_id, against, pos) "
            "VALUES (?,?,?,?,?,?)",
            [(rec["owner"], rec["id"], e["turn_id"], e.get("session_id", ""), int(bool(e.get("against"))), i)
             for i, e in enumerate(rec.get("evidence") or [])])

    def delete(self, owner: str, memory_id: str) -> None:
        self._db.execute("DELETE FROM learned_evidence WHERE owner = ? AND learned_id = ?", (owner, memory_id))
        self._db.execute("DELETE FROM learned WHERE owner = ? AND id = ?", (owner, memory_id))

    # -- events ----------------------------------------------------------------------------
    def add_event(self, owner: str, memory_id: str, action: str, before: dict[str, Any] | None,
                  after: dict[str, Any] | None, *, actor: str, ts: float) -> int:
        def enc(v: dict[str, Any] | None) -> str | None:
            return None if v is None else json.dumps(v, ensure_ascii=False, sort_keys=True, default=str)

        cur = self._db.execute(
            "INSERT INTO learned_events (owner, learned_id, ts, action, before_json, after_json, actor) "
            "VALUES (?,?,?,?,?,?,?)", (owner, memory_id, ts, action, enc(before), enc(after), actor))
        return int(cur.lastrowid or 0)

    def purge_events(self, owner: str, memory_id: str) -> int:
        """Delete a memory's events (they hold its text): a forgotten memory keeps no trace of it."""
        return int(self._db.execute("DELETE FROM learned_events WHERE owner = ? AND learned_id = ?",
                                    (owner, memory_id)).rowcount)

    def _event_rows(self, sql: str, params: builtins.list[Any]) -> builtins.list[dict[str, Any]]:
        out = []
        for r in self._db.execute(sql, params):
            d = dict(r)
            d["before"] = json.loads(d.pop("before_json")) if d["before_json"] is not None else None
            d["after"] = json.loads(d.pop("after_json")) if d["after_json"] is not None else None
            out.append(d)
        return out

    def events(self, scope: Scope, memory_id: str) -> builtins.list[dict[str, Any]]:
        """The memory's events, oldest first (owners of the scope only)."""
        owners = ",".join("?" * len(scope.owners))
        return self._event_rows(
            f"SELECT id, owner, learned_id, ts, action, before_json, after_json, actor FROM learned_events "
            f"WHERE learned_id = ? AND owner IN ({owners}) ORDER BY id", [memory_id, *scope.owners])

    def event(self, scope: Scope, event_id: int) -> dict[str, Any] | None:
        owners = ",".join("?" * len(scope.owners))
        got = self._event_rows(
            f"SELECT id, owner, learned_id, ts, action, before_json, after_json, actor FROM learned_events "
            f"WHERE id = ? AND owner IN ({owners})", [event_id, *scope.owners])
        return got[0] if got else None


__all__ = ["SqliteLearned"]

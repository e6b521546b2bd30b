"""Packet records (issue 18, feedback) in SQLite: one small ``packets`` row per packet handed to an
agent (migration ``m011_packets``). Every read takes a Scope (owners always, the project when set).
The row holds ids and a prompt hash, never text, so it needs no redaction and forgetting a turn
leaves nothing readable behind (a dangling id only).
"""

from __future__ import annotations

import builtins
import json
from typing import TYPE_CHECKING, Any

from ...scope import Scope

if TYPE_CHECKING:
    from . import SqliteStore

_COLS = ("id, owner, project, agent, session_id, entry, prompt_hash, turn_ids, learned_ids, created_at, "
         "outcome, turn_id, judged_at, votes")


def _where(scope: Scope) -> tuple[str, list[Any]]:
    clause = f"owner IN ({','.join('?' * len(scope.owners))})"
    params: list[Any] = list(scope.owners)
    if scope.project is not None:
        clause += " AND project = ?"
        params.append(scope.project)
    return clause, params


def _row(r: Any) -> dict[str, Any]:
    d = dict(r)
    d["turn_ids"] = json.loads(d["turn_ids"] or "[]")
    d["learned_ids"] = json.loads(d["learned_ids"] or "[]")
    d["votes"] = json.loads(d["votes"] or "{}")
    return d


class SqlitePackets:
    """``store.packets``: what each packet contained and how its turn went (protocol ``Packets``)."""

    def __init__(self, store: SqliteStore) -> None:
        self._store = store

    @property
    def _db(self) -> Any:
        return self._store.conn

    def add(self, rec: dict[str, Any]) -> int:
        cur = self._db.execute(
            "INSERT INTO packets (owner, project, agent, session_id, entry, prompt_hash, turn_ids, learned_ids, "
            "created_at) VALUES (?,?,?,?,?,?,?,?,?)",
            (rec["owner"], rec.get("project") or "", rec.get("agent") or "", rec.get("session_id") or "",
             rec["entry"], rec.get("prompt_hash") or "", json.dumps(list(rec.get("turn_ids") or [])),
             json.dumps(list(rec.get("learned_ids") or [])), float(rec["created_at"])))
        return int(cur.lastrowid or 0)

    def open(self, scope: Scope, *, limit: int = 500) -> builtins.list[dict[str, Any]]:
        where, params = _where(scope)
        rows = self._db.execute(f"SELECT {_COLS} FROM packets WHERE {where} AND judged_at IS NULL "
                                f"ORDER BY created_at, id LIMIT {int(limit)}", params)
        return [_row(r) for r in rows]

    def judge(self, owner: str, packet_id: int, outcome: str, turn_id: str, ts: float) -> None:
        self._db.execute("UPDATE packets SET outcome = ?, turn_id = ?, judged_at = ? WHERE owner = ? AND id = ?",
                         (outcome, turn_id, ts, owner, int(packet_id)))

    def vote(self, owner: str, packet_id: int, item_id: str, verdict: str) -> None:
        """Set one item's thumb (good / bad); the caller checked the item is in the packet."""
        row = self._db.execute("SELECT votes FROM packets WHERE owner = ? AND id = ?", (owner, int(packet_id))).fetchone()
        if row is None:
            return
        votes = json.loads(row[0] or "{}")
        votes[item_id] = verdict
        self._db.execute("UPDATE packets SET votes = ? WHERE owner = ? AND id = ?",
                         (json.dumps(votes, sort_keys=True), owner, int(packet_id)))

    def recent(self, scope: Scope, *, session: str | None = None, limit: int = 50) -> builtins.list[dict[str, Any]]:
        where, params = _where(scope)
        if session:
            where += " AND session_id = ?"
            params.append(session)
        rows = self._db.execute(f"SELECT {_COLS} FROM packets WHERE {where} ORDER BY created_at DESC, id DESC "
                                f"LIMIT {int(limit)}", params)
        return [_row(r) for r in rows]

    def get(self, scope: Scope, packet_id: int) -> dict[str, Any] | None:
        where, params = _where(scope)
        r = self._db.execute(f"SELECT {_COLS} FROM packets WHERE {where} AND id = ?", [*params, int(packet_id)]
                             ).fetchone()
        return _row(r) if r is not None else None

    def prune(self, *, before: float, keep: int) -> int:
        n = self._db.execute("DELETE FROM packets WHERE created_at < ?", (before,)).rowcount
        n += self._db.execute("DELETE FROM packets WHERE id <= (SELECT id FROM packets ORDER BY id DESC "
                              "LIMIT 1 OFFSET ?)", (max(0, int(keep)),)).rowcount
        return int(n)


__all__ = ["SqlitePackets"]

"""Tombstones: what the user forgot stays forgotten.

``remem forget`` (and the API, MCP and viewer, through ``Remem.forget``) deletes rows and leaves one
tombstone per forgotten turn (its source key, and its session + request hash so a live capture and
its imported twin are both kept out), per forgotten session (every turn of it, also later ones) or
per forgotten source (what it held up to the moment of forgetting). The write pipeline checks them
for every writer (sync, hooks, import, API); only ``remem forget --undo`` or an explicit re-add of
the same memory brings a turn back. Tombstones hold keys and hashes, never the forgotten text.
"""

from __future__ import annotations

import builtins
import sqlite3
import time
from typing import TYPE_CHECKING, Any

from ...scope import Scope
from .db import guarded
from .turns import TurnRow

if TYPE_CHECKING:
    from . import SqliteStore

KINDS = ("turn", "session", "source")


def any_kept_out(db: sqlite3.Connection) -> bool:
    """Whether any tombstone exists (one cheap read per write batch; most homes have none)."""
    return db.execute("SELECT 1 FROM tombstones LIMIT 1").fetchone() is not None


def keeps_out(db: sqlite3.Connection, row: TurnRow) -> bool:
    """Whether a tombstone of ``row``'s owner covers it."""
    when = row.started_at if row.started_at is not None else row.ended_at
    # one indexed lookup per form (an OR over them would scan every tombstone of the owner)
    hit = db.execute(
        "SELECT EXISTS (SELECT 1 FROM tombstones WHERE owner = ?1 AND kind = 'turn' AND key = ?2)"
        " OR (?3 != '' AND EXISTS (SELECT 1 FROM tombstones WHERE owner = ?1 AND session_id = ?3"
        "     AND request_hash = ?4 AND kind = 'turn' AND agent = ?5 AND (substr(key, 1, 5) = 'live:') != ?6))"
        " OR (?3 != '' AND EXISTS (SELECT 1 FROM tombstones WHERE owner = ?1 AND kind = 'session' AND key = ?3))"
        " OR EXISTS (SELECT 1 FROM tombstones WHERE owner = ?1 AND kind = 'source' AND key IN (?7, ?5)"
        "     AND coalesce(?8, 0) <= until)",
        (row.owner, row.source_key, row.session_id, row.request_hash, row.agent,
         row.source_key.startswith("live:"), row.source_name or row.agent, when)).fetchone()[0]
    return bool(hit)


def lift_turn(db: sqlite3.Connection, row: TurnRow) -> None:
    """An explicit re-add: the turn's own tombstone goes (session / source tombstones stay)."""
    db.execute("DELETE FROM tombstones WHERE owner = ? AND kind = 'turn' AND (key = ? OR (? != '' AND "
               "session_id = ? AND agent = ? AND request_hash = ?))",
               (row.owner, row.source_key, row.session_id, row.session_id, row.agent, row.request_hash))


def bury_turns(db: sqlite3.Connection, scope: Scope, ids: list[str], now: float | None = None) -> int:
    """One tombstone per turn of ``ids`` in scope, written before the turns are deleted (caller
    holds the transaction). Returns how many."""
    if not ids:
        return 0
    now = now or time.time()
    where, params = scope.sql()
    rows = db.execute(f"SELECT id, owner, source_key, agent, session_id, request_hash, source_name FROM turns "
                      f"WHERE {where} AND id IN ({','.join('?' * len(ids))})", [*params, *ids]).fetchall()
    db.executemany(
        "INSERT INTO tombstones (owner, kind, key, turn_id, agent, session_id, request_hash, source_name, "
        "created_at) VALUES (?, 'turn', ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(owner, kind, key) DO UPDATE SET "
        "turn_id = excluded.turn_id, created_at = excluded.created_at",
        [(r["owner"], r["source_key"], r["id"], r["agent"], r["session_id"], r["request_hash"],
          r["source_name"], now) for r in rows])
    return len(rows)


def bury(db: sqlite3.Connection, scope: Scope, kind: str, key: str, now: float | None = None) -> None:
    """A session or source tombstone for each owner of ``scope``, written before the turns are
    deleted. A source keeps out what it held up to now; a session every turn of it."""
    if kind not in ("session", "source"):
        raise ValueError(f"unknown tombstone kind {kind!r}")
    now = now or time.time()
    agent = ""
    if kind == "session":  # remembered so --undo re-reads only that agent's history
        where, params = scope.sql()
        agents = [r[0] for r in db.execute(f"SELECT DISTINCT agent FROM turns WHERE {where} AND session_id = ? "
                                           f"LIMIT 2", [*params, key])]
        agent = agents[0] if len(agents) == 1 else ""
    db.executemany(
        "INSERT INTO tombstones (owner, kind, key, agent, until, created_at) VALUES (?,?,?,?,?,?) "
        "ON CONFLICT(owner, kind, key) DO UPDATE SET until = excluded.until, agent = excluded.agent, "
        "created_at = excluded.created_at",
        [(o, kind, key, agent, now if kind == "source" else None, now) for o in scope.owners])


def reread_sources(db: sqlite3.Connection, lifted: list[dict[str, Any]]) -> None:
    """Drop the checkpoints of the sources lifted tombstones came from, so the next sync re-reads
    their unchanged files and brings the turns back (a session of unknown agent: every source)."""
    names = {t["source_name"] or t["agent"] or (t["key"] if t["kind"] == "source" else "") for t in lifted}
    if "" in names:
        db.execute("DELETE FROM checkpoints")
    for name in names - {""}:
        db.execute("DELETE FROM checkpoints WHERE source IN (SELECT name FROM sources WHERE name = ? OR agent = ?)",
                   (name, name))


def lift(db: sqlite3.Connection, scope: Scope, *, ids: list[str] | None = None, session_id: str | None = None,
         source: str | None = None) -> list[dict[str, Any]]:
    """Remove tombstones (``remem forget --undo``); returns the ones removed."""
    where, params = Scope.of(list(scope.owners)).sql()
    if ids is not None:
        if not ids:
            return []
        clause, args = f"kind = 'turn' AND turn_id IN ({','.join('?' * len(ids))})", list(ids)
    elif session_id is not None:
        clause, args = "kind = 'session' AND key = ?", [session_id]
    elif source is not None:
        clause, args = "kind = 'source' AND key = ?", [source]
    else:
        raise ValueError("lift needs ids, a session or a source")
    rows = [dict(r) for r in db.execute(
        f"SELECT id, owner, kind, key, turn_id, agent, session_id, source_name, until, created_at "
        f"FROM tombstones WHERE {where} AND {clause}", [*params, *args])]
    if rows:
        marks = ",".join("?" * len(rows))
        db.execute(f"DELETE FROM tombstones WHERE id IN ({marks})", [r["id"] for r in rows])
    return rows


def list_all(db: sqlite3.Connection, scope: Scope, limit: int = 200) -> list[dict[str, Any]]:
    """Tombstones of the scope's owners, newest first."""
    where, params = Scope.of(list(scope.owners)).sql()
    return [dict(r) for r in db.execute(
        f"SELECT owner, kind, key, turn_id, agent, session_id, source_name, until, created_at "
        f"FROM tombstones WHERE {where} ORDER BY created_at DESC, id DESC LIMIT ?", [*params, limit])]


def forgotten_since(db: sqlite3.Connection, scope: Scope, since: float, limit: int = 1000) -> list[dict[str, Any]]:
    """Turn and session tombstones of the scope's owners made at or after ``since``, oldest first
    (a team sync passes the server's forgets on to the laptops)."""
    where, params = Scope.of(list(scope.owners)).sql()
    return [dict(r) for r in db.execute(
        f"SELECT owner, kind, key, turn_id, session_id, created_at FROM tombstones WHERE {where} "
        f"AND kind IN ('turn', 'session') AND created_at >= ? ORDER BY created_at, id LIMIT ?",
        [*params, since, limit])]


@guarded
class SqliteTombstones:
    """``store.tombstones``: what the user forgot, checked on every write (inside its transaction)."""

    def __init__(self, store: SqliteStore) -> None:
        self._store = store

    @property
    def _db(self) -> sqlite3.Connection:
        return self._store.conn

    def any(self) -> bool:
        """Whether any tombstone exists (one cheap read per write batch; most homes have none)."""
        return any_kept_out(self._db)

    def keeps_out(self, row: TurnRow) -> bool:
        return keeps_out(self._db, row)

    def lift_turn(self, row: TurnRow) -> None:
        lift_turn(self._db, row)

    def bury_turns(self, scope: Scope, ids: list[str]) -> int:
        return bury_turns(self._db, scope, ids)

    def bury(self, scope: Scope, kind: str, key: str) -> None:
        bury(self._db, scope, kind, key)

    def lift(self, scope: Scope, *, ids: list[str] | None = None, session_id: str | None = None,
             source: str | None = None) -> list[dict[str, Any]]:
        """Remove tombstones and let the next sync re-read the sources they name; returns them."""
        lifted = lift(self._db, scope, ids=ids, session_id=session_id, source=source)
        reread_sources(self._db, lifted)
        return lifted

    def list(self, scope: Scope, limit: int = 200) -> builtins.list[dict[str, Any]]:
        return list_all(self._db, scope, limit)

    def since(self, scope: Scope, since: float, limit: int = 1000) -> builtins.list[dict[str, Any]]:
        return forgotten_since(self._db, scope, since, limit)

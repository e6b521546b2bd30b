"""Scoped reads for the recall engine: candidates' metadata, neighbours, sessions, errors, recency.

Every function takes a Scope and puts its predicate into the SQL; none reads memory without it.
"""

from __future__ import annotations

import bisect
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ...scope import Scope
from .db import connect

if TYPE_CHECKING:
    from . import SqliteStore

META = ("id, owner, agent, project, session_id, status, importance, access_count, started_at, ended_at, "
        "created_at, updated_at, error_sigs, kind")

# a turn's time for recency and named days: the index turns_owner_ended holds this expression
TURN_TIME = "coalesce(ended_at, started_at, created_at)"

monotonic: Callable[[], float] = time.monotonic   # the caches' clock; benchmarks of spaced prompts move it


def meta(db: sqlite3.Connection, scope: Scope, ids: list[str], text_chars: int = 0) -> dict[str, dict[str, Any]]:
    """Lean rows for ranking (no actions). ``text_chars`` > 0 adds the request's and reply's start."""
    if not ids:
        return {}
    where, params = scope.sql()
    cols = META
    if text_chars:
        cols += f", substr(request, 1, {int(text_chars)}) AS request, substr(reply, 1, {int(text_chars)}) AS reply"
    out: dict[str, dict[str, Any]] = {}
    names: list[str] = []
    for i in range(0, len(ids), 500):
        chunk = ids[i:i + 500]
        for r in db.execute(f"WITH c(cid) AS (VALUES {','.join(['(?)'] * len(chunk))}) SELECT {cols} FROM c "
                            f"CROSS JOIN turns ON turns.id = c.cid WHERE {where} AND deleted = 0",
                            [*chunk, *params]):
            names = names or list(r.keys())
            out[r[0]] = dict(zip(names, r, strict=True))  # by position: dict(row) looks each name up (~3 µs a row)
    return out


def full_rows(db: sqlite3.Connection, scope: Scope, ids: list[str]) -> dict[str, dict[str, Any]]:
    """Whole rows by id (looked up by id first: the scope index would scan the whole scope)."""
    from .turns import COLUMNS, row_to_dict

    if not ids:
        return {}
    where, params = scope.sql("t")
    cols = ", ".join(f"t.{c.strip()}" for c in COLUMNS.split(","))
    out: dict[str, dict[str, Any]] = {}
    for i in range(0, len(ids), 500):
        chunk = ids[i:i + 500]
        for r in db.execute(f"WITH c(cid) AS (VALUES {','.join(['(?)'] * len(chunk))}) SELECT {cols} FROM c "
                            f"CROSS JOIN turns t ON t.id = c.cid WHERE {where}", [*chunk, *params]):
            out[r["id"]] = row_to_dict(r)
    return out


def neighbours(db: sqlite3.Connection, scope: Scope, rows: list[dict[str, Any]],
               window: int = 1) -> dict[str, list[str]]:
    """The turns just before and after each row in its session (same owner and agent), in scope:
    each session's (start, id) pairs are read once, for all of its rows, from the covering
    ``turns_session_order`` index (m020), not from the wide turn rows."""
    where, params = scope.sql()
    sessions: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in rows:
        if r.get("session_id"):
            sessions.setdefault((r["session_id"], r["owner"], r["agent"]), []).append(r)
    out: dict[str, list[str]] = {}
    for key, group in sessions.items():
        order = [(float(t), i) for t, i in db.execute(
            f"SELECT coalesce(started_at, 0), id FROM turns WHERE session_id = ? AND owner = ? AND agent = ? "
            f"AND {where} AND deleted = 0 ORDER BY 1, 2", [*key, *params])]
        for r in group:
            at = (float(r.get("started_at") or 0.0), r["id"])
            i = bisect.bisect_left(order, at)
            j = i + 1 if i < len(order) and order[i] == at else i
            out[r["id"]] = [x[1] for x in order[max(0, i - window):i]] + [x[1] for x in order[j:j + window]]
    return out


def recent(db: sqlite3.Connection, scope: Scope, limit: int, *, since: float | None = None,
           until: float | None = None) -> list[tuple[str, float]]:
    """Newest turns first (score = their time; ties: the newer row first), optionally inside
    [since, until)."""
    return [(tid, t) for tid, t, _ in _newest(db, scope, limit, since, until)]


def _newest(db: sqlite3.Connection, scope: Scope, limit: int, since: float | None,
            until: float | None) -> list[tuple[str, float, int]]:
    """(id, time, rowid) newest first, read from the (owner, time) index one owner at a time:
    several owners in one ``IN`` would make the database sort every turn they have."""
    if len(scope.owners) > 1:
        got = [hit for o in scope.owners for hit in _newest(db, Scope((o,), scope.agent, scope.project), limit,
                                                             since, until)]
        return sorted(got, key=lambda h: (-h[1], -h[2]))[:limit]
    where, params = scope.sql()
    clauses = [where, "deleted = 0"]
    args: list[Any] = list(params)
    if since is not None:
        clauses.append(f"{TURN_TIME} >= ?")
        args.append(since)
    if until is not None:
        clauses.append(f"{TURN_TIME} < ?")
        args.append(until)
    sql = (f"SELECT id, {TURN_TIME} AS t, rowid FROM turns WHERE {' AND '.join(clauses)} "
           f"ORDER BY t DESC, rowid DESC LIMIT ?")
    return [(r[0], float(r[1] or 0), int(r[2])) for r in db.execute(sql, [*args, limit])]


def by_error(db: sqlite3.Connection, scope: Scope, sigs: list[str], limit: int) -> list[tuple[str, float]]:
    """Turns that failed with the same error signature (exact: 2 points) or the same error type
    (1), newest first within each; read newest first from the (signature, time) and (type, time)
    indexes, so a common error costs ``limit`` rows, not all of its turns."""
    if not sigs:
        return []
    where, params = scope.sql("t")
    heads = list(dict.fromkeys(s.split(":", 1)[0].strip() for s in sigs))
    scores: dict[str, float] = {}
    when: dict[str, float] = {}
    for col, keys, points in (("sig", list(dict.fromkeys(sigs)), 2.0), ("head", heads, 1.0)):
        for key in keys:
            sql = (f"SELECT t.id, e.at FROM turn_errors e JOIN turns t ON t.id = e.turn_id "
                   f"WHERE e.{col} = ? AND {where} AND t.deleted = 0 ORDER BY e.at DESC LIMIT ?")
            for tid, at in db.execute(sql, [key, *params, limit]):
                if scores.get(tid, 0.0) < points:
                    scores[tid] = points
                when[tid] = max(when.get(tid, 0.0), float(at or 0))
    order = sorted(scores, key=lambda t: (-scores[t], -when[t]))[:limit]
    return [(t, scores[t]) for t in order]


def fixes_after(db: sqlite3.Connection, scope: Scope, row: dict[str, Any], limit: int = 2) -> list[dict[str, Any]]:
    """The next succeeded turns of the same session after a failed one: how it was fixed."""
    if not row.get("session_id"):
        return []
    where, params = scope.sql()
    sql = (f"SELECT id, request, reply, status, ended_at FROM turns WHERE session_id = ? AND owner = ? "
           f"AND agent = ? AND {where} AND deleted = 0 AND status = 'succeeded' "
           f"AND coalesce(started_at, 0) >= ? AND id != ? ORDER BY coalesce(started_at, 0), id LIMIT ?")
    return [dict(r) for r in db.execute(sql, [row["session_id"], row["owner"], row["agent"], *params,
                                              row.get("started_at") or 0.0, row["id"], limit])]


def session_turns(db: sqlite3.Connection, scope: Scope, owner: str, agent: str, session_id: str,
                  limit: int = 200) -> list[dict[str, Any]]:
    where, params = scope.sql()
    sql = (f"SELECT id, owner, agent, project, session_id, request, reply, status, started_at, ended_at, "
           f"updated_at, error_sigs FROM turns WHERE session_id = ? AND owner = ? AND agent = ? AND {where} "
           f"AND deleted = 0 ORDER BY coalesce(started_at, 0), rowid LIMIT ?")
    return [dict(r) for r in db.execute(sql, [session_id, owner, agent, *params, limit])]


def count_upto(db: sqlite3.Connection, scope: Scope, limit: int) -> int:
    """Turns in scope, counting no further than ``limit`` (reads at most that many index entries)."""
    where, params = scope.sql()
    return int(db.execute(f"SELECT count(*) FROM (SELECT 1 FROM turns WHERE {where} AND deleted = 0 LIMIT ?)",
                          [*params, limit]).fetchone()[0])


def scope_size(db: sqlite3.Connection, scope: Scope) -> tuple[int, int, float]:
    """(turn count, max rowid, max updated_at) in scope: a version stamp for caches."""
    where, params = scope.sql()
    r = db.execute(f"SELECT count(*), coalesce(max(rowid), 0), coalesce(max(updated_at), 0) FROM turns "
                   f"WHERE {where} AND deleted = 0", params).fetchone()
    return int(r[0]), int(r[1]), float(r[2])


def iter_texts(db: sqlite3.Connection, scope: Scope) -> Iterator[tuple[str, str, str, str, str, float | None]]:
    """(id, session key, request, reply, summary, started_at) of every turn in scope, in time order."""
    where, params = scope.sql()
    sql = (f"SELECT id, owner || '/' || agent || '/' || session_id, request, reply, summary, started_at "
           f"FROM turns WHERE {where} AND deleted = 0 ORDER BY rowid")
    for r in db.execute(sql, params):
        yield r[0], r[1], r[2], r[3], r[4], r[5]


def touch(db: sqlite3.Connection, scope: Scope, ids: list[str], now: float) -> None:
    """Count an access of these turns (looked up by id: the scope index would scan the scope)."""
    if not ids:
        return
    where, params = scope.sql("t")
    db.execute(f"UPDATE turns SET access_count = access_count + 1, last_access = ? WHERE rowid IN ("
               f"SELECT t.rowid FROM (VALUES {','.join(['(?)'] * len(ids))}) c CROSS JOIN turns t "
               f"ON t.id = c.column1 WHERE {where})", [now, *ids, *params])


Row = tuple[str, str, str, str, str, "float | None"]  # id, session key, request, reply, summary, started_at


class SqliteCandidates:
    """``store.candidates`` of the SQLite engine: the scoped reads of recall, and their small caches
    (held here, on the store instance, not in module globals keyed by a file)."""

    def __init__(self, store: SqliteStore) -> None:
        self.store = store
        self._stamped: dict[tuple[Any, ...], tuple[Any, float]] = {}
        self._lock = threading.Lock()

    @property
    def _db(self) -> sqlite3.Connection:
        return self.store.conn

    def meta(self, scope: Scope, ids: list[str], text_chars: int = 0) -> dict[str, dict[str, Any]]:
        return meta(self._db, scope, ids, text_chars)

    def full_rows(self, scope: Scope, ids: list[str]) -> dict[str, dict[str, Any]]:
        return full_rows(self._db, scope, ids)

    def neighbours(self, scope: Scope, rows: list[dict[str, Any]], window: int = 1) -> dict[str, list[str]]:
        return neighbours(self._db, scope, rows, window)

    def recent(self, scope: Scope, limit: int, *, since: float | None = None,
               until: float | None = None) -> list[tuple[str, float]]:
        return recent(self._db, scope, limit, since=since, until=until)

    def by_error(self, scope: Scope, sigs: list[str], limit: int) -> list[tuple[str, float]]:
        return by_error(self._db, scope, sigs, limit)

    def fixes_after(self, scope: Scope, row: dict[str, Any], limit: int = 2) -> list[dict[str, Any]]:
        return fixes_after(self._db, scope, row, limit)

    def session_turns(self, scope: Scope, owner: str, agent: str, session_id: str,
                      limit: int = 200) -> list[dict[str, Any]]:
        return session_turns(self._db, scope, owner, agent, session_id, limit)

    def session_turns_of_any_agent(self, scope: Scope, session_id: str, limit: int = 500,
                                   newest: bool = False) -> list[dict[str, Any]]:
        """Whole turns of a session id (any agent in scope), oldest first (``newest``: the last
        ``limit`` turns, still oldest first)."""
        from .turns import list_turns

        rows = [dict(r) for r in list_turns(self._db, scope, session_id=session_id, limit=limit,
                                            order="desc" if newest else "asc")]
        return rows[::-1] if newest else rows

    def until_write(self, key: tuple[Any, ...], compute: Callable[[], Any], ttl: float = 60.0,
                    *, any_write: bool = True) -> Any:
        """``compute()`` cached per ``key`` and newest turn rowid: new turns recompute at once,
        deletions (which keep the newest rowid) within ``ttl`` seconds. ``any_write=False``: new
        turns too wait for ``ttl`` (for statistics a few new turns barely move)."""
        top = int(self._db.execute("SELECT coalesce(max(rowid), 0) FROM turns").fetchone()[0]) if any_write else 0
        k = (*key, top)
        now = monotonic()
        got = self._stamped.get(k)
        if got is not None and now - got[1] < ttl:
            return got[0]
        value = compute()
        with self._lock:
            if len(self._stamped) > 512:
                self._stamped.clear()
            self._stamped[k] = (value, now)
        return value

    def count_upto(self, scope: Scope, limit: int) -> int:
        return count_upto(self._db, scope, limit)

    def scope_at_most(self, scope: Scope, limit: int) -> bool:
        """True when the scope holds at most ``limit`` turns (cached until the next write)."""
        return bool(self.until_write(("at_most", scope, limit),
                                     lambda: count_upto(self._db, scope, limit + 1) <= limit))

    def scope_size(self, scope: Scope) -> tuple[int, int, float]:
        return scope_size(self._db, scope)

    def texts(self, scope: Scope) -> list[Row]:
        return list(iter_texts(self._db, scope))

    @property
    def can_snapshot(self) -> bool:
        """A background thread can read on a connection of its own (a database file)."""
        return self.store.path.exists()

    def texts_snapshot(self, scope: Scope) -> tuple[tuple[int, int, float], list[Row]]:
        """(the scope's size stamp, its texts), read in one snapshot on a read-only connection of
        its own (for a rebuild on a background thread)."""
        conn = connect(self.store.path, readonly=True)
        try:
            conn.execute("BEGIN")  # one snapshot for the stamp and the rows
            return scope_size(conn, scope), list(iter_texts(conn, scope))
        finally:
            conn.close()

    def touch_many(self, shown: list[tuple[Scope, list[str], float]], *, wait: bool = True) -> None:
        """Count accesses ((scope, turn ids, when) each) in one transaction; ``wait=False`` gives up at
        once (StoreError) when another writer holds the lock."""
        with self.store.transaction(wait=wait) as db:
            for scope, ids, now in shown:
                touch(db, scope, ids, now)

    def forget(self) -> None:
        with self._lock:
            self._stamped.clear()

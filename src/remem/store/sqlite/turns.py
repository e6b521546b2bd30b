"""Turn repository (L1 memories). Every read takes a Scope; writes go through ``write_turn``."""

from __future__ import annotations

import json
import sqlite3
import time
from typing import TYPE_CHECKING, Any

from ...scope import Scope
from ..rows import TurnRow
from .db import guarded
from .entities import put_mentions_many

if TYPE_CHECKING:
    from . import SqliteStore

COLUMNS = ("id, source_key, owner, agent, project, session_id, source_name, kind, request, reply, "
           "actions, actions_json, status, started_at, ended_at, created_at, updated_at, model, size, "
           "content_hash, request_hash, summary, tags, error_sigs, importance, access_count, "
           "last_access, archived, deleted, embed_state")


def _find_existing(db: sqlite3.Connection, row: TurnRow) -> sqlite3.Row | None:
    got = db.execute("SELECT rowid, id, content_hash, source_key, tags FROM turns WHERE owner = ? AND source_key = ?",
                     (row.owner, row.source_key)).fetchone()
    if got:
        return got
    if row.message_ids and row.source_name:
        # a message already belongs to a turn of this owner: same turn, re-assembled
        ids = row.message_ids[:16]
        hit = db.execute(
            "SELECT t.rowid, t.id, t.content_hash, t.source_key, t.tags FROM messages m JOIN turns t ON t.id = m.turn_id "
            f"WHERE m.source = ? AND m.source_msg_id IN ({','.join('?' * len(ids))}) AND t.owner = ? LIMIT 1",
            (row.source_name, *ids, row.owner)).fetchone()
        if hit:
            return hit
    if row.session_id and row.request_hash:
        # a live capture and an import of the same prompt in the same session are one turn
        for hit in db.execute(
            "SELECT rowid, id, content_hash, source_key, tags FROM turns WHERE owner = ? AND agent = ? "
            "AND session_id = ? AND request_hash = ? ORDER BY rowid DESC LIMIT 4",
            (row.owner, row.agent, row.session_id, row.request_hash),
        ):
            if hit["source_key"].startswith("live:") != row.live:
                return hit
    return None


def is_open(tags: str) -> bool:
    """A live capture of a turn still under way (its hooks tag it ``open`` until the turn ends)."""
    return '"open"' in (tags or "")


def write_turn(db: sqlite3.Connection, row: TurnRow, now: float | None = None) -> tuple[str, str]:
    """Insert or update one turn inside the caller's transaction. Returns (id, status)."""
    now = now or time.time()
    existing = _find_existing(db, row)
    if existing is not None:
        tid = existing["id"]
        if existing["content_hash"] == row.content_hash:
            _link_messages(db, row, tid)
            return tid, "duplicate"
        if row.live and not existing["source_key"].startswith("live:"):
            # the imported transcript is richer than a live capture: keep it
            return tid, "duplicate"
        if row.live and is_open(row.tags) and not is_open(existing["tags"]):
            # a turn's opening capture arriving after its end (a capture that waited out a busy
            # database in the daemon's queue) never turns the finished turn back into an open one
            return tid, "duplicate"
        db.execute(
            "UPDATE turns SET request=?, reply=?, actions=?, actions_json=?, status=?, started_at=?, "
            "ended_at=?, model=?, size=?, content_hash=?, request_hash=?, summary=?, tags=?, error_sigs=?, "
            "cjk=?, project=?, updated_at=?, embed_state='pending', source_key=? WHERE id=?",
            (row.request, row.reply, row.actions, row.actions_json, row.status, row.started_at,
             row.ended_at, row.model, row.size, row.content_hash, row.request_hash, row.summary,
             row.tags, row.error_sigs, row.cjk, row.project, now,
             existing["source_key"] if row.live else row.source_key, tid))
        _link_messages(db, row, tid)
        return tid, "updated"
    db.execute(
        "INSERT INTO turns (id, source_key, owner, agent, project, session_id, source_name, kind, request, "
        "reply, actions, actions_json, status, started_at, ended_at, created_at, updated_at, model, size, "
        "content_hash, request_hash, summary, tags, error_sigs, importance, cjk) "
        "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (row.id, row.source_key, row.owner, row.agent, row.project, row.session_id, row.source_name,
         row.kind, row.request, row.reply, row.actions, row.actions_json, row.status, row.started_at,
         row.ended_at, now, now, row.model, row.size, row.content_hash, row.request_hash, row.summary,
         row.tags, row.error_sigs, row.importance, row.cjk))
    if row.session_id:
        db.execute(
            "INSERT INTO sessions (id, owner, agent, project, title, started_at, updated_at, turn_count) "
            "VALUES (?,?,?,?,?,?,?,1) ON CONFLICT(id) DO UPDATE SET turn_count = sessions.turn_count + 1, "
            "updated_at = max(coalesce(sessions.updated_at, 0), excluded.updated_at)",
            (session_key(row.owner, row.agent, row.session_id), row.owner, row.agent, row.project,
             row.request[:80], row.started_at or now, row.ended_at or now))
    _link_messages(db, row, row.id)
    return row.id, "added"


def session_key(owner: str, agent: str, session_id: str) -> str:
    return f"{owner}/{agent}/{session_id}"


def _link_messages(db: sqlite3.Connection, row: TurnRow, tid: str) -> None:
    if not row.message_ids or not row.source_name:
        return
    db.executemany(
        "INSERT INTO messages (source, source_msg_id, owner, session_id, turn_id) VALUES (?,?,?,?,?) "
        "ON CONFLICT(source, source_msg_id) DO UPDATE SET turn_id = excluded.turn_id",
        [(row.source_name, mid, row.owner, row.session_id, tid) for mid in row.message_ids])


def row_to_dict(r: sqlite3.Row) -> dict[str, Any]:
    d = dict(r)
    for key in ("tags", "error_sigs"):
        if key in d:
            d[key] = json.loads(d[key] or "[]")
    if "actions_json" in d:
        d["actions"] = json.loads(d.pop("actions_json") or "[]")
    d.pop("cjk", None)
    return d


def get(db: sqlite3.Connection, scope: Scope, turn_id: str) -> dict[str, Any] | None:
    where, params = scope.sql(by_key=True)
    r = db.execute(f"SELECT {COLUMNS} FROM turns WHERE id = ? AND {where}", [turn_id, *params]).fetchone()
    return row_to_dict(r) if r else None


def get_many(db: sqlite3.Connection, scope: Scope, ids: list[str]) -> dict[str, dict[str, Any]]:
    if not ids:
        return {}
    where, params = scope.sql(by_key=True)
    marks = ",".join("?" * len(ids))
    rows = db.execute(f"SELECT {COLUMNS} FROM turns WHERE id IN ({marks}) AND {where}", [*ids, *params])
    return {r["id"]: row_to_dict(r) for r in rows}


def list_turns(db: sqlite3.Connection, scope: Scope, *, session_id: str | None = None,
               since: float | None = None, until: float | None = None, kind: str | None = None,
               limit: int = 50, offset: int = 0, order: str = "desc") -> list[dict[str, Any]]:
    where, params = scope.sql()
    clauses = [where, "deleted = 0"]
    if session_id:
        clauses.append("session_id = ?")
        params.append(session_id)
    if since is not None:
        clauses.append("coalesce(ended_at, created_at) >= ?")
        params.append(since)  # type: ignore[arg-type]
    if until is not None:
        clauses.append("coalesce(ended_at, created_at) < ?")
        params.append(until)  # type: ignore[arg-type]
    if kind:
        clauses.append("kind = ?")
        params.append(kind)
    direction = "ASC" if order == "asc" else "DESC"
    sql = (f"SELECT {COLUMNS} FROM turns WHERE {' AND '.join(clauses)} "
           f"ORDER BY coalesce(started_at, created_at) {direction}, rowid {direction} LIMIT ? OFFSET ?")
    return [row_to_dict(r) for r in db.execute(sql, [*params, limit, offset])]


def changed(db: sqlite3.Connection, scope: Scope, *, after: tuple[float, str] = (0.0, ""),
            limit: int = 200) -> list[dict[str, Any]]:
    """The scope's turns written or changed after ``after`` (updated_at, id), oldest change first:
    a team sync's page. Ordered by (updated_at, id) so a page boundary inside one timestamp loses
    nothing and a cursor is two values."""
    where, params = scope.sql()
    return [row_to_dict(r) for r in db.execute(
        f"SELECT {COLUMNS} FROM turns WHERE {where} AND deleted = 0 AND (updated_at, id) > (?, ?) "
        f"ORDER BY updated_at, id LIMIT ?", [*params, after[0], after[1], limit])]


def count_changed(db: sqlite3.Connection, scope: Scope, *, after: tuple[float, str] = (0.0, "")) -> int:
    """How many turns ``changed`` would page through after ``after`` (what waits to go up)."""
    where, params = scope.sql()
    return int(db.execute(
        f"SELECT count(*) FROM turns WHERE {where} AND deleted = 0 AND (updated_at, id) > (?, ?)",
        [*params, after[0], after[1]]).fetchone()[0])


def touch(db: sqlite3.Connection, scope: Scope, ids: list[str], now: float | None = None) -> None:
    if not ids:
        return
    where, params = scope.sql()
    marks = ",".join("?" * len(ids))
    db.execute(f"UPDATE turns SET access_count = access_count + 1, last_access = ? "
               f"WHERE id IN ({marks}) AND {where}", [now or time.time(), *ids, *params])


def delete(db: sqlite3.Connection, scope: Scope, *, ids: list[str] | None = None,
           session_id: str | None = None, source_name: str | None = None) -> list[str]:
    """Delete turns and everything derived from them (embeddings here; learned memories lose them
    by the trigger of m009)."""
    where, params = scope.sql()
    clauses = [where]
    if ids is not None:
        if not ids:
            return []
        clauses.append(f"id IN ({','.join('?' * len(ids))})")
        params.extend(ids)
    elif session_id is not None:
        clauses.append("session_id = ?")
        params.append(session_id)
    elif source_name is not None:
        clauses.append("(source_name = ? OR agent = ?)")
        params.extend([source_name, source_name])
    else:
        raise ValueError("delete needs ids, a session or a source")
    victims = [r[0] for r in db.execute(f"SELECT id FROM turns WHERE {' AND '.join(clauses)}", params)]
    for i in range(0, len(victims), 500):
        chunk = victims[i : i + 500]
        marks = ",".join("?" * len(chunk))
        db.execute(f"DELETE FROM embeddings WHERE row_kind = 'turn' AND row_id IN ({marks})", chunk)
        db.execute(f"DELETE FROM turns WHERE id IN ({marks})", chunk)
    db.execute("DELETE FROM sessions WHERE id NOT IN (SELECT owner || '/' || agent || '/' || session_id "
               "FROM turns WHERE session_id != '')")
    return victims


def counts(db: sqlite3.Connection, scope: Scope) -> dict[str, Any]:
    where, params = scope.sql()
    total = db.execute(f"SELECT count(*) FROM turns WHERE {where} AND deleted = 0", params).fetchone()[0]
    by_agent = {r[0]: r[1] for r in db.execute(
        f"SELECT agent, count(*) FROM turns WHERE {where} AND deleted = 0 GROUP BY agent ORDER BY 2 DESC",
        params)}
    by_status = {r[0]: r[1] for r in db.execute(
        f"SELECT status, count(*) FROM turns WHERE {where} AND deleted = 0 GROUP BY status", params)}
    by_embed = {r[0]: r[1] for r in db.execute(
        f"SELECT embed_state, count(*) FROM turns WHERE {where} AND deleted = 0 GROUP BY embed_state", params)}
    projects = db.execute(f"SELECT count(DISTINCT project) FROM turns WHERE {where}", params).fetchone()[0]
    sessions = db.execute(f"SELECT count(DISTINCT session_id) FROM turns WHERE {where} AND session_id != ''",
                          params).fetchone()[0]
    return {"turns": total, "by_agent": by_agent, "by_status": by_status, "embeddings": by_embed,
            "projects": projects, "sessions": sessions}


def index_trigram(db: sqlite3.Connection, *, rowids: list[int] | None = None, limit: int = 2000) -> int:
    """Add turns not yet in the trigram index (caller holds a write transaction)."""
    if rowids is not None:
        if not rowids:
            return 0
        marks = ",".join("?" * len(rowids))
        todo = [r[0] for r in db.execute(f"SELECT rowid FROM turns WHERE trgm = 0 AND rowid IN ({marks})", rowids)]
    else:
        todo = [r[0] for r in db.execute("SELECT rowid FROM turns WHERE trgm = 0 LIMIT ?", (limit,))]
    for i in range(0, len(todo), 500):
        chunk = todo[i : i + 500]
        marks = ",".join("?" * len(chunk))
        db.execute(f"INSERT INTO turns_trgm(rowid, request, actions) SELECT rowid, request, actions FROM turns "
                   f"WHERE rowid IN ({marks})", chunk)
        db.execute(f"UPDATE turns SET trgm = 1 WHERE rowid IN ({marks})", chunk)
    return len(todo)


def trigram_backlog(db: sqlite3.Connection) -> int:
    return int(db.execute("SELECT count(*) FROM turns WHERE trgm = 0").fetchone()[0])


CLEAR_TABLES = ("learned_events", "learned_evidence", "learned", "embeddings", "entity_mentions", "entity_edges",
                "entities", "messages", "turns", "learned_cursor", "sessions", "checkpoints", "sources", "jobs",
                "packets")


def clear_all(db: sqlite3.Connection) -> dict[str, int]:
    """Delete every memory, session, source watermark and job (caller holds a transaction).

    Not scoped on purpose: this is the "clear all local data" action behind a two-step confirmation.
    """
    out = {}
    for table in CLEAR_TABLES:
        exists = db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (table,)).fetchone()
        if exists:
            out[table] = db.execute(f"DELETE FROM {table}").rowcount
    return out


def list_sessions(db: sqlite3.Connection, scope: Scope, *, limit: int = 100,
                  offset: int = 0) -> list[dict[str, Any]]:
    """Sessions in scope, most recently updated first, with their opening request as title."""
    where, params = scope.sql()
    rows = db.execute(
        f"SELECT id, owner, agent, project, title, started_at, updated_at, turn_count FROM sessions "
        f"WHERE {where} ORDER BY updated_at DESC LIMIT ? OFFSET ?", [*params, limit, offset])
    out = []
    for r in rows:
        d = dict(r)
        d["session_id"] = d.pop("id").split("/", 2)[-1]
        out.append(d)
    return out


# -- the area object: ``store.turns`` ---------------------------------------------------------------

_EMBED_COLUMNS = "id, owner, agent, project, request, reply, summary, actions, actions_json, content_hash"


@guarded
class SqliteTurns:
    """``store.turns``: the L1 rows, their sessions, and the backlogs that follow a write (the text
    index, the embeddings). Writes run inside the caller's ``store.transaction()``."""

    def __init__(self, store: SqliteStore) -> None:
        self._store = store

    @property
    def _db(self) -> sqlite3.Connection:
        return self._store.conn

    # writes
    def write(self, row: TurnRow, now: float | None = None) -> tuple[str, str]:
        """Insert or update one prepared turn; (id, "added" | "updated" | "duplicate")."""
        return write_turn(self._db, row, now)

    def restore(self, turn_id: str, *, created_at: float | None, updated_at: float | None, access_count: int,
                last_access: float | None, archived: bool) -> None:
        """Give an imported row the stored times and counters of the record it came from."""
        self._db.execute("UPDATE turns SET created_at = coalesce(?, created_at), updated_at = coalesce(?, "
                         "updated_at), access_count = ?, last_access = ?, archived = ? WHERE id = ?",
                         (created_at, updated_at, access_count, last_access, 1 if archived else 0, turn_id))

    def load(self, rows: list[dict[str, Any]]) -> int:
        """Insert stored rows as given, past the write pipeline: benchmarks that build a large
        store fast. Every row has the same keys (turn columns, with ``cjk``, ``embed_state``, ``trgm``)."""
        if not rows:
            return 0
        cols = list(rows[0])
        known = {c.strip() for c in COLUMNS.split(",")} | {"cjk", "trgm"}
        if not set(cols) <= known:
            raise ValueError(f"not turn fields: {sorted(set(cols) - known)}")
        self._db.executemany(f"INSERT INTO turns ({', '.join(cols)}) VALUES ({','.join('?' * len(cols))})",
                             [tuple(r[c] for c in cols) for r in rows])
        return len(rows)

    def put_entities(self, items: list[tuple[str, str, list[tuple[str, str]], bool]]) -> int:
        """Entity mentions of written turns: (owner, turn id, [(kind, name)], replace) each."""
        return put_mentions_many(self._db, items)

    def delete(self, scope: Scope, *, ids: list[str] | None = None, session_id: str | None = None,
               source: str | None = None) -> list[str]:
        return delete(self._db, scope, ids=ids, session_id=session_id, source_name=source)

    def clear(self) -> dict[str, int]:
        """Every turn, session, source state and job of the database (not scoped: "clear all")."""
        return clear_all(self._db)

    def clear_preview(self) -> dict[str, int]:
        """What ``clear`` would delete: turns, learned memories, sessions, sources."""
        return {t: int(self._db.execute(f"SELECT count(*) FROM {t}").fetchone()[0])
                for t in ("turns", "learned", "sessions", "sources")}

    # reads
    def get(self, scope: Scope, turn_id: str) -> dict[str, Any] | None:
        return get(self._db, scope, turn_id)

    def get_many(self, scope: Scope, ids: list[str]) -> dict[str, dict[str, Any]]:
        return get_many(self._db, scope, ids)

    def page(self, scope: Scope, *, session_id: str | None = None, since: float | None = None,
             until: float | None = None, kind: str | None = None, limit: int = 50, offset: int = 0,
             order: str = "desc") -> list[dict[str, Any]]:
        return list_turns(self._db, scope, session_id=session_id, since=since, until=until, kind=kind,
                          limit=limit, offset=offset, order=order)

    def changed(self, scope: Scope, *, after: tuple[float, str] = (0.0, ""),
                limit: int = 200) -> list[dict[str, Any]]:
        return changed(self._db, scope, after=after, limit=limit)

    def count_changed(self, scope: Scope, *, after: tuple[float, str] = (0.0, "")) -> int:
        return count_changed(self._db, scope, after=after)

    def sessions(self, scope: Scope, *, limit: int = 100, offset: int = 0) -> list[dict[str, Any]]:
        return list_sessions(self._db, scope, limit=limit, offset=offset)

    def counts(self, scope: Scope) -> dict[str, Any]:
        """Turns by agent, status and embedding state, projects, sessions."""
        return counts(self._db, scope)

    # the text index backlog (turns written in bulk wait for the trigram index)
    def text_backlog(self) -> int:
        return trigram_backlog(self._db)

    def unindexed(self, *, ids: list[str] | None = None, limit: int = 2000) -> list[dict[str, Any]]:
        """Turns not yet in the trigram index (of ``ids``, or the first ``limit``), with whether
        their entities are recorded."""
        cols = ("SELECT id, owner, request, reply, actions, EXISTS (SELECT 1 FROM entity_mentions m "
                "WHERE m.turn_id = turns.id) AS has_entities FROM turns WHERE trgm = 0")
        if ids is not None:
            if not ids:
                return []
            rows = self._db.execute(f"{cols} AND id IN ({','.join('?' * len(ids))})", ids).fetchall()
        else:
            rows = self._db.execute(f"{cols} LIMIT ?", (limit,)).fetchall()
        return [dict(r) for r in rows]

    def index_text(self, ids: list[str]) -> int:
        """Add these turns to the trigram index (those not in it yet). Returns how many."""
        if not ids:
            return 0
        rowids: list[int] = []
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            rowids += [r[0] for r in self._db.execute(
                f"SELECT rowid FROM turns WHERE id IN ({','.join('?' * len(chunk))})", chunk)]
        return index_trigram(self._db, rowids=rowids)

    # the embedding backlog (every new or changed turn waits for its vectors)
    def embed_backlog(self) -> int:
        """How many turns wait for vectors."""
        return int(self._db.execute("SELECT count(*) FROM turns WHERE embed_state = 'pending'").fetchone()[0])

    def embed_batch(self, limit: int) -> list[dict[str, Any]]:
        """The next turns to embed, newest first (recent work gets its vectors soonest)."""
        return [dict(r) for r in self._db.execute(
            f"SELECT {_EMBED_COLUMNS} FROM turns WHERE embed_state = 'pending' "
            f"ORDER BY started_at DESC, rowid DESC LIMIT ?", (limit,))]

    def mark_embedded(self, done: list[tuple[str, str]]) -> None:
        """(turn id, content hash) pairs whose vectors are stored; a turn changed meanwhile stays pending."""
        self._db.executemany("UPDATE turns SET embed_state='done' WHERE id=? AND content_hash=?", done)

    def mark_embed_failed(self, ids: list[str]) -> None:
        self._db.executemany("UPDATE turns SET embed_state='failed' WHERE id=?", [(i,) for i in ids])

    def reembed_for_model(self, model_id: str) -> int:
        """Mark turns without a vector of ``model_id`` pending (after a model change)."""
        return int(self._db.execute(
            "UPDATE turns SET embed_state='pending' WHERE embed_state != 'pending' AND id NOT IN "
            "(SELECT row_id FROM embeddings WHERE row_kind='turn' AND field='summary' AND model_id=?)",
            (model_id,)).rowcount)

    def reembed_all(self) -> int:
        """Drop every vector and mark every turn pending (benchmarks that time a full re-embed)."""
        self._db.execute("DELETE FROM embeddings")
        return int(self._db.execute("UPDATE turns SET embed_state = 'pending'").rowcount)

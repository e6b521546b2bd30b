"""The areas of the PostgreSQL engine: SQLite's where their SQL is shared (``db.PgConnection``
runs it), with what differs overridden here: the word index follows every turn write, jobs are
claimed with ``FOR UPDATE SKIP LOCKED`` (several daemons may share one database), engine facts
(integrity, size, copies) are PostgreSQL's, and "clear everything" checks tables in the catalog."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ...scope import Scope
from ..errors import StoreError
from ..rows import TurnRow
from ..sqlite.audit import SqliteAudit
from ..sqlite.candidates import SqliteCandidates, iter_texts, scope_size
from ..sqlite.entities import SqliteEntities
from ..sqlite.jobs import SqliteJobs
from ..sqlite.learned import SqliteLearned
from ..sqlite.maintenance import SqliteMaintenance
from ..sqlite.packets import SqlitePackets
from ..sqlite.sources import SqliteSources
from ..sqlite.tombstones import SqliteTombstones
from ..sqlite.turns import CLEAR_TABLES, COLUMNS, SqliteTurns, write_turn
from ..sqlite.users import SqliteUsers

if TYPE_CHECKING:
    from . import PgStore


class PgSources(SqliteSources):
    pass


class PgLearned(SqliteLearned):
    pass


class PgAudit(SqliteAudit):
    pass


class PgTombstones(SqliteTombstones):
    pass


class PgEntities(SqliteEntities):
    pass


class PgPackets(SqlitePackets):
    pass


class PgUsers(SqliteUsers):
    pass


class PgTurns(SqliteTurns):
    """Turns; every write also (re)writes the turn's rows of the word index (``store.text``)."""

    _store: PgStore  # type: ignore[assignment]  # SQLite's areas are typed to their store; PgStore has their surface

    def write(self, row: TurnRow, now: float | None = None) -> tuple[str, str]:
        """The turn, and its word rows once the write batch commits (one pass for the batch)."""
        tid, status = write_turn(self._db, row, now)
        if status != "duplicate":
            db = self._store.conn
            if status == "updated":  # a new row starts without word rows (tindexed = 0)
                db.execute("UPDATE turns SET tindexed = 0 WHERE id = ?", (tid,))
            db.before_commit(self._store.text.index_pending)
        return tid, status

    def load(self, rows: list[dict[str, Any]]) -> int:
        if not rows:
            return 0
        top = int(self._db.execute("SELECT coalesce(max(rowid), 0) FROM turns").fetchone()[0])
        n = super().load(rows)
        new = [int(r[0]) for r in self._db.execute("SELECT rowid FROM turns WHERE rowid > ? AND tindexed = 0",
                                                  (top,))]
        self._store.text.index_rows(new)
        return n

    def clear(self) -> dict[str, int]:
        out = {}
        for table in CLEAR_TABLES:
            if self._db.execute("SELECT to_regclass(?) IS NOT NULL", (table,)).fetchone()[0]:
                out[table] = self._db.execute(f"DELETE FROM {table}").rowcount
        self._store.text.forget()
        return out

    def unindexed(self, *, ids: list[str] | None = None, limit: int = 2000) -> list[dict[str, Any]]:
        return [{**r, "has_entities": bool(r["has_entities"])} for r in super().unindexed(ids=ids, limit=limit)]

    def index_text(self, ids: list[str]) -> int:
        """The substring index (pg_trgm) follows every write by itself: mark the turns done, and
        write the word rows of any turn still without them."""
        if not ids:
            return 0
        n = 0
        for i in range(0, len(ids), 500):
            chunk = ids[i: i + 500]
            marks = ",".join("?" * len(chunk))
            todo = [int(r[0]) for r in self._db.execute(
                f"SELECT rowid FROM turns WHERE id IN ({marks}) AND tindexed = 0", chunk)]
            self._store.text.index_rows(todo)
            n += self._db.execute(f"UPDATE turns SET trgm = 1 WHERE id IN ({marks}) AND trgm = 0", chunk).rowcount
        return n


class PgJobs(SqliteJobs):
    def claim(self, kinds: tuple[str, ...] | None = None) -> dict[str, Any] | None:
        """Take the oldest runnable job; a job another daemon is taking is skipped, not waited for."""
        now = time.time()
        sql = "SELECT id FROM jobs WHERE status = 'queued' AND run_after <= ?"
        params: list[Any] = [now]
        if kinds:
            sql += f" AND kind IN ({','.join('?' * len(kinds))})"
            params.extend(kinds)
        sql += " ORDER BY run_after, id LIMIT 1 FOR UPDATE SKIP LOCKED"
        row = self._db.execute(
            f"UPDATE jobs SET status = 'running', attempts = attempts + 1, updated_at = ? WHERE id = ({sql}) "
            "RETURNING *", [now, *params]).fetchone()
        if not row:
            return None
        d = dict(row)
        d["payload"] = json.loads(d["payload"] or "{}")
        return d


class PgCandidates(SqliteCandidates):
    @property
    def can_snapshot(self) -> bool:
        return True

    def neighbours(self, scope: Scope, rows: list[dict[str, Any]], window: int = 1) -> dict[str, list[str]]:
        """One statement for all rows (LATERAL: the same order and ties as
        ``store/sqlite/candidates.neighbours``); a search's round trips were most of its time."""
        todo = [r for r in rows if r.get("session_id")]
        if not todo:
            return {}
        where, params = scope.sql("t")
        vals = ",".join(["(?, ?, ?, ?, ?::float8, ?::int)"] * len(todo))
        args: list[Any] = []
        for i, r in enumerate(todo):
            args += [r["id"], r["session_id"], r["owner"], r["agent"], float(r.get("started_at") or 0.0), i]
        base = (f"SELECT t.id, coalesce(t.started_at, 0) AS k FROM turns t WHERE t.session_id = r.sid "
                f"AND t.owner = r.own AND t.agent = r.ag AND {where} AND t.deleted = 0 AND t.id != r.id ")
        sql = (f"WITH r(id, sid, own, ag, ts, n) AS (VALUES {vals}) "
               f"SELECT r.n, 0, b.id, b.k FROM r CROSS JOIN LATERAL ({base}"
               f"AND coalesce(t.started_at, 0) <= r.ts AND NOT (coalesce(t.started_at, 0) = r.ts AND t.id > r.id) "
               f"ORDER BY coalesce(t.started_at, 0) DESC, t.id DESC LIMIT ?) b "
               f"UNION ALL SELECT r.n, 1, a.id, a.k FROM r CROSS JOIN LATERAL ({base}"
               f"AND coalesce(t.started_at, 0) >= r.ts AND NOT (coalesce(t.started_at, 0) = r.ts AND t.id < r.id) "
               f"ORDER BY coalesce(t.started_at, 0), t.id LIMIT ?) a")
        got: dict[int, tuple[list[tuple[float, str]], list[tuple[float, str]]]] = {i: ([], []) for i in range(len(todo))}
        for n, side, tid, k in self._db.execute(sql, [*args, *params, window, *params, window]).fetchall():
            got[int(n)][int(side)].append((float(k), str(tid)))
        out: dict[str, list[str]] = {}
        for i, r in enumerate(todo):
            before, after = got[i]
            out[r["id"]] = [t for _, t in sorted(before)] + [t for _, t in sorted(after)]
        return out

    def texts_snapshot(self, scope: Scope) -> tuple[tuple[int, int, float], list[Any]]:
        conn = cast("PgStore", self.store).connect(readonly=True)
        try:
            with conn.transaction():
                conn.native("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                return scope_size(conn, scope), list(iter_texts(conn, scope))  # type: ignore[arg-type]
        finally:
            conn.close()


class PgMaintenance(SqliteMaintenance):
    def quick_check(self) -> str:
        self._db.execute("SELECT 1").fetchone()
        return "ok"

    def journal_mode(self) -> str:
        return "postgresql"

    def server_facts(self) -> str:
        """The server's version and the extensions remem needs (``remem doctor``)."""
        version = self._db.execute("SHOW server_version").fetchone()[0]
        ext = dict(self._db.execute("SELECT extname, extversion FROM pg_extension "
                                    "WHERE extname IN ('vector', 'pg_trgm')").fetchall())
        hnsw = int(self._db.execute("SELECT count(*) FROM pg_class WHERE relkind = 'i' "
                                    "AND relname LIKE 'embeddings_hnsw_%'").fetchone()[0])
        return (f"PostgreSQL {version}, pgvector {ext.get('vector', 'missing')}, pg_trgm {ext.get('pg_trgm', 'missing')}, "
                f"{hnsw} HNSW index{'es' if hnsw != 1 else ''}")

    def text_index_check(self) -> tuple[bool, str]:
        """Every turn has its word rows (a turn without them is found by the other channels only)."""
        missing = int(self._db.execute("SELECT count(*) FROM turns WHERE tindexed = 0").fetchone()[0])
        return (True, "ok") if not missing else (False, f"{missing} turns have no word index rows")

    def vacuum(self) -> bool:
        if self._db.in_transaction:
            return False
        self._db.execute("VACUUM (ANALYZE)")
        return True

    def copy_to(self, dest: Path) -> Path:
        raise StoreError("a copy to a file is SQLite's (memory.sqlite); on PostgreSQL use `remem export` "
                         "(JSONL) or pg_dump")

    def table_rows(self) -> dict[str, int]:
        names = [r[0] for r in self._db.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename")]
        return {n: int(self._db.execute(f'SELECT count(*) FROM "{n}"').fetchone()[0]) for n in names}

    def size_bytes(self) -> int:
        return int(self._db.execute("SELECT pg_database_size(current_database())").fetchone()[0])


__all__ = ["COLUMNS", "PgAudit", "PgCandidates", "PgEntities", "PgJobs", "PgLearned", "PgMaintenance",
           "PgPackets", "PgSources", "PgTombstones", "PgTurns", "PgUsers"]

"""Embedding rows: one vector per (row, field, model). A search never mixes models."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ...scope import Scope
from .db import guarded

if TYPE_CHECKING:
    from . import SqliteStore

if TYPE_CHECKING:
    from . import SqliteStore


def put_many(db: sqlite3.Connection, rows: list[tuple[str, str, str, str, int, bytes, str, str, str, str]]) -> None:
    """rows: (row_kind, row_id, field, model_id, dim, vector, content_hash, owner, agent, project)."""
    now = time.time()
    db.executemany(
        "INSERT INTO embeddings (row_kind, row_id, field, model_id, dim, vector, content_hash, owner, agent, "
        "project, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(row_kind, row_id, field, model_id) "
        "DO UPDATE SET vector=excluded.vector, dim=excluded.dim, content_hash=excluded.content_hash, "
        "created_at=excluded.created_at", [(*r, now) for r in rows])


def scan(db: sqlite3.Connection, scope: Scope, model_id: str, field: str,
         row_kind: str = "turn") -> sqlite3.Cursor:
    """Vectors of one model and field inside ``scope`` (rowid order, for building an index)."""
    where, params = scope.sql()
    return db.execute(
        f"SELECT row_id, vector, owner, agent, project FROM embeddings WHERE row_kind = ? AND model_id = ? "
        f"AND field = ? AND {where}", [row_kind, model_id, field, *params])


def scan_all(db: sqlite3.Connection, model_id: str, field: str, row_kind: str = "turn",
             after: int = 0) -> sqlite3.Cursor:
    """Every owner's vectors, for an in-memory index that filters by scope at query time.

    Only the vector index may call this; it must apply the scope to every result it returns.
    """
    return db.execute(
        "SELECT rowid, row_id, vector, owner, agent, project FROM embeddings WHERE row_kind = ? "
        "AND model_id = ? AND field = ? AND rowid > ? ORDER BY rowid", [row_kind, model_id, field, after])


def models(db: sqlite3.Connection) -> dict[str, int]:
    return {r[0]: r[1] for r in db.execute("SELECT model_id, count(*) FROM embeddings GROUP BY model_id")}


def drop_other_models(db: sqlite3.Connection, keep: str) -> int:
    return db.execute("DELETE FROM embeddings WHERE model_id != ?", (keep,)).rowcount


def stats(db: sqlite3.Connection) -> dict[str, Any]:
    return {"vectors": db.execute("SELECT count(*) FROM embeddings").fetchone()[0], "models": models(db)}


@guarded
class SqliteVectors:
    """``store.vectors`` of the SQLite engine. Read side: what an in-memory vector index (recall/vectors.py)
    needs to load and follow the embeddings table; it must apply the scope to every result it returns."""

    def __init__(self, store: SqliteStore) -> None:
        self.store = store

    @property
    def _db(self) -> sqlite3.Connection:
        return self.store.conn

    def put_many(self, rows: list[tuple[str, str, str, str, int, bytes, str, str, str, str]]) -> None:
        put_many(self._db, rows)

    def has(self, model_id: str, field: str) -> bool:
        """Any vector of this model and field at all."""
        return self._db.execute("SELECT 1 FROM embeddings WHERE model_id = ? AND field = ? LIMIT 1",
                                (model_id, field)).fetchone() is not None

    def last_delete(self) -> int:
        """The sequence number of the newest deletion (0: none yet)."""
        return int(self._db.execute("SELECT coalesce(max(seq), 0) FROM embedding_deletes").fetchone()[0])

    def deleted_since(self, seq: int, model_id: str, field: str, row_kind: str = "turn") -> Iterator[str]:
        """Row ids whose vectors of this model and field were deleted after ``seq``, oldest first."""
        for (rid,) in self._db.execute(
                "SELECT row_id FROM embedding_deletes WHERE seq > ? AND model_id = ? AND field = ? "
                "AND row_kind = ? ORDER BY seq", (seq, model_id, field, row_kind)):
            yield rid

    def newest(self, model_id: str, field: str) -> float | None:
        """When the newest vector of this model and field was written (None: there is none)."""
        got = self._db.execute("SELECT max(created_at) FROM embeddings WHERE model_id = ? AND field = ?",
                               (model_id, field)).fetchone()[0]
        return None if got is None else float(got)

    def written_since(self, model_id: str, field: str, after: float, row_kind: str = "turn"
                      ) -> Iterator[tuple[str, bytes, str, str, str]]:
        """(row id, vector bytes, owner, agent, project) of every owner's vectors written after ``after``
        (one write batch shares one time, so "after the last seen" misses nothing), oldest first."""
        yield from self._db.execute(
            "SELECT row_id, vector, owner, agent, project FROM embeddings "
            "WHERE model_id = ? AND field = ? AND row_kind = ? AND created_at > ? ORDER BY created_at",
            (model_id, field, row_kind, after))

    def stats(self) -> dict[str, Any]:
        return stats(self._db)

    def models(self) -> dict[str, int]:
        """Vectors per model id."""
        return models(self._db)

    def all_of(self, model_id: str) -> Iterator[bytes]:
        """Every stored vector of a model (any owner, field or row): for offline measurements only."""
        for (v,) in self._db.execute("SELECT vector FROM embeddings WHERE model_id = ?", (model_id,)):
            yield v

    def targets(self) -> list[tuple[str, str, str, str, str, bool]]:
        """(turn id, owner, agent, project, content hash, has tool calls) of every stored turn: what a
        benchmark fills with vectors of its own (``put_done``)."""
        return [(r[0], r[1], r[2], r[3], r[4], bool(r[5])) for r in self._db.execute(
            "SELECT id, owner, agent, project, content_hash, actions != '' FROM turns")]

    def put_done(self, rows: list[tuple[str, str, str, str, int, bytes, str, str, str, str]],
                 turn_ids: list[str]) -> None:
        """Store vectors (rows as :func:`put_many` takes them) and mark ``turn_ids`` embedded, in one transaction."""
        with self.store.transaction() as db:
            put_many(db, rows)
            db.executemany("UPDATE turns SET embed_state='done' WHERE id=?", [(t,) for t in turn_ids])

"""Embedding rows: one vector per (row, field, model). A search never mixes models."""

from __future__ import annotations

import sqlite3
import time
from typing import TYPE_CHECKING, Any

from ...scope import Scope
from .db import guarded

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
class SqliteVectorWrites:
    """The write side of ``store.vectors``: stored embeddings and their counts."""

    def __init__(self, store: SqliteStore) -> None:
        self._store = store

    def put_many(self, rows: list[tuple[str, str, str, str, int, bytes, str, str, str, str]]) -> None:
        """rows: (row kind, row id, field, model id, dim, vector bytes, content hash, owner, agent, project)."""
        put_many(self._store.conn, rows)

    def stats(self) -> dict[str, Any]:
        """Stored vectors and how many per model."""
        return stats(self._store.conn)

"""``store.audit``: the trail of what was written, forgotten, lifted and cleared (no turn text)."""

from __future__ import annotations

import json
import sqlite3
import time
from typing import TYPE_CHECKING, Any

from .db import guarded

if TYPE_CHECKING:
    from . import SqliteStore


@guarded
class SqliteAudit:
    def __init__(self, store: SqliteStore) -> None:
        self._store = store

    @property
    def _db(self) -> sqlite3.Connection:
        return self._store.conn

    def record(self, action: str, *, owner: str = "", target: str = "", detail: dict[str, Any] | None = None,
               ts: float | None = None) -> None:
        """One entry (inside the caller's transaction when there is one)."""
        self._db.execute("INSERT INTO audit (ts, action, owner, target, detail) VALUES (?,?,?,?,?)",
                         (ts or time.time(), action, owner, target, json.dumps(detail or {})))

    def recent(self, limit: int = 50) -> list[dict[str, Any]]:
        """The newest entries, their detail decoded."""
        out = []
        for r in self._db.execute("SELECT ts, action, owner, target, detail FROM audit ORDER BY id DESC LIMIT ?",
                                  (limit,)):
            d = dict(r)
            d["detail"] = json.loads(d["detail"] or "{}")
            out.append(d)
        return out

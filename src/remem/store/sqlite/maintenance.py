"""``store.maintenance``: health checks, space reclaim, a consistent copy, the size on disk."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import StoreError
from .db import guarded

if TYPE_CHECKING:
    from . import SqliteStore


@guarded
class SqliteMaintenance:
    def __init__(self, store: SqliteStore) -> None:
        self._store = store

    @property
    def _db(self) -> sqlite3.Connection:
        return self._store.conn

    def quick_check(self) -> str:
        """"ok", or what the engine's quick integrity check found."""
        return str(self._db.execute("PRAGMA quick_check").fetchone()[0])

    def journal_mode(self) -> str:
        """The journal mode ("wal" is what remem runs in)."""
        return str(self._db.execute("PRAGMA journal_mode").fetchone()[0])

    def text_index_check(self) -> tuple[bool, str]:
        """Whether the word index agrees with the turns: (ok, "ok" or the error)."""
        try:
            self._db.execute("INSERT INTO turns_fts(turns_fts, rank) VALUES ('integrity-check', 1)")
            return True, "ok"
        except sqlite3.Error as e:
            return False, str(e)

    def vacuum(self) -> bool:
        """Give the space of deleted rows back to the file system; False when it could not run now
        (another connection is reading: the space is reclaimed later)."""
        try:
            self._db.execute("VACUUM")
            return True
        except sqlite3.Error:
            return False

    def copy_to(self, dest: Path) -> Path:
        """A consistent copy of the whole database at ``dest`` (which must not exist)."""
        try:
            self._db.execute("VACUUM INTO ?", (str(dest),))
        except sqlite3.Error as e:  # about the destination, not this database
            raise StoreError(f"cannot write a copy to {dest}: {e}") from None
        return dest

    def table_rows(self) -> dict[str, int]:
        """Rows per table (benchmarks and health reports)."""
        names = [r[0] for r in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                                "AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '%fts%' "
                                                "AND name NOT LIKE '%trgm%' ORDER BY name")]
        return {n: int(self._db.execute(f'SELECT count(*) FROM "{n}"').fetchone()[0]) for n in names}

    def size_bytes(self) -> int:
        """The database's bytes on disk (with its write-ahead log)."""
        total = 0
        for suffix in ("", "-wal", "-shm"):
            p = Path(str(self._store.path) + suffix)
            if p.exists():
                total += p.stat().st_size
        return total

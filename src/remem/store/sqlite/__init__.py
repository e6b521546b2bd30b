"""The SQLite engine: one file, WAL, FTS5 word / CJK / trigram indexes, vectors as BLOBs.

``SqliteStore`` is the ``store.protocols.Store`` of this engine. It keeps one connection per thread
(SQLite connections are cheap and a connection must not cross threads mid-transaction).
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

from .audit import SqliteAudit
from .candidates import SqliteCandidates
from .db import connect, explain_error, transaction
from .entities import SqliteEntities
from .jobs import SqliteJobs
from .learned import SqliteLearned
from .maintenance import SqliteMaintenance
from .migrations import migrate
from .packets import SqlitePackets
from .sources import SqliteSources
from .text import SqliteText
from .tombstones import SqliteTombstones
from .turns import SqliteTurns
from .users import SqliteUsers
from .vectors import SqliteVectors


class SqliteStore:
    engine = "sqlite"
    errors: tuple[type[Exception], ...] = (sqlite3.Error,)  # what its areas may raise besides StoreError

    def __init__(self, path: Path, *, readonly: bool = False, url: str = "") -> None:
        self.path = Path(path)
        self.url = url or f"sqlite:///{self.path}"
        self._readonly = readonly
        self._local = threading.local()
        self.sources = SqliteSources(self)
        self.learned = SqliteLearned(self)
        self.packets = SqlitePackets(self)
        self.turns = SqliteTurns(self)
        self.jobs = SqliteJobs(self)
        self.audit = SqliteAudit(self)
        self.tombstones = SqliteTombstones(self)
        self.maintenance = SqliteMaintenance(self)
        self.candidates = SqliteCandidates(self)
        self.text = SqliteText(self)
        self.vectors = SqliteVectors(self)
        self.entities = SqliteEntities(self)
        self.users = SqliteUsers(self)

    @property
    def key(self) -> str:
        return str(self.path.resolve()) if self.path.exists() else str(self.path)

    @property
    def readonly(self) -> bool:
        return self._readonly

    @property
    def conn(self) -> sqlite3.Connection:
        """This thread's connection (opened on first use). Only code inside ``store/sqlite/`` uses it."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = connect(self.path, readonly=self._readonly)
            self._local.conn = conn
        return conn

    @contextlib.contextmanager
    def transaction(self, *, wait: bool = True, immediate: bool = True) -> Iterator[sqlite3.Connection]:
        """One write transaction; an engine error inside it rolls back and comes out as StoreError."""
        try:
            with transaction(self.conn, wait=wait, immediate=immediate) as c:
                yield c
        except sqlite3.Error as e:
            raise explain_error(e, self.path) from None

    def migrate(self) -> list[str]:
        """remem's migrations, then those of the memory layers plugins registered (``LayerSpec.migrations
        ["sqlite"]``, each recorded once as ``"<layer>:<function>"``)."""
        from ... import plugins

        extra = [(f"{name}:{fn.__name__}", fn) for name, layer in plugins.layers().items()
                 for fn in (layer.migrations or {}).get(self.engine, ())] if plugins.third_party() else []
        return migrate(self.conn, extra)

    def close(self) -> None:
        # a SQLite connection belongs to the thread that opened it: the others' close when their threads
        # release them (or with the process)
        self.release()

    def release(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None


__all__ = ["SqliteStore"]

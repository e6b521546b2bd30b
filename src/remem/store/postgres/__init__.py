"""The PostgreSQL engine (``database.url = postgresql://…``): the team backend.

``PgStore`` is the ``store.protocols.Store`` of this engine. Its areas are those of ``store/sqlite/``
where the SQL is the same (``db.PgConnection`` runs that SQL here) and their own where it is not
(``areas.py``: identity columns, ``FOR UPDATE SKIP LOCKED`` jobs, engine facts; ``text.py``: the
word index). One connection per thread, like SQLite's; migrations in ``migrations.py``.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from ..errors import StoreError
from .db import PgConnection
from .vectors import PgVectors


class PgStore:
    engine = "postgresql"

    def __init__(self, url: str, *, readonly: bool = False, safe_url: str = "") -> None:
        try:
            import psycopg  # noqa: F401
        except ImportError:
            raise StoreError("database.url is postgresql://… but psycopg is not installed: "
                             "pip install 'remem[postgres]'") from None
        import psycopg as _pg

        from . import areas
        from .text import PgText

        self.errors: tuple[type[Exception], ...] = (_pg.Error,)
        self._dsn = url
        self.url = safe_url or url
        self.path = None
        self._readonly = readonly
        self._local = threading.local()
        self._all: weakref.WeakSet[PgConnection] = weakref.WeakSet()
        self._all_lock = threading.Lock()
        me: Any = self  # SQLite's area classes, typed to SqliteStore, run on this store (same surface)
        self.sources = areas.PgSources(me)
        self.learned = areas.PgLearned(me)
        self.packets = areas.PgPackets(me)
        self.turns = areas.PgTurns(me)
        self.jobs = areas.PgJobs(me)
        self.audit = areas.PgAudit(me)
        self.tombstones = areas.PgTombstones(me)
        self.maintenance = areas.PgMaintenance(me)
        self.candidates = areas.PgCandidates(me)
        self.text = PgText(self)
        self.vectors = PgVectors(me)
        self.entities = areas.PgEntities(me)
        self.users = areas.PgUsers(me)

    @property
    def key(self) -> str:
        p = urlsplit(self._dsn)
        return f"postgresql://{p.hostname or ''}:{p.port or 5432}{p.path}" + (f"?{p.query}" if p.query else "")

    @property
    def readonly(self) -> bool:
        return self._readonly

    def connect(self, *, readonly: bool | None = None) -> PgConnection:
        """A new connection of its own (a background reader's snapshot)."""
        conn = PgConnection(self._dsn, readonly=self._readonly if readonly is None else readonly, where=self.url)
        with self._all_lock:
            self._all.add(conn)
        return conn

    @property
    def conn(self) -> PgConnection:
        """This thread's connection (opened on first use). Only code inside ``store/`` uses it."""
        conn = getattr(self._local, "conn", None)
        if conn is None or conn.closed:
            conn = self.connect()
            self._local.conn = conn
        return conn

    @contextlib.contextmanager
    def transaction(self, *, wait: bool = True, immediate: bool = True) -> Iterator[Any]:
        with self.conn.transaction(wait=wait) as c:
            yield c

    def migrate(self) -> list[str]:
        from ... import plugins
        from .migrations import migrate

        extra = [(f"{name}:{fn.__name__}", fn) for name, layer in plugins.layers().items()
                 for fn in (layer.migrations or {}).get(self.engine, ())] if plugins.third_party() else []
        return migrate(self.conn, extra)

    def release(self) -> None:
        conn = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None:
            with self._all_lock:
                self._all.discard(conn)
            conn.close()

    def close(self) -> None:
        """Close every connection this store opened (any thread's)."""
        with self._all_lock:
            conns = list(self._all)
        for c in conns:
            c.close()
        self._local.conn = None


__all__ = ["PgStore"]

"""Storage behind one boundary: protocols (``protocols.py``) and one package per engine.

``open_store(url, home)`` picks the engine from the database URL (``database.url``): ``sqlite:///…``
(the default) opens ``store/sqlite/``; ``postgresql://…`` opens ``store/postgres/`` (the team backend).
SQL, ``sqlite3`` and FTS5 syntax live only below this package (tests/test_architecture.py checks it);
every read takes a Scope.
"""

from __future__ import annotations

from pathlib import Path

from .errors import ENGINE_ERRORS, StoreError
from .protocols import Store
from .url import DatabaseURL, parse


def open_store(url: str | DatabaseURL, home: Path, *, readonly: bool = False) -> Store:
    """The store for ``url`` (a ``DatabaseURL`` or its text, relative paths under ``home``)."""
    u = url if isinstance(url, DatabaseURL) else parse(url, home)
    if u.engine == "sqlite":
        from .sqlite import SqliteStore

        assert u.path is not None
        return SqliteStore(u.path, readonly=readonly, url=u.safe)
    from .postgres import PgStore

    return PgStore(u.url, readonly=readonly, safe_url=u.safe)


__all__ = ["ENGINE_ERRORS", "DatabaseURL", "Store", "StoreError", "open_store", "parse"]

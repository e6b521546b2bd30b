"""What the layers above ask of storage, engine by engine (``store/sqlite/``, later ``store/postgres/``).

Each area is a narrow protocol; a ``Store`` bundles them and owns the connection and transactions.
Nothing above ``store/`` writes SQL or touches an engine's types: it calls these methods. Every read
takes a ``Scope`` (owner always; agent and project when set).

Areas (one attribute of ``Store`` each, filled in as the code moves behind them):

- ``turns``       turns and sessions: write, get, list, counts, clear (the L1 rows)
- ``candidates``  recall candidates: rows by id for ranking, recency, access counts
- ``text``        the text index: word / CJK / trigram search, bm25 statistics, deferred trigram rows
- ``vectors``     stored embeddings: put, get, backlog, stats
- ``entities``    entity rows of turns and lookups by entity
- ``sources``     per-source state: watermarks, checkpoints, sync history
- ``jobs``        the background job queue
- ``audit``       the audit trail of user actions (forget, clear, import)
- ``tombstones``  what the user forgot, checked on every write
- ``maintenance`` integrity checks, vacuum, copy to a file, sizes
"""

from __future__ import annotations

import contextlib
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Store(Protocol):
    """One database, opened by ``store.open_store(url)``."""

    engine: str          # "sqlite" | "postgresql"
    url: str             # the database URL without its password

    @property
    def key(self) -> str:
        """A stable identity of the database for instance caches (the file or the server + name)."""
        ...

    @property
    def readonly(self) -> bool: ...

    def transaction(self, *, wait: bool = True) -> contextlib.AbstractContextManager[Any]:
        """One write transaction; every area's writes inside it commit or roll back together.
        ``wait=False`` gives up at once (StoreError) when another writer holds the lock."""
        ...

    def migrate(self) -> list[str]:
        """Apply the engine's pending migrations; return their names."""
        ...

    def close(self) -> None: ...

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

import builtins
import contextlib
from typing import Any, Protocol, runtime_checkable

from .rows import TurnRow


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


# -- turns, jobs, audit, tombstones, maintenance, vector writes (write) --
# The write side: the one write pipeline (ingest/pipeline.persist), the background tasks (tasks.py)
# and the maintenance of the façade call these. Writes run inside ``store.transaction()``.


class Turns(Protocol):
    """The L1 rows and their sessions, plus the backlogs a write leaves (text index, embeddings)."""

    def write(self, row: TurnRow, now: float | None = None) -> tuple[str, str]:
        """Insert or update one prepared turn (``ingest.pipeline.prepare``): (id, added|updated|duplicate)."""
        ...

    def restore(self, turn_id: str, *, created_at: float | None, updated_at: float | None, access_count: int,
                last_access: float | None, archived: bool) -> None: ...

    def load(self, rows: list[dict[str, Any]]) -> int:
        """Stored rows as given, past the pipeline (benchmarks building large stores)."""
        ...

    def put_entities(self, items: list[tuple[str, str, list[tuple[str, str]], bool]]) -> int: ...

    def delete(self, scope: Any, *, ids: list[str] | None = None, session_id: str | None = None,
               source: str | None = None) -> list[str]: ...

    def clear(self) -> dict[str, int]: ...

    def clear_preview(self) -> dict[str, int]: ...

    def get(self, scope: Any, turn_id: str) -> dict[str, Any] | None: ...

    def get_many(self, scope: Any, ids: list[str]) -> dict[str, dict[str, Any]]: ...

    def page(self, scope: Any, *, session_id: str | None = None, since: float | None = None,
             until: float | None = None, kind: str | None = None, limit: int = 50, offset: int = 0,
             order: str = "desc") -> list[dict[str, Any]]: ...

    def sessions(self, scope: Any, *, limit: int = 100, offset: int = 0) -> list[dict[str, Any]]: ...

    def counts(self, scope: Any) -> dict[str, Any]: ...

    def text_backlog(self) -> int: ...

    def unindexed(self, *, ids: list[str] | None = None, limit: int = 2000) -> list[dict[str, Any]]: ...

    def index_text(self, ids: list[str]) -> int: ...

    def embed_backlog(self) -> int:
        """How many turns wait for vectors (the one count of the embedding backlog)."""
        ...

    def embed_batch(self, limit: int) -> list[dict[str, Any]]: ...

    def mark_embedded(self, done: list[tuple[str, str]]) -> None: ...

    def mark_embed_failed(self, ids: list[str]) -> None: ...

    def reembed_for_model(self, model_id: str) -> int: ...

    def reembed_all(self) -> int: ...


class Jobs(Protocol):
    """The durable background job queue."""

    def enqueue(self, kind: str, payload: dict[str, Any] | None = None, *, dedup_key: str | None = None,
                run_after: float = 0.0, now: float | None = None) -> int: ...

    def active(self, dedup_key: str) -> int | None: ...

    def waiting(self) -> int: ...

    def pending(self) -> int: ...

    def failed(self) -> int: ...

    def get(self, job_id: int) -> dict[str, Any] | None: ...

    def recent(self, limit: int = 50, *, active_only: bool = False) -> list[dict[str, Any]]: ...

    def counts(self) -> dict[str, int]: ...

    def set_status(self, job_id: int, status: str) -> None: ...

    def claim(self, kinds: tuple[str, ...] | None = None) -> dict[str, Any] | None: ...

    def progress(self, job_id: int, data: dict[str, Any]) -> None: ...

    def finish(self, job_id: int, status: str = "done", error: str = "", retry_in: float | None = None) -> None: ...

    def requeue(self, job_id: int) -> None: ...

    def recover(self) -> int: ...


class Audit(Protocol):
    def record(self, action: str, *, owner: str = "", target: str = "", detail: dict[str, Any] | None = None,
               ts: float | None = None) -> None: ...

    def recent(self, limit: int = 50) -> list[dict[str, Any]]: ...


class Tombstones(Protocol):
    def any(self) -> bool: ...

    def keeps_out(self, row: TurnRow) -> bool: ...

    def lift_turn(self, row: TurnRow) -> None: ...

    def bury_turns(self, scope: Any, ids: list[str]) -> int: ...

    def bury(self, scope: Any, kind: str, key: str) -> None: ...

    def lift(self, scope: Any, *, ids: list[str] | None = None, session_id: str | None = None,
             source: str | None = None) -> list[dict[str, Any]]: ...

    def list(self, scope: Any, limit: int = 200) -> builtins.list[dict[str, Any]]: ...


class Maintenance(Protocol):
    def quick_check(self) -> str: ...

    def journal_mode(self) -> str: ...

    def text_index_check(self) -> tuple[bool, str]: ...

    def vacuum(self) -> bool: ...

    def copy_to(self, dest: Any) -> Any: ...

    def table_rows(self) -> dict[str, int]: ...

    def size_bytes(self) -> int: ...


class VectorWrites(Protocol):
    def put_many(self, rows: list[tuple[str, str, str, str, int, bytes, str, str, str, str]]) -> None: ...

    def stats(self) -> dict[str, Any]: ...


@runtime_checkable
class WriteStore(Store, Protocol):
    """A ``Store`` with the write side's areas (merged into ``Store`` once every area is declared)."""

    turns: Turns
    jobs: Jobs
    audit: Audit
    tombstones: Tombstones
    maintenance: Maintenance
    vectors: VectorWrites

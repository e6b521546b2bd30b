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


# -- recall: candidates, text, vectors (read side), entities (recallctx) --
from collections.abc import Callable, Iterator  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402

from ..scope import Scope  # noqa: E402


@dataclass(frozen=True, slots=True)
class TextTerm:
    """One term of a text-index query, as recall's query parse found it (no engine syntax)."""

    text: str
    prefix: bool = False  # match the words that start with ``text``
    cjk: bool = False     # a CJK run or word: matched as its characters in order (one character: as a prefix)


@dataclass(frozen=True, slots=True)
class TextQuery:
    terms: tuple[TextTerm, ...] = field(default_factory=tuple)
    every: bool = False   # every term must match (AND); default: any of them (OR), ranked by bm25

    def __bool__(self) -> bool:
        return bool(self.terms)


class Candidates(Protocol):
    """Scoped reads for ranking: rows by id, neighbours, sessions, errors, recency, access counts."""

    def meta(self, scope: Scope, ids: list[str], text_chars: int = 0) -> dict[str, dict[str, Any]]: ...
    def full_rows(self, scope: Scope, ids: list[str]) -> dict[str, dict[str, Any]]: ...
    def neighbours(self, scope: Scope, rows: list[dict[str, Any]], window: int = 1) -> dict[str, list[str]]: ...
    def recent(self, scope: Scope, limit: int, *, since: float | None = None,
               until: float | None = None) -> list[tuple[str, float]]: ...
    def by_error(self, scope: Scope, sigs: list[str], limit: int) -> list[tuple[str, float]]: ...
    def fixes_after(self, scope: Scope, row: dict[str, Any], limit: int = 2) -> list[dict[str, Any]]: ...
    def session_turns(self, scope: Scope, owner: str, agent: str, session_id: str,
                      limit: int = 200) -> list[dict[str, Any]]: ...
    def session_turns_of_any_agent(self, scope: Scope, session_id: str, limit: int = 500
                                   ) -> list[dict[str, Any]]: ...
    def until_write(self, key: tuple[Any, ...], compute: Callable[[], Any], ttl: float = 60.0,
                    *, any_write: bool = True) -> Any: ...
    def scope_at_most(self, scope: Scope, limit: int) -> bool: ...
    def scope_size(self, scope: Scope) -> tuple[int, int, float]: ...
    def texts(self, scope: Scope) -> list[tuple[str, str, str, str, str, float | None]]: ...
    @property
    def can_snapshot(self) -> bool: ...
    def texts_snapshot(self, scope: Scope) -> tuple[tuple[int, int, float],
                                                     list[tuple[str, str, str, str, str, float | None]]]: ...
    def touch_many(self, shown: list[tuple[Scope, list[str], float]], *, wait: bool = True) -> None: ...
    def forget(self) -> None: ...


class TextIndex(Protocol):
    """Word / CJK search (bm25), trigram substrings, short-needle scans, word statistics."""

    def size(self) -> int: ...
    def doc_freqs(self, terms: list[str]) -> tuple[int, dict[str, int]]: ...
    def search_words(self, scope: Scope, query: TextQuery, limit: int, *, since: float | None = None,
                     until: float | None = None, newest: bool = False) -> list[tuple[str, float]]: ...
    def search_substrings(self, scope: Scope, terms: list[str], limit: int) -> list[tuple[str, float]]: ...
    def search_short(self, scope: Scope, needle: str, limit: int) -> list[tuple[str, float]]: ...
    def forget(self) -> None: ...


class VectorRows(Protocol):
    """Stored embeddings as an in-memory index reads them (it applies the scope to every result)."""

    def has(self, model_id: str, field: str) -> bool: ...
    def last_delete(self) -> int: ...
    def deleted_since(self, seq: int, model_id: str, field: str, row_kind: str = "turn") -> Iterator[str]: ...
    def newest(self, model_id: str, field: str) -> float | None: ...
    def written_since(self, model_id: str, field: str, after: float, row_kind: str = "turn"
                      ) -> Iterator[tuple[str, bytes, str, str, str]]: ...


class EntityLookups(Protocol):
    max_count: int  # mention counts are counted up to this (enough to tell a hub)

    def lookup(self, scope: Scope, ents: list[tuple[str, str]]) -> list[tuple[int, str, str, int]]: ...
    def related(self, scope: Scope, ids: list[int], limit: int) -> list[tuple[int, float]]: ...
    def turns_mentioning(self, scope: Scope, entity_id: int, limit: int) -> list[str]: ...
    def mention_counts(self, ids: list[int]) -> dict[int, int]: ...
    def turn_count(self, scope: Scope) -> int: ...


class RecallStore(Protocol):
    """What recall reads: a Store with these four areas."""

    @property
    def key(self) -> str: ...
    errors: tuple[type[Exception], ...]  # the engine's own errors its areas may raise (besides StoreError)
    candidates: Candidates
    text: TextIndex
    vectors: VectorRows
    entities: EntityLookups

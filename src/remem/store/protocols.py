"""What the layers above ask of storage, engine by engine (``store/sqlite/``, ``store/postgres/``).

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
- ``users``       the server's users, token hashes and teams (team use, ``remem.team``)
"""

from __future__ import annotations

import builtins
import contextlib
from collections.abc import Iterable
from typing import Any, Protocol, runtime_checkable

from ..scope import Scope
from .rows import TurnRow


@runtime_checkable
class Store(Protocol):
    """One database, opened by ``store.open_store(url)``."""

    engine: str          # "sqlite" | "postgresql"
    url: str             # the database URL without its password

    @property
    def sources(self) -> SourceState: ...

    @property
    def key(self) -> str:
        """A stable identity of the database for instance caches (the file or the server + name)."""
        ...

    @property
    def readonly(self) -> bool: ...

    def transaction(self, *, wait: bool = True) -> contextlib.AbstractContextManager[Any]:
        """One write transaction; every area's writes inside it commit or roll back together.
        ``wait=False`` gives up at once (``Locked``, a StoreError) when another writer holds the lock."""
        ...

    def migrate(self) -> list[str]:
        """Apply the engine's pending migrations; return their names."""
        ...

    def close(self) -> None:
        """Close the store: every connection it opened, in any thread."""
        ...

    def release(self) -> None:
        """Close only the calling thread's connection (a worker thread that ends; the others go on)."""
        ...


# -- sources (syncstate) --
class SourceState(Protocol):
    """What the sync engine keeps per source (``store.sources``): one state row per source name
    (agent, format, status, rules, cursor, baseline, boundary, scan and sync times, last result) and
    one checkpoint per unit (a file, or a session inside a database). Writes join the caller's
    ``store.transaction()`` when one is open."""

    def state(self, name: str) -> dict[str, Any] | None: ...

    def ensure(self, name: str, *, agent: str, path: str, format: str) -> dict[str, Any]:
        """The state of ``name``, created (active, no cursor) on first use."""
        ...

    def states(self) -> dict[str, dict[str, Any]]: ...

    def record_run(self, name: str, *, cursor: float | None, scan_start: float, clean: bool,
                   result: dict[str, Any], boundary: float | None = None, now: float | None = None) -> None:
        """A finished sync of one source (``boundary`` only ever raises a discovered source's)."""
        ...

    def record_first_import(self, name: str, *, boundary: float | None, cursor: float | None,
                            result: dict[str, Any], now: float | None = None) -> None: ...

    def save_rules(self, name: str, *, agent: str, status: str, format: str, rules: dict[str, Any]) -> None:
        """Create or update a source's rules and status (``draft`` | ``active`` | ``paused``)."""
        ...

    def custom(self, *, status: str = "active") -> list[dict[str, Any]]:
        """Discovered sources (``custom:…``) of a status, rules parsed."""
        ...

    def checkpoints(self, name: str) -> dict[str, dict[str, Any]]:
        """Unit key → checkpoint (path, size, mtime, last_ts, last_msg_id, content_hash)."""
        ...

    def save_checkpoint(self, name: str, unit: str, *, path: str, size: int | None, mtime: float | None,
                        last_ts: float | None, last_msg_id: str, content_hash: str) -> None: ...

    def drop_checkpoint(self, name: str, unit: str) -> None: ...

    def project_paths(self, scope: Scope) -> list[str]:
        """Distinct absolute project folders named by the scope's turns and sessions."""
        ...

    def imported_sessions(self, scope: Scope, source: str, session_ids: Iterable[str]) -> set[str]:
        """Which of ``session_ids`` already hold turns imported by ``source``."""
        ...


# -- learned (learnstore) --
@runtime_checkable
class Learned(Protocol):
    """Learned memories (L2 / L3, issue 16): rows with their evidence turns, an event per change,
    and a per-project cursor of what the last learn saw. Reads take a Scope (owners; project when
    set). Forgetting a turn cascades inside the engine (see ``store/sqlite/learned.py``)."""

    def projects(self, scope: Any) -> dict[tuple[str, str], tuple[int, int, float]]:
        """(owner, project) → (turns, newest turn position, newest write time) in scope."""
        ...

    def turns_in_time_order(self, owner: str, project: str) -> builtins.list[dict[str, Any]]: ...

    def clock(self, owner: str, project: str) -> float:
        """The newest turn time of one owner's project (decay's clock; 0.0: no turns)."""
        ...

    def turn_requests(self, scope: Any, turn_ids: builtins.list[str]) -> dict[str, dict[str, Any]]: ...

    def cursors(self, scope: Any) -> dict[tuple[str, str], dict[str, Any]]: ...

    def set_cursor(self, owner: str, project: str, seen: tuple[int, int, float], now: float,
                   learner: str = "") -> None: ...

    def drop_cursor(self, owner: str, project: str) -> None: ...

    def list(self, scope: Any, *, statuses: tuple[str, ...] | None = None, kind: str | None = None,
             ids: builtins.list[str] | None = None, limit: int | None = None) -> builtins.list[dict[str, Any]]: ...

    def get(self, scope: Any, memory_id: str) -> dict[str, Any] | None: ...

    def count(self, scope: Any) -> dict[str, int]: ...

    def put(self, rec: dict[str, Any]) -> None: ...

    def delete(self, owner: str, memory_id: str) -> None: ...

    def add_event(self, owner: str, memory_id: str, action: str, before: dict[str, Any] | None,
                  after: dict[str, Any] | None, *, actor: str, ts: float) -> int: ...

    def purge_events(self, owner: str, memory_id: str) -> int: ...

    def events(self, scope: Any, memory_id: str) -> builtins.list[dict[str, Any]]: ...

    def event(self, scope: Any, event_id: int) -> dict[str, Any] | None: ...


# -- packets (feedback) --
@runtime_checkable
class Packets(Protocol):
    """What each packet handed to an agent contained (issue 18): entry point, session, owner and
    project, a prompt hash (never the prompt) and its item ids, later the outcome of the turn that
    followed. Reads take a Scope (owners; project when set); rows are pruned by age and count."""

    def add(self, rec: dict[str, Any]) -> int:
        """Record one packet (owner, project, agent, session_id, entry, prompt_hash, turn_ids,
        learned_ids, created_at); returns its id."""
        ...

    def open(self, scope: Any, *, limit: int = 500) -> builtins.list[dict[str, Any]]:
        """Packets in scope not judged yet, oldest first."""
        ...

    def judge(self, owner: str, packet_id: int, outcome: str, turn_id: str, ts: float) -> None: ...

    def vote(self, owner: str, packet_id: int, item_id: str, verdict: str) -> None:
        """One item's thumb (good / bad) from the viewer."""
        ...

    def recent(self, scope: Any, *, session: str | None = None, limit: int = 50) -> builtins.list[dict[str, Any]]:
        """Packets in scope, newest first (the viewer's list)."""
        ...

    def get(self, scope: Any, packet_id: int) -> dict[str, Any] | None: ...

    def prune(self, *, before: float, keep: int) -> int:
        """Delete packets created before ``before`` and all but the newest ``keep``; returns how many."""
        ...


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

    def changed(self, scope: Any, *, after: tuple[float, str] = (0.0, ""), limit: int = 200) -> list[dict[str, Any]]:
        """Turns written or changed after ``after`` = (updated_at, id), oldest first (team sync)."""
        ...

    def count_changed(self, scope: Any, *, after: tuple[float, str] = (0.0, "")) -> int:
        """How many turns ``changed`` would return after ``after``, without reading them."""
        ...

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

    def since(self, scope: Any, since: float, limit: int = 1000) -> builtins.list[dict[str, Any]]:
        """Turn and session tombstones made at or after ``since``, oldest first (team sync)."""
        ...


class Maintenance(Protocol):
    def quick_check(self) -> str: ...

    def journal_mode(self) -> str: ...

    def text_index_check(self) -> tuple[bool, str]: ...

    def vacuum(self) -> bool: ...

    def copy_to(self, dest: Any) -> Any: ...

    def table_rows(self) -> dict[str, int]: ...

    def size_bytes(self) -> int: ...


class Users(Protocol):
    """The server's users, their tokens (sha256 hashes only) and teams. Not scoped by owner: these
    rows decide which owners a request may read (``remem.team.Principal``)."""

    def add_user(self, name: str, token_hash: str, session_hash: str, now: float | None = None) -> bool: ...

    def add_token(self, name: str, token_hash: str, session_hash: str, now: float | None = None) -> None: ...

    def revoke_tokens(self, name: str, *, keep: str = "") -> int: ...

    def remove_user(self, name: str) -> bool: ...

    def user_exists(self, name: str) -> bool: ...

    def users(self) -> builtins.list[dict[str, Any]]: ...

    def user_of(self, *, token_hash: str = "", session_hash: str = "") -> str | None: ...

    def add_team(self, name: str, members: builtins.list[str], now: float | None = None) -> bool: ...

    def remove_team(self, name: str) -> bool: ...

    def team_exists(self, name: str) -> bool: ...

    def add_members(self, team: str, members: builtins.list[str], now: float | None = None) -> int: ...

    def remove_members(self, team: str, members: builtins.list[str]) -> int: ...

    def missing_users(self, names: builtins.list[str]) -> builtins.list[str]: ...

    def teams(self) -> builtins.list[dict[str, Any]]: ...

    def teams_of(self, user: str) -> builtins.list[str]: ...


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
    users: Users


# -- recall: candidates, text, vectors (read side), entities (recallctx) --
from collections.abc import Callable, Iterator  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402


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
    def session_turns_of_any_agent(self, scope: Scope, session_id: str, limit: int = 500,
                                   newest: bool = False) -> list[dict[str, Any]]: ...
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
    def warm_doc_freqs(self) -> int: ...  # count the common words ahead of the first prompts
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


class VectorSearch(Protocol):
    """A vector search recall's channels run: the SQLite engine's in-memory indexes
    (``recall.vectors.VectorIndexes``) or a store's own (``store.vectors.searcher()``, pgvector)."""

    def search_fields(self, scope: Scope, query: Any, model_id: str, fields: list[str],
                      k: int) -> dict[str, list[tuple[str, float]]]: ...
    def mean_similarity(self, scope: Scope, query: Any, model_id: str, field: str) -> float | None: ...
    def load(self, model_id: str, fields: list[str], dim: int) -> int: ...  # ahead of the first search; rows held
    def forget(self) -> None: ...
    def info(self) -> list[dict[str, Any]]: ...


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

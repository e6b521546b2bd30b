"""A psycopg 3 connection that speaks the SQL the engines share.

The area classes of ``store/sqlite/`` are written in SQL both engines understand, with SQLite's
``?`` parameters; this engine reuses them and overrides only what differs (text search, JSON,
pragmas, identity columns). ``PgConnection`` makes that possible:

- ``?`` becomes ``%s``, ``?1`` a named parameter (and a literal ``%`` becomes ``%%``), once per
  distinct statement (cached);
- ``INSERT OR IGNORE INTO …`` becomes ``INSERT INTO … ON CONFLICT DO NOTHING``;
- ``CROSS JOIN t ON …`` (SQLite's way to fix the join order) becomes ``JOIN t ON …``, and a table's
  ``INDEXED BY name`` (SQLite's index hint) is dropped;
- SQLite's unary ``+`` on a scope column (it keeps the planner off the owner index) is dropped;
- SQLite's scalar functions the shared SQL calls (``instr``, two-argument ``max`` / ``min``) exist
  as SQL functions in the database (migration p001).

Queries are never prepared on the server (``prepare_threshold=None``): a generic plan would hide
how selective an owner is, and a filtered vector or text scan would then return too few rows for
small owners. Engine errors come out as ``StoreError`` with the reason.
"""

from __future__ import annotations

import contextlib
import functools
import re
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from ..errors import Locked, StoreError

_CACHE_MAX = 4096


class Row(tuple):  # type: ignore[type-arg]
    """A result row read by position (``r[0]``) or by column name (``r["id"]``), like sqlite3.Row."""

    __slots__ = ()
    _names: tuple[str, ...] = ()
    _index: dict[str, int] = {}

    def __getitem__(self, key: Any) -> Any:  # type: ignore[override]
        if isinstance(key, str):
            try:
                return tuple.__getitem__(self, self._index[key])
            except KeyError:
                raise IndexError(f"no such column: {key}") from None
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self._names)


@functools.lru_cache(maxsize=512)
def _row_class(names: tuple[str, ...]) -> type[Row]:
    return type("Row", (Row,), {"__slots__": (), "_names": names, "_index": {n: i for i, n in enumerate(names)}})


def row_factory(cursor: Any) -> Any:
    desc = cursor.description
    if desc is None:
        return lambda values: values
    cls = _row_class(tuple(d.name for d in desc))
    return lambda values: cls(values)


_SCOPE_PLUS = re.compile(r"\+((?:\w+\.)?(?:owner|agent|project|id|rowid)\b)")
_OR_IGNORE = re.compile(r"\bINSERT\s+OR\s+IGNORE\s+INTO\b", re.I)
# SQLite's CROSS JOIN … ON fixes the join order; PostgreSQL plans an inner join itself
_CROSS_ON = re.compile(r"\bCROSS\s+JOIN\s+(\w+(?:\s+(?!ON\b)\w+)?)\s+ON\b", re.I)
_INDEXED_BY = re.compile(r"\s+INDEXED\s+BY\s+\w+", re.I)


_NUMBERED = re.compile(r"\?(\d+)")
MULTI_ROWS = 500
_VALUES = re.compile(r"^(\s*INSERT\s+INTO\s+[^()]+\([^()]*\)\s+VALUES\s*)(\((?:%s\s*,\s*|[^()%,]+,\s*)*(?:%s|[^()%,]+)\))(.*)$",
                     re.I | re.S)


@functools.lru_cache(maxsize=_CACHE_MAX)
def _multi_row(text: str) -> tuple[str, str, str]:
    """(head, one row's VALUES group, tail) of a translated single-row INSERT, or ("", "", "")."""
    m = _VALUES.match(text)
    if not m or "SELECT" in m.group(3).upper():
        return "", "", ""
    return m.group(1), m.group(2), m.group(3)


@functools.lru_cache(maxsize=_CACHE_MAX)
def numbered(sql: str) -> bool:
    """Whether the statement uses SQLite's numbered parameters (``?1``): they become named ones."""
    return bool(_NUMBERED.search(sql))


@functools.lru_cache(maxsize=_CACHE_MAX)
def translate(sql: str) -> str:
    """SQLite-flavoured shared SQL → PostgreSQL (see the module docstring); quoted text is kept."""
    out: list[str] = []
    parts = re.split(r"('(?:[^']|'')*')", sql)  # odd parts are string literals
    ignore = False
    for i, part in enumerate(parts):
        if i % 2:
            out.append(part.replace("%", "%%"))
            continue
        part = _NUMBERED.sub(r"%(p\1)s", part.replace("%", "%%")).replace("?", "%s")
        part = _SCOPE_PLUS.sub(r"\1", part)
        part = _CROSS_ON.sub(r"JOIN \1 ON", _INDEXED_BY.sub("", part))
        if _OR_IGNORE.search(part):
            part = _OR_IGNORE.sub("INSERT INTO", part)
            ignore = True
        out.append(part)
    text = "".join(out)
    if ignore and "ON CONFLICT" not in text.upper():
        text = text.rstrip().rstrip(";") + " ON CONFLICT DO NOTHING"
    return text


def explain(e: Exception, where: str = "") -> StoreError:
    import psycopg

    msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    if isinstance(e, psycopg.errors.LockNotAvailable):     # an OperationalError too: ask first
        return Locked("database is locked by another writer")
    if isinstance(e, psycopg.OperationalError):
        return StoreError(f"cannot reach the PostgreSQL database {where}: {msg}".replace("  ", " "))
    if isinstance(e, psycopg.errors.InsufficientPrivilege):
        return StoreError(f"the PostgreSQL user may not do this {where}: {msg}".replace("  ", " "))
    if isinstance(e, psycopg.errors.DiskFull):
        return StoreError(f"no space left on the PostgreSQL server; nothing was written ({msg})")
    return StoreError(f"database error: {msg}")


class PgCursor:
    """The part of sqlite3.Cursor the shared areas use: fetchone / fetchall / iteration / rowcount."""

    __slots__ = ("_cur",)

    def __init__(self, cur: Any) -> None:
        self._cur = cur

    @property
    def lastrowid(self) -> int:
        """The id an INSERT into a table with a BIGSERIAL key just took (``lastval()`` of the session)."""
        got = self._cur.connection.execute("SELECT lastval()").fetchone()
        return int(got[0]) if got else 0

    def fetchone(self) -> Any:
        return self._cur.fetchone() if self._cur.description is not None else None

    def fetchall(self) -> list[Any]:
        return self._cur.fetchall() if self._cur.description is not None else []

    def fetchmany(self, n: int) -> list[Any]:
        return self._cur.fetchmany(n) if self._cur.description is not None else []

    def __iter__(self) -> Iterator[Any]:
        if self._cur.description is None:
            return iter(())
        return iter(self._cur)

    @property
    def rowcount(self) -> int:
        return int(self._cur.rowcount)

    @property
    def description(self) -> Any:
        return self._cur.description


class PgConnection:
    """One psycopg connection (autocommit outside ``transaction()``) with sqlite3's calling style."""

    def __init__(self, url: str, *, readonly: bool = False, where: str = "") -> None:
        import psycopg

        self._where = where
        try:
            self.raw = psycopg.connect(url, autocommit=True, prepare_threshold=None, row_factory=row_factory,
                                       connect_timeout=10)
        except psycopg.Error as e:
            raise explain(e, where) from None
        self.readonly = readonly
        if readonly:
            self.raw.execute("SET default_transaction_read_only = on")
        self._depth = 0
        self._lock = threading.RLock()
        self._before_commit: list[Any] = []

    # -- sqlite3-style calls -----------------------------------------------------------------------
    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> PgCursor:
        import psycopg

        try:
            if numbered(sql) and not isinstance(params, dict):
                params = {f"p{i}": v for i, v in enumerate(_params(params), 1)}
            return PgCursor(self.raw.execute(translate(sql), _params(params)))
        except psycopg.Error as e:
            raise explain(e, self._where) from None

    def executemany(self, sql: str, seq: Any) -> PgCursor:
        """sqlite3's executemany. An ``INSERT … VALUES (…)`` goes as multi-row statements of up to
        ``MULTI_ROWS`` rows (one round trip each instead of one per row: a write batch's entity rows
        are tens of thousands); a chunk whose ON CONFLICT DO UPDATE meets the same key twice goes row
        by row (inside a savepoint, so the transaction stays good)."""
        import psycopg

        rows = [_params(p) for p in seq]
        cur = self.raw.cursor()
        if not rows:
            return PgCursor(cur)
        text = translate(sql)
        head, values, tail = _multi_row(text)
        try:
            if head and len(rows) > 1 and not numbered(sql):
                for i in range(0, len(rows), MULTI_ROWS):
                    chunk = rows[i: i + MULTI_ROWS]
                    stmt = head + ",".join([values] * len(chunk)) + tail
                    flat = [v for r in chunk for v in r]
                    if "DO UPDATE" in tail.upper():
                        try:
                            with self.raw.transaction():  # a savepoint inside the caller's transaction
                                cur.execute(stmt, flat)
                        except psycopg.errors.CardinalityViolation:
                            cur.executemany(text, chunk)
                    else:
                        cur.execute(stmt, flat)
            else:
                cur.executemany(text, rows)
        except psycopg.Error as e:
            raise explain(e, self._where) from None
        return PgCursor(cur)

    def native(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> PgCursor:
        """A statement in PostgreSQL's own syntax (``%s`` parameters), untranslated."""
        import psycopg

        try:
            return PgCursor(self.raw.execute(sql, _params(params)))  # type: ignore[arg-type]
        except psycopg.Error as e:
            raise explain(e, self._where) from None

    def __enter__(self) -> PgConnection:  # sqlite3's ``with conn:`` (commit at the end): autocommit here
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    @property
    def in_transaction(self) -> bool:
        return self._depth > 0

    def before_commit(self, fn: Any) -> None:
        """Run ``fn()`` once, inside the current transaction, just before it commits (outside one: now).
        The turns area writes a batch's word rows this way: one pass per write batch, not per turn."""
        if not self._depth:
            fn()
        elif fn not in self._before_commit:
            self._before_commit.append(fn)

    @contextlib.contextmanager
    def transaction(self, *, wait: bool = True) -> Iterator[PgConnection]:
        """One transaction; an inner call joins the outer one (as SQLite's callers expect)."""
        import psycopg

        if self._depth:
            self._depth += 1
            try:
                yield self
            finally:
                self._depth -= 1
            return
        try:
            with self.raw.transaction():
                if not wait:
                    self.raw.execute("SET LOCAL lock_timeout = '50ms'")
                self._depth = 1
                try:
                    yield self
                    while self._before_commit:
                        self._before_commit.pop(0)()
                finally:
                    self._depth = 0
                    self._before_commit.clear()
        except psycopg.Error as e:
            raise explain(e, self._where) from None

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.raw.close()

    @property
    def closed(self) -> bool:
        return bool(self.raw.closed)


def _params(p: Any) -> Any:
    if isinstance(p, dict):
        return p
    return tuple(bytes(v) if isinstance(v, memoryview) else v for v in p)

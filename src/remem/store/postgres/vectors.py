"""Vectors on PostgreSQL: pgvector columns, HNSW indexes, and the vector search recall runs in SQL.

``embeddings.vec`` holds each vector as pgvector's ``vector`` (the SQLite engine's ``vector`` bytes
column stays empty here: one copy). Recall does not load the vectors into memory as on SQLite; it
asks :class:`PgVectorSearch`, which runs one statement for the fields a search asks for:

- an HNSW index per (model, field, dimension), partial on those values (``vec::vector(D)`` with
  inner-product ops: the stored vectors are what the embedder returned, as SQLite's index scores
  them), built by :meth:`PgVectors.settle` once an embedding run has drained the backlog
  (``CREATE INDEX CONCURRENTLY``: writers go on meanwhile). Built after a bulk fill it costs a few
  seconds; kept up row by row from the first vector, HNSW inserts ran at ~150 rows/s here (see
  bench/RESULTS.md). Until it exists the same query is an exact scan;
- the scope's owner / agent / project filter in the same query, with ``hnsw.iterative_scan``
  (``relaxed_order``, re-sorted here) so a filtered scan keeps going until it has ``k`` rows of the
  scope, and never prepared (see ``db.py``), so the planner sees how selective an owner is and takes
  the exact path for a small one;
- the owners' mean vector (the "typical memory" the related-hit margin is measured from) computed
  in SQL and cached until a vector of that model and field is written or deleted.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..errors import StoreError
from ..sqlite.vectors import SqliteVectors

if TYPE_CHECKING:
    from pgvector import Vector

    from ...scope import Scope
    from . import PgStore
    from .db import PgConnection

Row = tuple[str, str, str, str, int, bytes, str, str, str, str]

# ef_search: HNSW's candidate list (pgvector's default 40 found 7.8 of the true 10 nearest on clustered
# vectors, 100 too; 400 all 10: tests/test_postgres.py), at most pgvector's limit
EF_MIN, EF_MAX = 400, 1000
# maintenance_work_mem while an HNSW index is built (settle): at least 512 MB, else what the graph
# needs (~1.25 × (4·dim + 400) bytes a vector: 150k vectors of 384 numbers took ~270 MB), at most 4 GB.
# A graph that outgrows it is finished on disk, many times slower (150k vectors with 64 MB: 611 s).
BUILD_MEMORY_MB = (512, 4096)


def build_memory(vectors: int, dim: int) -> str:
    """maintenance_work_mem for building the HNSW index of ``vectors`` vectors of ``dim`` numbers
    (the server takes it only as its graph grows)."""
    need = int(vectors * (4 * dim + 400) * 1.25 / 2**20) + 1
    return f"{min(max(need, BUILD_MEMORY_MB[0]), BUILD_MEMORY_MB[1])}MB"

_PUT = ("INSERT INTO embeddings (row_kind, row_id, field, model_id, dim, vector, vec, content_hash, owner, agent, "
        "project, created_at) VALUES (?,?,?,?,?,''::bytea,?,?,?,?,?,?) "
        "ON CONFLICT (row_kind, row_id, field, model_id) DO UPDATE SET vec = excluded.vec, dim = excluded.dim, "
        "content_hash = excluded.content_hash, created_at = excluded.created_at")

NEEDS_PGVECTOR = ("remem on PostgreSQL needs the pgvector extension (https://github.com/pgvector/pgvector): "
                  "install it on the server, then run `CREATE EXTENSION vector;` in this database as a user "
                  "allowed to (or let remem's user create it)")


def register(db: PgConnection) -> None:
    """pgvector's types on this connection (once): ``pgvector.Vector`` goes as ``vector`` and comes back
    as one (the store stays free of numpy: vectors cross it as float32 bytes, as on SQLite)."""
    if getattr(db, "_pgvector", False):
        return
    import psycopg

    try:
        from pgvector.psycopg import register_vector
    except ImportError:
        raise StoreError("remem on PostgreSQL needs the Python package pgvector: pip install 'remem[postgres]'") from None
    try:
        register_vector(db.raw)
    except psycopg.ProgrammingError as e:  # the type is not there: migrations have not run, or no pgvector
        raise StoreError(f"{NEEDS_PGVECTOR} ({e})") from None
    db._pgvector = True  # type: ignore[attr-defined]


def index_name(model_id: str, field: str, dim: int) -> str:
    return "embeddings_hnsw_" + hashlib.sha1(f"{model_id}\x00{field}\x00{dim}".encode()).hexdigest()[:16]


def ensure_index(db: PgConnection, model_id: str, field: str, dim: int, *, concurrently: bool = False) -> bool:
    """The HNSW index of this model, field and dimension (created if missing: ``concurrently``
    outside a transaction, writers go on meanwhile); True when created. One being built by another
    process counts as there."""
    from psycopg import sql

    name = index_name(model_id, field, dim)
    if db.native("SELECT 1 FROM pg_class WHERE relname = %s AND relkind = 'i'", (name,)).fetchone():
        return False
    how = sql.SQL("CONCURRENTLY IF NOT EXISTS" if concurrently else "IF NOT EXISTS")
    stmt = sql.SQL("CREATE INDEX {} {} ON embeddings USING hnsw ((vec::vector({})) vector_ip_ops) "
                   "WITH (m = 16, ef_construction = 128) WHERE model_id = {} AND field = {} AND dim = {}").format(
        how, sql.Identifier(name), sql.Literal(dim), sql.Literal(model_id), sql.Literal(field), sql.Literal(dim))
    db.native(stmt.as_string(db.raw))
    return True


def to_vector(vec: bytes, dim: int | None = None) -> Vector:
    """float32 bytes (what the embedding worker stores) as pgvector's ``Vector``."""
    from array import array

    from pgvector import Vector

    a = array("f")
    a.frombytes(vec)
    if dim is not None and len(a) != dim:
        raise StoreError(f"a vector of {len(a)} numbers was given as {dim}")
    return Vector(a.tolist())


def to_bytes(v: Any) -> bytes:
    """A vector read back (pgvector's ``Vector``) as float32 bytes."""
    from array import array

    return array("f", v.to_list()).tobytes()


def _query(query: Any) -> tuple[list[float], bytes]:
    """A query vector (recall's numpy array, or float32 bytes) as numbers and bytes, without numpy."""
    from array import array

    if isinstance(query, (bytes, bytearray, memoryview)):
        raw = bytes(query)
    else:  # an ndarray: its own methods, so this module need not import numpy
        raw = query.astype("float32").reshape(-1).tobytes()
    a = array("f")
    a.frombytes(raw)
    return a.tolist(), raw


class PgVectors(SqliteVectors):
    """``store.vectors``: rows as on SQLite, the vector itself in ``vec`` (pgvector)."""

    _store: PgStore

    def __init__(self, store: PgStore) -> None:
        super().__init__(store)  # type: ignore[arg-type]
        self._lock = threading.Lock()
        self._indexed: set[tuple[str, str, int]] = set()   # (model, field, dimension) with its index
        self._pending: set[tuple[str, str, int]] = set()   # written by this store, index not seen yet

    def _put(self, db: PgConnection, rows: list[Row]) -> None:
        if not rows:
            return
        register(db)
        now = time.time()
        with self._lock:
            self._pending |= {(r[3], r[2], int(r[4])) for r in rows} - self._indexed
        db.executemany(_PUT, [(r[0], r[1], r[2], r[3], int(r[4]), to_vector(r[5], int(r[4])), r[6], r[7], r[8],
                               r[9], now) for r in rows])

    def put_many(self, rows: list[Row]) -> None:
        with self.store.transaction() as db:
            self._put(db, rows)  # type: ignore[arg-type]

    def put_done(self, rows: list[Row], turn_ids: list[str]) -> None:
        with self.store.transaction() as db:
            self._put(db, rows)  # type: ignore[arg-type]
            db.executemany("UPDATE turns SET embed_state='done' WHERE id=?", [(t,) for t in turn_ids])

    def settle(self) -> list[str]:
        """Build the HNSW index of every model, field and dimension this store wrote vectors of and
        has not seen indexed yet (the embedding worker calls this when its backlog is drained; older
        vectors got theirs in migration p003); the names of those built. Inside a transaction it
        waits for the next call."""
        db: PgConnection = self._db  # type: ignore[assignment]
        if db.in_transaction:
            return []
        with self._lock:
            todo = sorted(self._pending)
        if not todo:  # nothing new written here: no catalog query on every drained backlog
            return []
        built = []
        # HNSW builds fast while its graph fits in maintenance_work_mem (64 MB by default; the graph of
        # 150k vectors of 384 numbers is ~270 MB, and that build took 611 s here); this session only
        try:
            for model_id, field, dim in todo:
                n = db.native("SELECT count(*) FROM embeddings WHERE model_id = %s AND field = %s AND dim = %s",
                              (model_id, field, dim)).fetchone()[0]
                db.native("SELECT set_config('maintenance_work_mem', %s, false)", (build_memory(n, dim),))
                if ensure_index(db, model_id, field, dim, concurrently=True):
                    built.append(index_name(model_id, field, dim))
                with self._lock:
                    self._pending.discard((model_id, field, dim))
                    self._indexed.add((model_id, field, dim))
        finally:
            db.native("RESET maintenance_work_mem")
        if built:  # a bulk fill just ended: the planner's row counts may still be the empty table's
            db.execute("ANALYZE embeddings")
        return built

    def _vec_rows(self, sql: str, params: tuple[Any, ...]) -> Iterator[Any]:
        db = self._db
        register(db)  # type: ignore[arg-type]
        return iter(db.execute(sql, params))

    def written_since(self, model_id: str, field: str, after: float, row_kind: str = "turn"
                      ) -> Iterator[tuple[str, bytes, str, str, str]]:

        for rid, vec, owner, agent, project in self._vec_rows(
                "SELECT row_id, vec, owner, agent, project FROM embeddings WHERE model_id = ? AND field = ? "
                "AND row_kind = ? AND created_at > ? ORDER BY created_at", (model_id, field, row_kind, after)):
            yield rid, to_bytes(vec), owner, agent, project

    def all_of(self, model_id: str) -> Iterator[bytes]:
        for (vec,) in self._vec_rows("SELECT vec FROM embeddings WHERE model_id = ?", (model_id,)):
            yield to_bytes(vec)

    def searcher(self) -> PgVectorSearch:
        """What recall's vector channels ask (instead of loading the vectors into memory)."""
        return PgVectorSearch(self)


class PgVectorSearch:
    """Recall's vector search, in SQL (the surface of ``recall.vectors.VectorIndexes`` recall uses)."""

    def __init__(self, vectors: PgVectors) -> None:
        self.vectors = vectors
        self._means: dict[tuple[Any, ...], tuple[tuple[Any, ...], list[float] | None]] = {}
        self._lock = threading.Lock()

    @property
    def _db(self) -> PgConnection:
        db = self.vectors._db
        register(db)  # type: ignore[arg-type]
        return db  # type: ignore[return-value]

    def has_vectors(self, model_id: str, field: str) -> bool:
        return self.vectors.has(model_id, field)

    def search(self, scope: Scope, query: Any, model_id: str, field: str, k: int) -> list[tuple[str, float]]:
        """Top ``k`` (row id, score) of this model and field inside ``scope``, best first (the score is
        the inner product, as the SQLite engine's in-memory index gives it)."""
        return self.search_fields(scope, query, model_id, [field], k)[field]

    def search_fields(self, scope: Scope, query: Any, model_id: str, fields: list[str],
                      k: int) -> dict[str, list[tuple[str, float]]]:
        """:meth:`search` of each field, in one statement (one HNSW scan per field, UNION ALL)."""
        fields = list(dict.fromkeys(fields))
        nums, raw = _query(query)
        dim = len(nums)
        if k <= 0 or not dim or not fields:
            return {f: [] for f in fields}
        q = to_vector(raw)
        where, params = scope.sql()
        db = self._db
        ef = min(EF_MAX, max(EF_MIN, 4 * k))
        local = db.in_transaction  # inside one, a session setting would go with a rollback: this query's only
        if local or getattr(db, "_hnsw_ef", None) != ef:
            db.native("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', %s), "
                      "set_config('hnsw.ef_search', %s, %s)", (local, str(ef), local))
            if not local:
                db._hnsw_ef = ef  # type: ignore[attr-defined]
        one = (f"(SELECT {{n}} AS f, row_id, -(vec::vector({dim}) <#> ?) AS s FROM embeddings WHERE model_id = ? "
               f"AND field = ? AND dim = ? AND row_kind = 'turn' AND {where} ORDER BY vec::vector({dim}) <#> ? LIMIT ?)")
        sql = " UNION ALL ".join(one.format(n=i) for i in range(len(fields)))
        args: list[Any] = []
        for f in fields:
            args += [q, model_id, f, dim, *params, q, int(k)]
        out: dict[str, list[tuple[str, float]]] = {f: [] for f in fields}
        for n, rid, score in db.execute(sql, args).fetchall():
            out[fields[int(n)]].append((str(rid), float(score)))
        for got in out.values():
            got.sort(key=lambda h: -h[1])  # relaxed_order: nearly sorted
        return out

    def mean_similarity(self, scope: Scope, query: Any, model_id: str, field: str) -> float | None:
        """The query's score against the scope owners' mean vector of ``field`` (agent and project
        filters not applied, as on SQLite); None when they have no vectors."""
        q, _raw = _query(query)
        dim = len(q)
        owners = tuple(sorted(scope.owners))
        if not owners:
            return None
        db = self._db
        newest, last = db.execute("SELECT (SELECT max(created_at) FROM embeddings WHERE model_id = ? AND field = ?), "
                                  "(SELECT coalesce(max(seq), 0) FROM embedding_deletes)", (model_id, field)).fetchone()
        stamp = (None if newest is None else float(newest), int(last))  # newest(), last_delete(): one round trip
        key = (owners, model_id, field, dim)
        with self._lock:
            cached = self._means.get(key)
        if cached is None or cached[0] != stamp:
            marks = ",".join("?" * len(owners))
            got = db.execute(f"SELECT avg(vec::vector({dim})) FROM embeddings WHERE model_id = ? AND field = ? "
                             f"AND dim = ? AND row_kind = 'turn' AND owner IN ({marks})",
                             [model_id, field, dim, *owners]).fetchone()[0]
            mean = None if got is None else [float(x) for x in got.to_list()]
            with self._lock:
                self._means[key] = (stamp, mean)
        else:
            mean = cached[1]
        return None if mean is None else float(sum(a * b for a, b in zip(mean, q, strict=True)))

    def load(self, model_id: str, fields: list[str], dim: int) -> int:
        """Nothing to load ahead of a search: pgvector searches in the database (0 rows held here)."""
        return 0

    def forget(self) -> None:
        with self._lock:
            self._means.clear()

    def info(self) -> list[dict[str, Any]]:
        """The HNSW indexes (SQLite's in-memory indexes report their rows and bytes here)."""
        return [{"index": r[0], "bytes": int(r[1])} for r in self.vectors._db.execute(
            "SELECT c.relname, pg_relation_size(c.oid) FROM pg_class c WHERE c.relkind = 'i' "
            "AND c.relname LIKE 'embeddings_hnsw_%' ORDER BY c.relname")]

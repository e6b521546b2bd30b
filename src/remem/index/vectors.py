"""In-memory vector index: one per (database, model, field), loaded from the embeddings table.

* Exact cosine search (vectors are unit length, so a dot product) over float32 blocks of
  ``BLOCK`` rows: memory is the raw vector bytes plus at most one partly filled block plus
  small per-row metadata (≤ 1.2× raw for any store past a few thousand vectors).
* Incremental: each search first applies what changed since the last one — vectors created
  or re-embedded (``created_at`` ≥ the last seen, via an index) and deletions (a trigger-fed
  log) — with O(log n) checks when nothing changed.
* Scoped: the scope is applied to every result through per-row owner/agent/project codes
  before ranking; a row outside the scope can never be returned.
"""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..scope import Scope
from ..store.db import db_path

BLOCK = 4096
SPLIT_FROM = 8  # blocks (32k vectors): from here a search splits its scan over two threads
_POOL: list[Any] = []


def _pool() -> Any:
    if not _POOL:
        from concurrent.futures import ThreadPoolExecutor

        _POOL.append(ThreadPoolExecutor(max_workers=1, thread_name_prefix="remem-vscan"))
    return _POOL[0]


def _blas_controls() -> tuple[Any, Any] | None:
    """OpenBLAS's get/set thread-count functions, when numpy's BLAS is OpenBLAS (else None).

    Waking OpenBLAS's worker threads costs several milliseconds, far more than a
    matrix-vector product over a few thousand rows; small searches run on one thread.
    """
    import ctypes

    try:
        with open("/proc/self/maps", encoding="utf-8") as f:
            libs = list(dict.fromkeys(ln.split()[-1] for ln in f if "openblas" in ln.lower() and "/" in ln))
    except OSError:
        return None
    for path in libs:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for suffix in ("64_", ""):
            for prefix in ("scipy_openblas", "openblas"):
                get = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
                put = getattr(lib, f"{prefix}_set_num_threads{suffix}", None)
                if get is not None and put is not None:
                    return get, put
    return None


_BLAS: list[Any] = []


class _one_blas_thread:
    """Run matrix-vector products on one OpenBLAS thread: they are memory-bound, and waking
    the worker threads costs milliseconds per call."""

    def __enter__(self) -> None:
        if not _BLAS:
            _BLAS.append(_blas_controls())
        self.ctl = _BLAS[0]
        if self.ctl is not None:
            self.old = self.ctl[0]()
            self.ctl[1](1)

    def __exit__(self, *exc: object) -> None:
        if self.ctl is not None:
            self.ctl[1](self.old)


@dataclass
class _Codes:
    """Small string ↔ int table for owners, agents and projects."""

    ids: dict[str, int]

    def code(self, s: str) -> int:
        c = self.ids.get(s)
        if c is None:
            c = self.ids[s] = len(self.ids)
        return c


class VectorIndex:
    def __init__(self, model_id: str, field: str, dim: int, row_kind: str = "turn") -> None:
        self.model_id, self.field, self.dim, self.row_kind = model_id, field, dim, row_kind
        self.blocks: list[np.ndarray] = []
        self.n = 0                                     # slots used (including freed ones)
        self.row_ids: list[str | None] = []
        self.meta = np.zeros((0, 3), dtype=np.int32)   # owner, agent, project codes
        self.alive = np.zeros(0, dtype=bool)
        self.slot_of: dict[str, int] = {}              # row id → slot
        self.owners, self.agents, self.projects = _Codes({}), _Codes({}), _Codes({})
        self.seen_created = -1.0
        self.seen_delete_seq = 0
        self.lock = threading.Lock()

    # -- building ------------------------------------------------------------------------
    def _grow_meta(self, need: int) -> None:
        if need <= len(self.alive):
            return
        cap = max(need, int(len(self.alive) * 1.125) + 64)
        meta = np.zeros((cap, 3), dtype=np.int32)
        meta[: len(self.meta)] = self.meta
        alive = np.zeros(cap, dtype=bool)
        alive[: len(self.alive)] = self.alive
        self.meta, self.alive = meta, alive

    def _put(self, row_id: str, vec: bytes, owner: str, agent: str, project: str) -> None:
        v = np.frombuffer(vec, dtype=np.float32)
        if v.shape[0] != self.dim:
            return  # a vector of another dimension under the same model id: ignore it
        slot = self.slot_of.get(row_id)
        if slot is None:
            slot = self.n
            self.n += 1
            b, r = divmod(slot, BLOCK)
            if b >= len(self.blocks):
                self.blocks.append(np.zeros((min(BLOCK, 256), self.dim), dtype=np.float32))
            elif r >= len(self.blocks[b]):
                # the last block grows by a quarter at a time: at most ~25 % of one block is spare
                grown = np.zeros((min(BLOCK, int(len(self.blocks[b]) * 1.25) + 64), self.dim), dtype=np.float32)
                grown[: len(self.blocks[b])] = self.blocks[b]
                self.blocks[b] = grown
            self.row_ids.append(row_id)
            self.slot_of[row_id] = slot
            self._grow_meta(self.n)
        self.blocks[slot // BLOCK][slot % BLOCK] = v
        self.meta[slot] = (self.owners.code(owner), self.agents.code(agent), self.projects.code(project))
        self.alive[slot] = True

    def _drop(self, row_id: str) -> None:
        slot = self.slot_of.pop(row_id, None)
        if slot is not None:
            self.alive[slot] = False
            self.row_ids[slot] = None
            self.blocks[slot // BLOCK][slot % BLOCK] = 0.0

    def refresh(self, db: sqlite3.Connection) -> int:
        """Apply changes since the last refresh; returns how many rows changed."""
        changed = 0
        last_seq = db.execute("SELECT coalesce(max(seq), 0) FROM embedding_deletes").fetchone()[0]
        if last_seq > self.seen_delete_seq:
            for (rid,) in db.execute(
                    "SELECT row_id FROM embedding_deletes WHERE seq > ? AND model_id = ? AND field = ? "
                    "AND row_kind = ? ORDER BY seq", (self.seen_delete_seq, self.model_id, self.field,
                                                      self.row_kind)):
                self._drop(rid)
                changed += 1
            self.seen_delete_seq = last_seq
        newest = db.execute("SELECT max(created_at) FROM embeddings WHERE model_id = ? AND field = ?",
                            (self.model_id, self.field)).fetchone()[0]
        if newest is not None and newest > self.seen_created:
            # one write batch shares one created_at, so "newer than the last seen" misses nothing
            rows = db.execute(
                "SELECT row_id, vector, owner, agent, project FROM embeddings "
                "WHERE model_id = ? AND field = ? AND row_kind = ? AND created_at > ? ORDER BY created_at",
                (self.model_id, self.field, self.row_kind, self.seen_created))
            for row_id, vec, owner, agent, project in rows:
                self._put(row_id, vec, owner, agent, project)
                changed += 1
            self.seen_created = float(newest)
        return changed

    # -- querying ------------------------------------------------------------------------
    def _mask(self, scope: Scope) -> np.ndarray:
        n = self.n
        meta, alive = self.meta[:n], self.alive[:n]
        own = [self.owners.ids[o] for o in scope.owners if o in self.owners.ids]
        if not own:
            return np.zeros(n, dtype=bool)
        mask = alive & np.isin(meta[:, 0], own)
        if scope.agent:
            a = self.agents.ids.get(scope.agent)
            mask &= (meta[:, 1] == a) if a is not None else False
        if scope.project:
            p = self.projects.ids.get(scope.project)
            mask &= (meta[:, 2] == p) if p is not None else False
        return mask

    def search(self, query: np.ndarray, scope: Scope, k: int) -> list[tuple[str, float]]:
        """Top ``k`` (row id, cosine) inside ``scope``, best first."""
        if self.n == 0 or k <= 0:
            return []
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        if q.shape[0] != self.dim:
            return []
        mask = self._mask(scope)
        if not mask.any():
            return []
        scores = np.full(self.n, -np.inf, dtype=np.float32)
        rows = int(mask.sum())

        def score(blocks: range) -> None:
            for b in blocks:
                lo = b * BLOCK
                hi = min(self.n, lo + BLOCK)
                m = mask[lo:hi]
                if m.any():
                    s = self.blocks[b][: hi - lo] @ q
                    scores[lo:hi] = np.where(m, s, -np.inf)

        nb = len(self.blocks)
        with _one_blas_thread():
            if nb >= SPLIT_FROM:
                # memory-bound: two cores read the matrix in about half the time (numpy releases
                # the GIL inside the product)
                other = _pool().submit(score, range(nb // 2, nb))
                score(range(nb // 2))
                other.result()
            else:
                score(range(nb))
        kk = min(k, rows)
        top = np.argpartition(-scores, kk - 1)[:kk]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(self.row_ids[i], float(scores[i])) for i in top  # type: ignore[misc]
                if np.isfinite(scores[i]) and self.row_ids[i] is not None]

    def vectors_for(self, row_ids: list[str]) -> dict[str, np.ndarray]:
        """Stored vectors of some rows (for MMR); unknown ids are left out."""
        out = {}
        for rid in row_ids:
            slot = self.slot_of.get(rid)
            if slot is not None:
                out[rid] = self.blocks[slot // BLOCK][slot % BLOCK]
        return out

    def memory_bytes(self) -> dict[str, int]:
        vec = sum(b.nbytes for b in self.blocks)
        meta = self.meta.nbytes + self.alive.nbytes
        ids = sum(len(r) + 49 for r in self.row_ids if r) + 8 * len(self.row_ids)
        slots = len(self.slot_of) * 60  # dict entry (hash, key, value) + a small int, roughly
        raw = int((self.alive[: self.n]).sum()) * self.dim * 4
        return {"raw_vector_bytes": raw, "vector_bytes": vec, "meta_bytes": meta + ids + slots,
                "total_bytes": vec + meta + ids + slots}

    def __len__(self) -> int:
        return int(self.alive[: self.n].sum())


_INDEXES: dict[tuple[str, str, str, str], VectorIndex] = {}
_REG_LOCK = threading.Lock()


def db_key(db: sqlite3.Connection) -> str:
    return db_path(db) or str(id(db))


def get_index(db: sqlite3.Connection, model_id: str, field: str, dim: int) -> VectorIndex:
    """The shared, refreshed index for this database file, model and field."""
    key = (db_key(db), model_id, field, "turn")
    with _REG_LOCK:
        idx = _INDEXES.get(key)
        if idx is None or idx.dim != dim:
            idx = _INDEXES[key] = VectorIndex(model_id, field, dim)
    with idx.lock:
        idx.refresh(db)
    return idx


def search(db: sqlite3.Connection, scope: Scope, query: np.ndarray, model_id: str, field: str,
           k: int) -> list[tuple[str, float]]:
    idx = get_index(db, model_id, field, int(np.asarray(query).shape[-1]))
    with idx.lock:
        return idx.search(query, scope, k)


def has_vectors(db: sqlite3.Connection, model_id: str, field: str) -> bool:
    return db.execute("SELECT 1 FROM embeddings WHERE model_id = ? AND field = ? LIMIT 1",
                      (model_id, field)).fetchone() is not None


def forget(db: sqlite3.Connection | None = None) -> None:
    """Drop cached indexes (all, or this database's)."""
    with _REG_LOCK:
        if db is None:
            _INDEXES.clear()
        else:
            k = db_key(db)
            for key in [x for x in _INDEXES if x[0] == k]:
                del _INDEXES[key]


def info() -> list[dict[str, Any]]:
    return [{"db": k[0], "model": k[1], "field": k[2], "rows": len(v), **v.memory_bytes()}
            for k, v in _INDEXES.items()]

"""In-memory vector index: one per (store, model, field), loaded from the stored embeddings (``store.vectors``).

* Exact cosine search (vectors are unit length, so a dot product) over float32 blocks of
  ``BLOCK`` rows: memory is the raw vector bytes plus at most one partly filled block plus
  small per-row metadata (≤ 1.2× raw for any store past a few thousand vectors).
* Incremental: each search first applies what changed since the last one — vectors created
  or re-embedded (written after the last seen, via an index) and deletions (a trigger-fed
  log) — with O(log n) checks when nothing changed.
* Scoped: the scope is applied to every result through per-row owner/agent/project codes
  before ranking; a row outside the scope can never be returned.
* Large scopes (``APPROX_FROM`` rows and up) pre-select candidates with a sign sketch: one bit
  per dimension of (vector − the index's mean vector), compared by Hamming distance, then the
  candidates are scored exactly. Centring matters: embedders put every text in a narrow cone,
  so raw sign bits barely separate neighbours (measured on LoCoMo e5-small vectors: 5 % of the
  rows as candidates keep 98 % of the exact top 10 centred, 63 % uncentred;
  ``src/remem/bench/vector_approx.py``). The sketch costs 1/32 of the float bytes.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..scope import Scope
from ..store.protocols import VectorRows

BLOCK = 4096
SPLIT_FROM = 8  # blocks (32k vectors): from here a search splits its scan over two threads
APPROX_FROM = 20_000      # rows in scope: from here candidates come from the sign sketch …
CANDIDATE_SHARE = 0.05    # … this share of the scope's rows, scored exactly, …
CANDIDATES_MIN, CANDIDATES_MAX = 2_000, 10_000  # … within these bounds, …
OVERSAMPLE = 20           # … and at least this many per result asked for
_POOLS: dict[str, Any] = {}
_POOLS_LOCK = threading.Lock()


def _pool(name: str = "scan") -> Any:
    """One worker thread per purpose: ``scan`` splits one big scan, ``field`` runs a second
    field's search beside the first (kept apart so a field search may split its scan)."""
    with _POOLS_LOCK:
        if name not in _POOLS:
            from concurrent.futures import ThreadPoolExecutor

            _POOLS[name] = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"remem-v{name}")
        return _POOLS[name]


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
        self.center: np.ndarray | None = None          # mean vector the sketch is taken around
        self.center_rows = 0                           # live rows when it was taken
        self.sketch = np.zeros((0, 0), dtype=np.uint64)  # (words, slots) sign bits, one array
        self.version = 0                               # bumped by every write, for the scope masks
        self._masks: dict[tuple[Scope, int], np.ndarray] = {}
        self.owner_sum: dict[int, np.ndarray] = {}     # owner code → sum of its live vectors (float64)
        self.owner_rows: dict[int, int] = {}           # owner code → its live rows

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
        if slot is not None:
            self._unsum(slot)
        else:
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
        self.version += 1
        self.blocks[slot // BLOCK][slot % BLOCK] = v
        oc = self.owners.code(owner)
        self.meta[slot] = (oc, self.agents.code(agent), self.projects.code(project))
        self.alive[slot] = True
        if oc not in self.owner_sum:
            self.owner_sum[oc] = np.zeros(self.dim, dtype=np.float64)
        self.owner_sum[oc] += v
        self.owner_rows[oc] = self.owner_rows.get(oc, 0) + 1
        if self.center is not None:
            self._sketch_rows(slot, slot + 1)

    def _put_all(self, rows: Iterable[tuple[str, bytes, str, str, str]]) -> int:
        """The first load of an empty index: every row at once, as ``_put`` would put them one by one
        (10,000 vectors with their read: 0.126 → 0.104 s; the start of a cold CLI and of the daemon's
        warm-up)."""
        size = self.dim * 4
        slots: dict[str, int] = {}
        vecs: list[bytes] = []
        meta: list[tuple[int, int, int]] = []
        for row_id, vec, owner, agent, project in rows:
            if len(vec) != size:
                continue  # a vector of another dimension under the same model id: ignore it
            codes = (self.owners.code(owner), self.agents.code(agent), self.projects.code(project))
            at = slots.setdefault(row_id, len(vecs))
            if at == len(vecs):
                vecs.append(vec)
                meta.append(codes)
            else:  # a row written twice: its newest vector, as _put keeps
                vecs[at], meta[at] = vec, codes
        if not vecs:
            return 0
        arr = np.frombuffer(b"".join(vecs), dtype=np.float32).reshape(len(vecs), self.dim)
        self.blocks = [arr[i: i + BLOCK].copy() for i in range(0, len(vecs), BLOCK)]
        self.n = len(vecs)
        self.row_ids = list(slots)
        self.slot_of = slots
        self._grow_meta(self.n)
        self.meta[: self.n] = np.array(meta, dtype=np.int32)
        self.alive[: self.n] = True
        owners = self.meta[: self.n, 0]
        for oc in np.unique(owners).tolist():
            mine = owners == oc
            self.owner_sum[oc] = arr[mine].sum(axis=0, dtype=np.float64)
            self.owner_rows[oc] = int(mine.sum())
        self.version += 1
        if self.center is not None:
            for lo in range(0, self.n, BLOCK):
                self._sketch_rows(lo, min(self.n, lo + BLOCK))
        return self.n

    def _drop(self, row_id: str) -> None:
        slot = self.slot_of.pop(row_id, None)
        if slot is not None:
            self._unsum(slot)
            self.version += 1
            self.alive[slot] = False
            self.row_ids[slot] = None
            self.blocks[slot // BLOCK][slot % BLOCK] = 0.0

    def refresh(self, rows: VectorRows) -> int:
        """Apply changes since the last refresh (read from ``store.vectors``); returns how many rows changed."""
        changed = 0
        last_seq = rows.last_delete()
        if last_seq > self.seen_delete_seq:
            for rid in rows.deleted_since(self.seen_delete_seq, self.model_id, self.field, self.row_kind):
                self._drop(rid)
                changed += 1
            self.seen_delete_seq = last_seq
        newest = rows.newest(self.model_id, self.field)
        if newest is not None and newest > self.seen_created:
            # one write batch shares one created_at, so "newer than the last seen" misses nothing
            got = rows.written_since(self.model_id, self.field, self.seen_created, self.row_kind)
            if self.n == 0:
                changed += self._put_all(got)
            else:
                for row_id, vec, owner, agent, project in got:
                    self._put(row_id, vec, owner, agent, project)
                    changed += 1
            self.seen_created = newest
        return changed

    def _unsum(self, slot: int) -> None:
        """Take a live slot's vector out of its owner's sum (before it is replaced or dropped)."""
        if self.alive[slot]:
            oc = int(self.meta[slot, 0])
            self.owner_sum[oc] -= self.blocks[slot // BLOCK][slot % BLOCK]
            self.owner_rows[oc] -= 1

    def mean_vector(self, scope: Scope) -> np.ndarray | None:
        """The mean of the scope owners' vectors (kept as running sums; agent and project
        filters are not applied: this is the owner's "typical memory", not a search)."""
        codes = [self.owners.ids[o] for o in scope.owners if o in self.owners.ids]
        rows = sum(self.owner_rows.get(c, 0) for c in codes)
        if not rows:
            return None
        total = sum((self.owner_sum[c] for c in codes if self.owner_rows.get(c)), np.zeros(self.dim))
        return (total / rows).astype(np.float32)

    # -- sign sketch -------------------------------------------------------------------
    def _signs(self, vecs: np.ndarray) -> np.ndarray:
        """(words, rows) uint64: bit i of a row is set when its dimension i is above the centre."""
        assert self.center is not None
        bits = np.packbits(vecs > self.center, axis=1)
        pad = -bits.shape[1] % 8
        if pad:
            bits = np.pad(bits, ((0, 0), (0, pad)))
        return np.ascontiguousarray(bits.view(np.uint64).T)

    def _sketch_rows(self, lo: int, hi: int) -> None:
        """Sketch slots ``lo``–``hi`` (within one block), growing the sketch by a quarter at a time."""
        if self.sketch.shape[1] < hi:
            grown = np.zeros(((self.dim + 63) // 64, max(hi, int(self.sketch.shape[1] * 1.25) + BLOCK)),
                             dtype=np.uint64)
            grown[:, : self.sketch.shape[1]] = self.sketch
            self.sketch = grown
        b = lo // BLOCK
        self.sketch[:, lo:hi] = self._signs(self.blocks[b][lo - b * BLOCK: hi - b * BLOCK])

    def _build_sketch(self) -> None:
        """Take the centre from the live rows and sketch every row (again when the index has
        doubled since, so the centre follows what the store holds)."""
        live = int(self.alive[: self.n].sum())
        total = np.zeros(self.dim, dtype=np.float64)
        for blk in self.blocks:
            total += blk.sum(axis=0, dtype=np.float64)  # dropped rows are zeroed: they add nothing
        self.center = (total / max(live, 1)).astype(np.float32)
        self.center_rows = live
        self.sketch = np.zeros(((self.dim + 63) // 64, self.n), dtype=np.uint64)
        for b in range(len(self.blocks)):
            self._sketch_rows(b * BLOCK, min(self.n, (b + 1) * BLOCK))

    def _approx(self, q: np.ndarray, mask: np.ndarray, rows: int, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Slots and exact scores of the candidates nearest ``q`` by sign-sketch Hamming distance."""
        if self.center is None or int(self.alive[: self.n].sum()) >= 2 * self.center_rows:
            self._build_sketch()
        qw = self._signs(q[None, :])[:, 0]
        sk = self.sketch[:, : self.n]
        dist = np.bitwise_count(sk[0] ^ qw[0]).astype(np.int32)
        for w in range(1, len(qw)):
            dist += np.bitwise_count(sk[w] ^ qw[w])
        c = min(rows, max(k, CANDIDATES_MIN, OVERSAMPLE * k, min(CANDIDATES_MAX, int(rows * CANDIDATE_SHARE))))
        dist[~mask] = np.iinfo(np.int32).max
        cand = np.sort(np.argpartition(dist, c - 1)[:c]) if c < self.n else np.arange(self.n)
        cand = cand[mask[cand]]
        scores = np.empty(len(cand), dtype=np.float32)
        starts = np.searchsorted(cand, np.arange(len(self.blocks) + 1) * BLOCK)
        for b in range(len(self.blocks)):
            i, j = starts[b], starts[b + 1]
            if i < j:
                scores[i:j] = self.blocks[b][cand[i:j] - b * BLOCK] @ q
        return cand, scores

    # -- querying ------------------------------------------------------------------------
    def _mask(self, scope: Scope) -> np.ndarray:
        """Rows in ``scope`` (cached until the index changes: at 1M rows this costs milliseconds)."""
        key = (scope, self.version)
        if self._masks.get(key) is None:
            if len(self._masks) > 16:
                self._masks.clear()
            self._masks[key] = self._scope_rows(scope)
        return self._masks[key]

    def _scope_rows(self, scope: Scope) -> np.ndarray:
        n = self.n
        meta, alive = self.meta[:n], self.alive[:n]
        own = [self.owners.ids[o] for o in scope.owners if o in self.owners.ids]
        if not own:
            return np.zeros(n, dtype=bool)
        mask = alive & ((meta[:, 0] == own[0]) if len(own) == 1 else np.isin(meta[:, 0], own))
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
        rows = int(mask.sum())
        if not rows:
            return []
        if rows >= APPROX_FROM:
            with _one_blas_thread():
                slots, exact = self._approx(q, mask, rows, k)
            kk = min(k, len(slots))
            top = np.argpartition(-exact, kk - 1)[:kk]
            top = top[np.argsort(-exact[top], kind="stable")]
            return [(self.row_ids[slots[i]], float(exact[i])) for i in top  # type: ignore[misc]
                    if self.row_ids[slots[i]] is not None]
        scores = np.full(self.n, -np.inf, dtype=np.float32)

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
        meta = self.meta.nbytes + self.alive.nbytes + self.sketch.nbytes
        ids = sum(len(r) + 49 for r in self.row_ids if r) + 8 * len(self.row_ids)
        slots = len(self.slot_of) * 60  # dict entry (hash, key, value) + a small int, roughly
        raw = int((self.alive[: self.n]).sum()) * self.dim * 4
        return {"raw_vector_bytes": raw, "vector_bytes": vec, "meta_bytes": meta + ids + slots,
                "total_bytes": vec + meta + ids + slots}

    def __len__(self) -> int:
        return int(self.alive[: self.n].sum())


class VectorIndexes:
    """The in-memory indexes of one store (one per model and field), refreshed from ``store.vectors``
    before each use. Held by the store's RecallContext: a second handle on the same database keeps
    its own."""

    def __init__(self, rows: VectorRows) -> None:
        self.rows = rows
        self._indexes: dict[tuple[str, str, str], VectorIndex] = {}
        self._lock = threading.Lock()

    def get(self, model_id: str, field: str, dim: int) -> VectorIndex:
        """The refreshed index for this model and field."""
        key = (model_id, field, "turn")
        with self._lock:
            idx = self._indexes.get(key)
            if idx is None or idx.dim != dim:
                idx = self._indexes[key] = VectorIndex(model_id, field, dim)
        with idx.lock:
            idx.refresh(self.rows)
        return idx

    def has_vectors(self, model_id: str, field: str) -> bool:
        return self.rows.has(model_id, field)

    def search(self, scope: Scope, query: np.ndarray, model_id: str, field: str, k: int) -> list[tuple[str, float]]:
        idx = self.get(model_id, field, int(np.asarray(query).shape[-1]))
        with idx.lock:
            return idx.search(query, scope, k)

    def search_fields(self, scope: Scope, query: np.ndarray, model_id: str, fields: list[str],
                      k: int) -> dict[str, list[tuple[str, float]]]:
        """:meth:`search` over several fields at once: the indexes refresh here (one database
        connection, one thread), then the scans run side by side (numpy releases the GIL)."""
        dim = int(np.asarray(query).shape[-1])
        idxs = {f: self.get(model_id, f, dim) for f in fields}

        def one(f: str) -> list[tuple[str, float]]:
            with idxs[f].lock:
                return idxs[f].search(query, scope, k)

        if len(fields) < 2:
            return {f: one(f) for f in fields}
        later = _pool("field").submit(one, fields[0])
        out = {f: one(f) for f in fields[1:]}
        return {fields[0]: later.result(), **out}

    def mean_similarity(self, scope: Scope, query: np.ndarray, model_id: str, field: str) -> float | None:
        """The query's cosine to the scope owners' mean vector of ``field``: how close a typical
        memory of theirs is, the baseline a related hit must stand out from (None: no vectors)."""
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        idx = self.get(model_id, field, int(q.shape[0]))
        with idx.lock:
            mean = idx.mean_vector(scope)
        return None if mean is None else float(mean @ q)

    def load(self, model_id: str, fields: list[str], dim: int) -> int:
        """Load (or refresh) the indexes of these fields now, not on the first search that needs them
        (2–3 s at 100k turns); the rows they hold. Fields without vectors of the model are skipped."""
        return sum(len(self.get(model_id, f, dim)) for f in fields if self.rows.has(model_id, f))

    def forget(self) -> None:
        """Drop the loaded indexes (the next search reloads them)."""
        with self._lock:
            self._indexes.clear()

    def info(self) -> list[dict[str, Any]]:
        return [{"model": k[0], "field": k[1], "rows": len(v), **v.memory_bytes()}
                for k, v in self._indexes.items()]

"""The sign-sketch pre-selection of large vector scopes (remem.recall.vectors)."""

from __future__ import annotations

import numpy as np
import pytest

from remem.recall import vectors
from remem.scope import Scope


def clustered(n: int, dim: int = 64, seed: int = 3) -> np.ndarray:
    """Unit vectors shaped like an embedder's: one shared direction, clusters, noise."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(40, dim))
    x = 4 * rng.normal(size=dim) + centres[rng.integers(0, 40, n)] + 0.5 * rng.normal(size=(n, dim))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture
def small_approx(monkeypatch):
    """The large-scope path at test size: from 500 rows, 10 candidates per result."""
    monkeypatch.setattr(vectors, "APPROX_FROM", 500)
    monkeypatch.setattr(vectors, "CANDIDATES_MIN", 0)
    monkeypatch.setattr(vectors, "CANDIDATE_SHARE", 0.0)
    monkeypatch.setattr(vectors, "OVERSAMPLE", 10)


def build(x: np.ndarray, owner_of=lambda i: "o") -> vectors.VectorIndex:
    idx = vectors.VectorIndex("m", "f", x.shape[1])
    for i, v in enumerate(x):
        idx._put(f"r{i}", v.tobytes(), owner_of(i), "a", "p")
    return idx


def exact_top(idx: vectors.VectorIndex, q: np.ndarray, scope: Scope, k: int, monkeypatch) -> list[str]:
    with monkeypatch.context() as m:
        m.setattr(vectors, "APPROX_FROM", 10 ** 9)
        return [r for r, _ in idx.search(q, scope, k)]


def test_sketch_keeps_the_exact_neighbours_and_scores(small_approx, monkeypatch):
    x = clustered(3000)
    idx = build(x[:2900])
    scope = Scope.of("o")
    kept = []
    for q in x[2900:]:
        got = idx.search(q, scope, 10)
        want = exact_top(idx, q, scope, 10, monkeypatch)
        kept.append(len({r for r, _ in got} & set(want)) / 10)
        for r, s in got:  # candidates are scored exactly
            assert s == pytest.approx(float(x[int(r[1:])] @ q), abs=1e-5)
    assert idx.center is not None, "the large-scope path was not taken"
    assert np.mean(kept) >= 0.95


def test_uncentred_signs_would_lose_the_neighbours(small_approx, monkeypatch):
    """Why the sketch is centred: with the shared direction left in, sign bits barely differ."""
    x = clustered(3000)
    idx = build(x[:2900])
    idx._build_sketch()
    idx.center = np.zeros_like(idx.center)
    for b in range(len(idx.blocks)):
        idx._sketch_rows(b * vectors.BLOCK, min(idx.n, (b + 1) * vectors.BLOCK))
    idx.center_rows = 10 ** 9  # keep this (bad) centre
    scope = Scope.of("o")
    kept = [len({r for r, _ in idx.search(q, scope, 10)} & set(exact_top(idx, q, scope, 10, monkeypatch))) / 10
            for q in x[2900:]]
    assert np.mean(kept) < 0.9


def test_sketch_respects_scope_and_follows_writes(small_approx):
    x = clustered(2000)
    idx = build(x, owner_of=lambda i: "alice" if i % 2 else "bob")
    alice = Scope.of("alice")
    q = x[1]
    hits = idx.search(q, alice, 50)
    assert hits and all(int(r[1:]) % 2 == 1 for r, _ in hits)
    assert idx.search(x[0], Scope.of("carol"), 5) == []
    # a row written after the sketch was taken is found; a dropped one never comes back
    idx._put("new", q.tobytes(), "alice", "a", "p")
    assert idx.search(q, alice, 1)[0][0] in ("new", "r1")
    idx._drop("r1")
    idx._drop("new")
    assert {"r1", "new"}.isdisjoint(r for r, _ in idx.search(q, alice, 50))
    # the centre is taken again once the index has doubled
    first = idx.center_rows
    for i, v in enumerate(clustered(2100, seed=9)):
        idx._put(f"m{i}", v.tobytes(), "alice", "a", "p")
    idx.search(q, alice, 5)
    assert idx.center_rows > first


def test_sketch_memory_is_a_thirty_second_of_the_vectors(small_approx):
    x = clustered(4096 * 2, dim=384)
    idx = build(x)
    idx.search(x[0], Scope.of("o"), 5)
    assert idx.sketch.nbytes == len(x) * 384 // 8
    mem = idx.memory_bytes()
    assert mem["total_bytes"] / mem["raw_vector_bytes"] <= 1.2


def test_owner_means_follow_puts_replacements_and_drops():
    """The packet gate's baseline: each owner's mean vector, kept as running sums."""
    x = clustered(300, seed=5)
    idx = build(x[:200], owner_of=lambda i: "a" if i % 3 else "b")
    idx._put("r7", x[250].tobytes(), "a", "a", "p")      # replaced: its old vector leaves the sum
    idx._put("r8", x[251].tobytes(), "b", "a", "p")      # … and it may move to another owner
    for rid in ("r10", "r11", "r12"):
        idx._drop(rid)
    idx._drop("nope")                                    # unknown ids change nothing
    live = {f"r{i}": x[i] for i in range(200) if f"r{i}" not in ("r10", "r11", "r12")}
    live["r7"], live["r8"] = x[250], x[251]
    owner = {r: ("a" if int(r[1:]) % 3 else "b") for r in live}
    owner["r8"] = "b"
    for who in ("a", "b"):
        want = np.mean([v for r, v in live.items() if owner[r] == who], axis=0)
        assert np.allclose(idx.mean_vector(Scope.of(who)), want, atol=1e-5)
    both = np.mean(list(live.values()), axis=0)
    assert np.allclose(idx.mean_vector(Scope.of(["a", "b"])), both, atol=1e-5)
    assert idx.mean_vector(Scope.of("stranger")) is None


class _Rows:
    """The few ``VectorRows`` reads ``refresh`` makes, over a list (row id, vector, owner, agent, project)."""

    def __init__(self, rows):
        self.rows = rows

    def last_delete(self):
        return 0

    def newest(self, model_id, field):
        return 1.0 if self.rows else None

    def written_since(self, model_id, field, after, row_kind):
        return iter(self.rows)


def test_first_load_at_once_equals_row_by_row(small_approx, monkeypatch):
    """An empty index loads every row at once (the cold CLI's and the warm-up's first refresh): the
    same slots, scopes, owner means, sketch and neighbours as putting the rows one by one, across
    several blocks; a vector of another size is skipped and a row written twice keeps its last vector."""
    monkeypatch.setattr(vectors, "BLOCK", 256)
    x = clustered(700, seed=9)
    who = lambda i: ("a", "codex", "p1") if i % 4 else ("b", "claude", "p2")  # noqa: E731
    rows = [(f"r{i}", x[i].tobytes(), *who(i)) for i in range(650)]
    rows.insert(100, ("odd", np.ones(10, dtype=np.float32).tobytes(), "a", "codex", "p1"))
    rows.append(("r5", x[690].tobytes(), "a", "codex", "p1"))           # r5 again, newer
    one = vectors.VectorIndex("m", "f", x.shape[1])
    for r in rows:
        one._put(*r)
    bulk = vectors.VectorIndex("m", "f", x.shape[1])
    assert bulk.refresh(_Rows(rows)) == 650
    assert bulk.n == one.n == 650 and bulk.row_ids == one.row_ids and bulk.slot_of == one.slot_of
    assert np.array_equal(bulk.meta[:650], one.meta[:650]) and bulk.alive[:650].all()
    assert all(np.array_equal(b[: len(o)], o[: len(b)]) for b, o in zip(bulk.blocks, one.blocks, strict=True))
    for s in (Scope.of("a"), Scope.of("b"), Scope.of(["a", "b"]), Scope.of("a", agent="codex", project="p1")):
        assert np.allclose(bulk.mean_vector(s), one.mean_vector(s), atol=1e-6)
        for q in x[650:660]:
            assert [r for r, _ in bulk.search(q, s, 10)] == [r for r, _ in one.search(q, s, 10)]
            assert exact_top(bulk, q, s, 10, monkeypatch) == exact_top(one, q, s, 10, monkeypatch)
    bulk._put("r700", x[699].tobytes(), "b", "claude", "p2")               # later writes go row by row
    one._put("r700", x[699].tobytes(), "b", "claude", "p2")
    assert [r for r, _ in bulk.search(x[699], Scope.of("b"), 5)] == [r for r, _ in one.search(x[699], Scope.of("b"), 5)]

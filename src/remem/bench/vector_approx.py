#!/usr/bin/env python3
"""How much of the exact vector top-k the sign-sketch pre-selection keeps, on real vectors.

Large scopes (``remem.recall.vectors.APPROX_FROM`` rows and up) score only the candidates
nearest the query by the Hamming distance of their centred sign bits. This measures the
share of the exact top 10 / top 100 that survives, for several candidate counts, on the
vectors of an existing store (your own ``$REMEM_HOME/remem.db``, or the one
``remem bench locomo --data FILE --home DIR`` leaves in DIR). Queries are stored vectors held out of the
index, so no model is needed. Random vectors would say nothing here: real embeddings are
clustered and share one dominant direction, which is why the sketch is centred.

    .venv/bin/python -m remem.bench.vector_approx --db PATH/remem.db [--queries 200] [--ratios 2,5,10,20] [--write]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from remem.recall import vectors
from remem.scope import Scope
from remem.store import open_store


def load(db: str, model: str | None) -> tuple[str, np.ndarray]:
    path = Path(db).resolve()
    store = open_store(f"sqlite:///{path}", path.parent, readonly=True)
    try:
        if model is None:
            counts = store.vectors.models()  # type: ignore[attr-defined]
            if not counts:
                raise SystemExit(f"{db}: no embeddings")
            model = max(counts, key=lambda m: counts[m])
        vecs = [np.frombuffer(v, dtype=np.float32) for v in store.vectors.all_of(model)]  # type: ignore[attr-defined]
    finally:
        store.close()
    dim = max((len(v) for v in vecs), default=0)
    return str(model), np.array([v for v in vecs if len(v) == dim], dtype=np.float32)


def measure(x: np.ndarray, queries: int, ratios: list[float], seed: int = 5) -> list[dict[str, float]]:
    rng = np.random.default_rng(seed)
    held = rng.choice(len(x), size=min(queries, len(x) // 5), replace=False)
    keep = np.setdiff1d(np.arange(len(x)), held)
    idx = vectors.VectorIndex("m", "f", x.shape[1])
    for i in keep:
        idx._put(f"r{i}", x[i].tobytes(), "o", "a", "p")
    scope = Scope.of("o")
    saved = (vectors.APPROX_FROM, vectors.CANDIDATE_SHARE, vectors.CANDIDATES_MIN, vectors.OVERSAMPLE)
    out = []
    try:
        vectors.APPROX_FROM = 10 ** 12
        exact = [idx.search(x[i], scope, 100) for i in held]
        for ratio in ratios:
            vectors.APPROX_FROM, vectors.CANDIDATE_SHARE, vectors.CANDIDATES_MIN = 0, 0.0, 0
            vectors.OVERSAMPLE = ratio  # type: ignore[assignment]
            r: dict[int, float] = {}
            ms = 0.0
            for k in (10, 100):
                t0 = time.perf_counter()
                approx = [idx.search(x[i], scope, k) for i in held]
                ms = (time.perf_counter() - t0) / len(held) * 1000
                r[k] = float(np.mean([len({a for a, _ in e[:k]} & {a for a, _ in p}) / min(k, len(e))
                                      for e, p in zip(exact, approx, strict=True)]))
            out.append({"ratio": ratio, "recall@10": round(100 * r[10], 1), "recall@100": round(100 * r[100], 1),
                        "ms": round(ms, 2)})
    finally:
        vectors.APPROX_FROM, vectors.CANDIDATE_SHARE, vectors.CANDIDATES_MIN, vectors.OVERSAMPLE = saved
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", required=True, help="a remem.db holding embeddings")
    ap.add_argument("--model", help="model id (default: the one with most vectors)")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--ratios", default="2,5,10,20", help="candidates per result asked for")
    ap.add_argument("--write", action="store_true", help="update the section in bench/RESULTS.md")
    a = ap.parse_args(argv)
    model, x = load(a.db, a.model)
    rows = measure(x, a.queries, [int(r) for r in a.ratios.split(",")])
    lines = [f"{len(x)} vectors of `{model}`, {min(a.queries, len(x) // 5)} held-out rows as queries; "
             f"the product uses max({vectors.OVERSAMPLE} × k, {vectors.CANDIDATES_MIN}, "
             f"{vectors.CANDIDATE_SHARE:.0%} of the scope's rows up to {vectors.CANDIDATES_MAX}) candidates "
             f"from {vectors.APPROX_FROM} rows in scope.", "",
             "| candidates per result | exact top 10 kept % | exact top 100 kept % | ms / search (k = 100) |",
             "|---|---|---|---|"]
    lines += [f"| {r['ratio']} × k | {r['recall@10']} | {r['recall@100']} | {r['ms']} |" for r in rows]
    lines += ["", "Read the rows by candidates per result, not by store size: a small store here is far below "
              f"the {vectors.APPROX_FROM} rows where the pre-selection starts (at 100k rows it scores 5,000 "
              "candidates for k = 100). Centring is what makes sign bits work on embeddings: on clustered "
              "vectors with one shared direction (`tests/test_vector_sketch.py`) raw signs with 10 candidates "
              "per result keep about 62 % of the exact top 10, centred ones all of it."]
    print("\n".join(lines))
    if a.write:
        from results import update_section

        update_section("Vector pre-selection", "Reproduce: `remem bench locomo --data ../shared/bench/locomo-dev.json "
                       "--home DIR` (once, for real e5-small vectors), then `.venv/bin/python "
                       "src/remem/bench/vector_approx.py --db DIR/remem.db --queries 400 --write`\n\n" + "\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

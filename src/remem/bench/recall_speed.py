#!/usr/bin/env python3
"""Recall speed on generated stores: turn_start and search p50 / p95, vector index memory.

For each size a fresh home gets N synthetic coding-agent turns through the real write
pipeline (``Remem.add_turns``: redaction, CJK indexing, entities, FTS triggers). Embedding
100k turns with the default model would take hours on 2 cores, so the embeddings table is
filled with random unit vectors of the configured model's id and dimension instead (one
"summary" vector per turn, an "actions" vector for half of them): the vector search does
exactly the work it does on real vectors. Queries are embedded by the real model, so the
timings include the query embedding. Larger sizes are estimated from the measured curve.

    remem bench speed --sizes 10000,100000 [--queries 200] [--json]

With ``--real`` the turns are real-shaped (``bench/realistic.py``: request, tool calls with
kilobytes of file reads / test logs / diffs / tracebacks, reply; ~15 % Chinese), they go through
the same write pipeline as TurnIn values (no files, for speed), the timed prompts are requests
from the same generator (another seed; every tenth with an error line), and the report adds the
database bytes per turn against the raw text bytes per turn. Vectors stay random in both modes.

With ``--spaced MINUTES`` each prompt comes that long after the one before, as a user types them:
the caches that keep for a while (word document frequencies, scope counts) see the time pass
(their clocks move; no turn is written between prompts, which measured no slower). Without it the
200 prompts come within seconds, and every cache is as warm as it gets.

The timing starts right after the warm-up a daemon runs at its start (``Remem.warm``, then its heap is
frozen: ``server/heap.py``): the first prompts of a fresh daemon. ``--warm-prompts N`` first answers N
prompts of another seed, untimed: a daemon that has been running (pages mapped, caches filled).
"""

from __future__ import annotations

import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

WORDS = ("migrate schema index query cache retry timeout flaky test fixture deploy docker build lint "
         "typecheck refactor parser tokenizer embed vector search session owner project hook daemon "
         "server route auth token login logout user profile billing invoice payment webhook queue "
         "worker job cron backup restore export import sync watermark checkpoint redact secret config "
         "yaml json toml pytest ruff mypy numpy sqlite fts5 trigram bm25 rrf mmr packet budget viewer "
         "browser chart table column row transaction lock wal vacuum upgrade downgrade release tag "
         "changelog readme docs api client sdk cli flag option argument env variable path file folder").split()
ZH = ["数据库", "迁移", "测试", "缓存", "部署", "登录", "用户", "配置", "索引", "搜索"]
ERRORS = ["ModuleNotFoundError: No module named 'yaml'", "TimeoutError: operation timed out",
          "sqlite3.OperationalError: database is locked", "TS2304: Cannot find name 'foo'",
          "npm ERR! code ERESOLVE", "fatal: not a git repository"]


_SYL = "ba be bi bo bu ka ke ki ko ku la le li lo lu ma me mi mo mu na ne ni no nu ra re ri ro ru " \
       "sa se si so su ta te ti to tu va ve vi vo vu za ze zi zo zu".split()
_RARE: list[str] = []


def _rare_vocab(n: int = 30_000) -> list[str]:
    """Identifier-like words (function names, file stems, people, products): the long tail."""
    if not _RARE:
        r = random.Random(5)
        seen: set[str] = set()
        while len(seen) < n:
            w = "".join(r.choice(_SYL) for _ in range(r.randint(2, 4)))
            if r.random() < 0.3:
                w += "_" + r.choice(WORDS)
            seen.add(w)
        _RARE.extend(sorted(seen))
    return _RARE


def _zipf_word(rng: random.Random) -> str:
    """Real text is Zipfian with a long tail: common words half the time, then ranks of a
    30,000-word vocabulary drawn log-uniformly (Zipf-like: a few frequent, most rare)."""
    if rng.random() < 0.5:
        i = min(len(WORDS) - 1, int(rng.paretovariate(1.1)) - 1)
        return WORDS[i] if rng.random() < 0.7 else rng.choice(WORDS)
    rare = _rare_vocab()
    return rare[min(len(rare) - 1, int(len(rare) ** rng.random()) - 1)]


def make_turns(n: int, seed: int = 7, chunk: int = 0) -> Iterator[list[Any]]:
    """The ``n`` synthetic turns in lists of ``chunk`` (all at once when 0): a million turns
    never sit in memory together."""
    from remem.model import ToolCall, TurnIn

    rng = random.Random(seed)
    out = []
    t0 = time.time() - 400 * 86400
    for i in range(n):
        words = [_zipf_word(rng) for _ in range(rng.randint(8, 40))]
        if rng.random() < 0.05:
            words += rng.sample(ZH, 2)
        failed = rng.random() < 0.05
        actions = [ToolCall(name="Bash", input=f"pytest tests/test_{rng.choice(WORDS)}.py",
                            output=rng.choice(ERRORS) if failed else "ok", is_error=failed)] \
            if rng.random() < 0.5 else []
        ts = t0 + i * (400 * 86400 / max(1, n))
        out.append(TurnIn(request=" ".join(words), reply=" ".join(_zipf_word(rng) for _ in range(rng.randint(10, 60))),
                          actions=actions, owner="speed", agent=rng.choice(("claude-code", "codex", "cursor")),
                          project=f"/srv/p{rng.randint(0, 19)}", session_id=f"s{i // 20}",
                          source_key=f"speed:{i}", status="failed" if failed else "succeeded",
                          started_at=ts, ended_at=ts + 30))
        if chunk and len(out) == chunk:
            yield out
            out = []
    if out:
        yield out


REAL_OWNER, REAL_PROJECT = "speed", "/home/dev/webshop"


def make_real_turns(n: int, seed: int = 7, chunk: int = 0, stats: Any = None) -> Iterator[list[Any]]:
    """``n`` real-shaped turns (the generator of ``bench/realistic.py``) as TurnIn lists of
    ``chunk``; ``stats`` (a ``realistic.Generated``) collects their raw text bytes."""
    from remem.bench import realistic as rl
    from remem.model import ToolCall, TurnIn

    rng = random.Random(seed)
    stats = stats if stats is not None else rl.Generated()
    t = time.time() - 400 * 86400
    step = 400 * 86400 / max(1, n)
    out: list[Any] = []
    i = 0
    while i < n:
        project = rng.choice(("/home/dev/webshop", "/home/dev/etl-jobs", "/home/dev/remem", "/home/dev/billing-api",
                              "/home/dev/mlkit", "/home/dev/infra"))
        tx = rl._Text(rng, project)
        agent = "codex" if rng.random() < 0.3 else "claude-code"
        sid = f"s{i}"
        for _ in range(min(n - i, max(1, int(rng.lognormvariate(2.3, 0.8))))):
            req, calls, reply = rl._turn(tx, stats)
            actions = [ToolCall(name=name, input=json.dumps(inp), output=o, is_error=err)
                       for name, inp, o, err in calls]
            out.append(TurnIn(request=req, reply=reply, actions=actions, owner=REAL_OWNER, agent=agent,
                              project=project, session_id=sid, source_key=f"real:{i}", status="succeeded",
                              started_at=t, ended_at=t + 30))
            t += step
            i += 1
            if chunk and len(out) == chunk:
                yield out
                out = []
    if out:
        yield out


# a few prompts name a time, as users ask ("what did we do yesterday"): those read turns by their time
TIME_PHRASES = ("what did we do yesterday?", "continue from last week:", "today:", "3 days ago we started this:",
                "上周的改动：", "昨天做到哪了？", "on 2025-11-20:")


def prompts(n: int, real: bool, seed: int = 3) -> list[str]:
    """The timed prompts: real-shaped ones (``real_queries``), or 3–9 Zipf words, every tenth with an
    error line."""
    if real:
        return real_queries(n, seed)
    rng = random.Random(seed)
    qs = [" ".join(_zipf_word(rng) for _ in range(rng.randint(3, 9))) + ("?" if i % 3 else "") for i in range(n)]
    qs[::10] = [q + " " + rng.choice(ERRORS) for q in qs[::10]]
    return qs


def real_queries(n: int, seed: int = 3) -> list[str]:
    """Prompts as users type them: generator requests (some Chinese), every tenth with an error line,
    one in 25 opening with a time (TIME_PHRASES)."""
    from remem.bench import realistic as rl

    rng = random.Random(seed)
    stats = rl.Generated()
    qs: list[str] = []
    while len(qs) < n:
        tx = rl._Text(rng, REAL_PROJECT)
        req, calls, _reply = rl._turn(tx, stats)
        if len(qs) % 10 == 0:
            errs = [line for _n, _i, o, e in calls if e for line in o.splitlines() if "Error" in line]
            req += "\n" + (errs[-1] if errs else f"{rng.choice(rl.ERRORS)}: {tx.mod().funcs[0][0]}() failed")
        if len(qs) % 25 == 12:
            req = TIME_PHRASES[len(qs) // 25 % len(TIME_PHRASES)] + " " + req
        qs.append(req[:2000])
    return qs


def db_bytes(home: str) -> int:
    """The store on disk: remem.db and its WAL / shm, once every handle is closed (the last
    connection to close checkpoints the WAL into the database file)."""
    return sum(f.stat().st_size for f in Path(home).glob("remem.db*"))


def fill_vectors(mem: Any, model_id: str, dim: int, seed: int = 11) -> int:
    import numpy as np

    rng = np.random.default_rng(seed)
    vectors = mem.store.vectors
    rows = vectors.targets()
    n = 0
    for i in range(0, len(rows), 5000):
        chunk = rows[i:i + 5000]
        vec = rng.standard_normal((len(chunk), dim)).astype(np.float32)
        vec /= np.linalg.norm(vec, axis=1, keepdims=True)
        batch = []
        for r, v in zip(chunk, vec, strict=True):
            batch.append(("turn", r[0], "summary", model_id, dim, v.tobytes(), r[4], r[1], r[2], r[3]))
            if r[5]:
                batch.append(("turn", r[0], "actions", model_id, dim, v[::-1].copy().tobytes(), r[4], r[1], r[2], r[3]))
        vectors.put_done(batch, [r[0] for r in chunk])
        n += len(batch)
    from remem.embed.worker import settle

    settle(mem.store)  # as the embedding worker does when its backlog is drained (PostgreSQL: HNSW)
    return n


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(p * (len(xs) - 1) + 0.5))], 2)


def _rss_mb() -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return 0.0


def build(home: str, n: int, model: str, say: Callable[[str], None], real: bool = False) -> dict[str, Any]:
    """A store of ``n`` synthetic (``real``: real-shaped) turns with random vectors in ``home``."""
    from remem.bench.realistic import Generated
    from remem.core import Remem

    mem = Remem(home, env={"REMEM_EMBEDDING_MODEL": model})
    emb = mem.embedder()
    if emb is None:
        raise RuntimeError(f"embedder {model!r} unavailable: {mem.embedder_error}")
    stats = Generated()
    gen_s = 0.0
    t0 = time.perf_counter()
    parts = make_real_turns(n, chunk=500, stats=stats) if real else make_turns(n, chunk=2000)
    while True:
        g = time.perf_counter()
        part = next(parts, None)
        gen_s += time.perf_counter() - g
        if part is None:
            break
        mem.add_turns(part)
    ingest_s = time.perf_counter() - t0 - gen_s
    t0 = time.perf_counter()
    mem.index_pending(embed=False)  # entities + trigram index: the background job, run now
    index_s = time.perf_counter() - t0
    say(f"{n}: ingested in {ingest_s:.0f}s, indexed in {index_s:.0f}s")
    t0 = time.perf_counter()
    nvec = fill_vectors(mem, emb.model_id, emb.dim)
    fill_s = time.perf_counter() - t0
    mem.close()
    out = {"turns": n, "vectors": nvec, "model": emb.model_id, "real": real, "ingest_s": round(ingest_s, 1),
           "index_s": round(index_s, 1), "vector_fill_s": round(fill_s, 1)}
    if real:
        raw = sum(stats.turn_bytes)
        size = db_bytes(home)
        out.update(raw_bytes_per_turn=round(raw / max(1, n)), db_bytes_per_turn=round(size / max(1, n)),
                   db_mb=round(size / 1e6, 1), storage_ratio=round(size / max(1, raw), 2),
                   chinese_share=round(stats.chinese / max(1, n), 3))
    return out


def spread_clocks(offset: float) -> None:
    """The time-bounded caches' clocks ``offset`` seconds ahead (0: back to the real time)."""
    from remem.store import dfcache
    from remem.store.sqlite import candidates

    dfcache.clock = (lambda: time.time() + offset) if offset else time.time
    candidates.monotonic = (lambda: time.monotonic() + offset) if offset else time.monotonic


def measure(n: int, *, queries: int, model: str, say: Callable[[str], None], keep: str | None = None,
            real: bool = False, spaced: float = 0.0, warm_prompts: int = 0) -> dict[str, Any]:
    """Build (or, with ``keep``, reuse) a store of ``n`` turns and time ``queries`` prompts on it
    (``spaced`` minutes apart, after ``warm_prompts`` untimed ones: module doc)."""
    from remem.core import Remem
    from remem.recall import channels, packet
    from remem.server import heap

    # every size embeds its queries afresh: each size's handle has its own context (and query vectors)

    with tempfile.TemporaryDirectory(prefix="remem-speed-") as tmp:
        home = os.path.join(keep, f"real-{n}" if real else str(n)) if keep else tmp
        done = Path(home, "built.json")
        if done.exists():
            built = json.loads(done.read_text())
            say(f"{n}: reusing the store in {home}")
        else:
            if Path(home, "remem.db").exists():
                raise RuntimeError(f"{home} holds a store that was not finished; remove it first")
            built = build(home, n, model, say, real=real)
            if keep:
                done.write_text(json.dumps(built))
        mem = Remem(home, env={"REMEM_EMBEDDING_MODEL": model})
        emb = mem.embedder()
        onnx = mem.prepare_onnx(wait=True)  # as the daemon runs them
        owner, project = (REAL_OWNER, REAL_PROJECT) if real else ("speed", "/srv/p3")
        qs = prompts(queries, real)
        t0 = time.perf_counter()
        mem.warm()  # as the daemon starts: the model, the vector indexes, the word counts
        load_s = time.perf_counter() - t0
        heap.settle()  # and sets its heap aside from the collector
        mem.search("warm up the index", owner=owner, k=10)
        for q in prompts(warm_prompts, real, seed=5):  # a daemon that has answered these already
            mem.turn_start(q, owner=owner, project=project)
        lat: dict[str, list[float]] = {"turn_start": [], "search": [], "query_embedding": []}
        for i, q in enumerate(qs, start=1):
            if spaced:
                spread_clocks(i * spaced * 60)
            a = time.perf_counter()
            emb.embed_query(packet.head_and_tail(q + " (timing)", *channels.QUERY_EMBED_TOKENS))  # as recall does
            b = time.perf_counter()
            mem.turn_start(q, owner=owner, project=project)
            c = time.perf_counter()
            mem.search(q, owner=owner, k=10)  # the same prompt: its vector comes from the small query cache
            d = time.perf_counter()
            mem.search(q + " again", owner=owner, k=10)
            e = time.perf_counter()
            lat["query_embedding"].append((b - a) * 1000)
            lat["turn_start"].append((c - b) * 1000)
            lat["search"].append((e - d) * 1000)
            del d
        info = mem.recall.vectors.info()
        raw = sum(i["raw_vector_bytes"] for i in info)
        total = sum(i["total_bytes"] for i in info)
        mem.recall.vectors.forget()  # the process's memory below is measured without this size's index
        mem.close()
        spread_clocks(0)
        heap.unsettle()   # this size's objects may go now
    return {**built, "spaced_minutes": spaced, "warm_prompts": warm_prompts, "onnx": onnx, "index_load_s": round(load_s, 2),
            **{f"{k}_p50_ms": round(statistics.median(v), 2) for k, v in lat.items()},
            **{f"{k}_p95_ms": _pct(v, 0.95) for k, v in lat.items()},
            "vector_raw_mb": round(raw / 1e6, 1), "vector_index_mb": round(total / 1e6, 1),
            "vector_memory_ratio": round(total / raw, 3) if raw else None, "rss_mb": _rss_mb()}


def estimate(points: list[dict[str, Any]], n: int) -> dict[str, Any]:
    """Linear fit through the two largest measured sizes (brute-force search grows linearly). A value
    that fell between them (work bounded by budgets, or noise) is held at the larger size's value: an
    estimate never extrapolates a falling curve to below what was measured (it went negative)."""
    if len(points) < 2:
        return {}
    a, b = sorted(points, key=lambda p: p["turns"])[-2:]
    out: dict[str, Any] = {"turns": n, "estimated": True}
    for key in ("turn_start_p50_ms", "turn_start_p95_ms", "search_p50_ms", "search_p95_ms", "vector_raw_mb",
                "vector_index_mb"):
        slope = max(0.0, (b[key] - a[key]) / (b["turns"] - a["turns"]))
        out[key] = round(b[key] + slope * (n - b["turns"]), 1)
    return out


def resolve_model(model: str | None) -> str:
    from remem.embed.embedders import DEFAULT_EMBEDDER

    model = model or os.environ.get("REMEM_EMBEDDING_MODEL") or DEFAULT_EMBEDDER
    return DEFAULT_EMBEDDER if model == "default" else model


def run(sizes: list[int], *, queries: int = 200, model: str | None = None,
        progress: Callable[[str], None] | None = None, keep: str | None = None, real: bool = False,
        spaced: float = 0.0, warm_prompts: int = 0) -> dict[str, Any]:

    model = resolve_model(model)
    say = progress or (lambda _m: None)
    points = [measure(n, queries=queries, model=model, say=say, keep=keep, real=real, spaced=spaced,
                      warm_prompts=warm_prompts) for n in sizes]
    est = estimate(points, 1_000_000) if max(sizes) < 1_000_000 else {}
    return {"model": model, "cpus": os.cpu_count(), "real": real, "points": points, "estimate_1m": est}


def render(res: dict[str, Any]) -> str:
    cols: tuple[str, ...] = ("turns", "turn_start_p50_ms", "turn_start_p95_ms", "search_p50_ms", "search_p95_ms",
            "query_embedding_p50_ms", "vector_raw_mb", "vector_index_mb", "vector_memory_ratio", "index_load_s")
    if res.get("real"):
        cols += ("raw_bytes_per_turn", "db_bytes_per_turn", "storage_ratio", "db_mb")
    lines = [f"model={res['model']} cpus={res['cpus']}" + (" real-shaped turns" if res.get("real") else ""),
             " | ".join(cols)]
    for p in res["points"]:
        lines.append(" | ".join(str(p.get(c, "")) for c in cols))
    if res.get("estimate_1m"):
        lines.append("1M (estimated, linear): " + "  ".join(f"{k}={v}" for k, v in res["estimate_1m"].items()
                                                            if k not in ("turns", "estimated")))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--model", default=None)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--keep", metavar="DIR", help="build each size's store in DIR/<size> and reuse it on later runs")
    ap.add_argument("--build-only", action="store_true", help="with --keep: build the stores, time nothing")
    ap.add_argument("--real", action="store_true", help="real-shaped turns and prompts; report bytes per turn")
    ap.add_argument("--spaced", type=float, default=0.0, metavar="MINUTES",
                    help="each prompt this long after the one before (the caches see the time pass)")
    ap.add_argument("--warm-prompts", type=int, default=0, metavar="N",
                    help="N untimed prompts (another seed) first, as a daemon that has been running")
    a = ap.parse_args(argv)
    if a.spaced < 0:
        ap.error("--spaced takes minutes ≥ 0")
    if a.warm_prompts < 0:
        ap.error("--warm-prompts takes a count ≥ 0")
    sizes = [int(s) for s in a.sizes.split(",")]
    if a.build_only:
        if not a.keep:
            ap.error("--build-only needs --keep DIR")
        for n in sizes:
            home = os.path.join(a.keep, f"real-{n}" if a.real else str(n))
            if not Path(home, "built.json").exists():
                built = build(home, n, resolve_model(a.model), lambda m: print(m, file=sys.stderr), real=a.real)
                Path(home, "built.json").write_text(json.dumps(built))
        return 0
    res = run(sizes, queries=a.queries, model=a.model, progress=lambda m: print(m, file=sys.stderr), keep=a.keep,
              real=a.real, spaced=a.spaced, warm_prompts=a.warm_prompts)
    print(json.dumps(res, indent=1) if a.json else render(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

#!/usr/bin/env python3
"""Turn recall on real agent histories: at the prompts that needed a standing rule, does search bring
back the past turns where the user said it?

The derive-dev labels give, for every need_point / later_task probe, the items the prompt needed
(``expects``) and, for each item, the (session, turn) where the user said it (``evidence``). Those
turns are a labelled relevance set for recall on real histories (the relevance proxy of the real-shaped
stores guesses relevance from file and function names; LoCoMo is conversation, not coding).

One throwaway home imports every project of the split as a user's SpecStory exports (``remem sources add
specstory --path``: ~2,300 turns, a small store, the size most users have). For each probe with
evidence said before it, ``Remem.search(prompt, project=…)`` runs over the project; turns at or after
the probe (the restatement itself, later sessions) are dropped from the ranking, and the first
``K`` that remain are judged:

* recall@5 / recall@10: probes with an evidence turn among the first 5 / 10;
* MRR: the mean of 1 / rank of the first evidence turn (0 when none is in the 10).

A stored turn is matched to its (session, turn) through the product's own SpecStory parser
(``learn.read_project``) by its request and session. Embeddings are off unless ``--model`` names one
(then the import embeds every turn first). ``--keep DIR`` keeps the home there and reuses it.
``--set NAME=VALUE[,NAME=VALUE]`` sets recall constants of ``remem.recall.channels`` for a run (repeatable:
each is one more run after the defaults; what was tried is in bench/RESULTS.md).

    python -m remem.bench.learn_recall --data ../shared/bench/derive-dev [--labels bench/learn-labels]
        [--model e5-small] [--keep DIR] [--set RARE_FROM=2000] [--json]
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .learn import load_labels, read_project, resolve_probes
from .learn_store import home_env, place_exports

K = 10
POOL = 60           # results asked for, so that K remain once the turns after the probe are dropped


def _norm(text: str | None) -> str:
    return " ".join((text or "").split())[:200]


def build(mem: Any, raw: str, project: str, folder: str, labels: dict[str, Any]) -> dict[str, Any]:
    """One project's probes as cases: (prompt, the probe's position, the evidence turns' stored ids),
    and every stored turn's position (its (session, turn) in the history's order)."""
    turns = read_project(raw, project)
    stored: dict[tuple[str, str], list[str]] = {}
    for owner in mem.scope().owners:
        for r in mem.store.learned.turns_in_time_order(owner, folder):
            stored.setdefault((str(r["session_id"]), _norm(r["request"])), []).append(r["id"])
    where: dict[tuple[str, int], int] = {}
    position: dict[str, int] = {}
    for i, t in enumerate(turns):
        where[(t.session, t.index)] = i
        ids = stored.get((t.session.removesuffix(".md"), _norm(t.request))) or []
        if ids:
            position.setdefault(ids.pop(0), i)      # a request said twice in a session: in order
    ids_at = {i: tid for tid, i in position.items()}
    items = {i["iid"]: i for i in labels.get("items", [])}
    cases = []
    for pr in resolve_probes(labels.get("probes") or [], turns)["probes"]:
        at = where.get((pr["before"]["session"], int(pr["before"]["turn"])))
        if pr.get("type") not in ("need_point", "later_task") or at is None or not (pr.get("prompt") or "").strip():
            continue
        relevant = {ids_at[j] for iid in pr.get("expects", []) for e in items.get(iid, {}).get("evidence", [])
                    if (j := where.get((e["session"], int(e["turn"])))) is not None and j < at and j in ids_at}
        if relevant:
            cases.append({"pid": pr.get("pid"), "type": pr["type"], "prompt": pr["prompt"], "at": at,
                          "relevant": relevant})
    return {"cases": cases, "position": position}


def judge(mem: Any, folder: str, projects: dict[str, Any]) -> dict[str, Any]:
    """recall@5, recall@10 and MRR of ``Remem.search`` over the cases of one project."""
    got: dict[str, Any] = {"cases": 0, "hit5": 0, "hit10": 0, "rr": 0.0, "seconds": 0.0, "ms": []}
    pos = projects["position"]
    for c in projects["cases"]:
        t0 = time.perf_counter()
        found = mem.search(c["prompt"], project=folder, k=POOL)
        got["seconds"] += time.perf_counter() - t0
        got["ms"].append(1000 * (time.perf_counter() - t0))
        ranked = [r["id"] for r in found if pos.get(r["id"], c["at"]) < c["at"]][:K]
        first = next((i for i, tid in enumerate(ranked) if tid in c["relevant"]), None)
        got["cases"] += 1
        got["hit5"] += first is not None and first < 5
        got["hit10"] += first is not None
        got["rr"] += 0.0 if first is None else 1.0 / (first + 1)
    return got


def _rates(n: dict[str, Any]) -> dict[str, Any]:
    c, ms = n["cases"], sorted(n["ms"])
    return {"cases": c, "recall_at_5": round(n["hit5"] / c, 3) if c else None,
            "recall_at_10": round(n["hit10"] / c, 3) if c else None, "mrr": round(n["rr"] / c, 3) if c else None,
            "search_ms_p50": round(ms[len(ms) // 2], 1) if ms else None,
            "search_ms_p95": round(ms[max(0, int(0.95 * len(ms)) - 1)], 1) if ms else None}


def run(data: str, labels_dir: str, *, model: str | None = None, keep: str | None = None,
        settings: list[str] | None = None) -> dict[str, Any]:
    from remem.core import Remem
    from remem.recall import channels
    from remem.sources.custom import add_project_folders

    raw_root = os.path.join(data, "raw")
    if not os.path.isdir(raw_root):
        raise SystemExit(f"{data}: no raw/ folder (the derive-dev split: raw/<project>/*.md)")
    projects = sorted(p for p in os.listdir(raw_root) if os.path.isdir(os.path.join(raw_root, p)))
    tmp = keep or tempfile.mkdtemp(prefix="remem-learn-recall-")
    home = os.path.join(tmp, "home")
    fresh = not os.path.isdir(home)
    env = home_env(tmp, model)
    folders = {p: str(Path(tmp, "projects", p)) for p in projects}
    runs: list[dict[str, Any]] = []
    try:
        if fresh:
            for p in projects:
                place_exports(os.path.join(raw_root, p), Path(folders[p]))
        mem = Remem(home, env=env)
        try:
            t0 = time.perf_counter()
            if fresh:
                for p in projects:
                    res = add_project_folders(mem, "specstory", [folders[p]], env=env)
                    if res.get("status") != "imported":
                        raise RuntimeError(f"{p}: {res.get('steps')}")
            mem.index_pending(embed=bool(model))
            import_s = time.perf_counter() - t0
            turns = int(mem.stats()["turns"])
            mem.search("warm up the indexes and the model", project=folders[projects[0]], k=POOL)  # not timed
            cases = {p: build(mem, os.path.join(raw_root, p), p, folders[p], load_labels(labels_dir, p) or {})
                     for p in projects}
            for setting in [None, *(settings or [])]:
                saved: dict[str, Any] = {}
                try:
                    for assign in (setting or "").split(","):
                        if not assign:
                            continue
                        name, _, value = assign.partition("=")
                        if not hasattr(channels, name):
                            raise SystemExit(f"--set {setting}: remem.recall.channels has no {name}")
                        saved.setdefault(name, getattr(channels, name))
                        setattr(channels, name, type(saved[name])(value))
                    per = {p: judge(mem, folders[p], cases[p]) for p in projects}
                finally:
                    for name, value in saved.items():
                        setattr(channels, name, value)
                total = {k: sum(r[k] for r in per.values()) for k in ("cases", "hit5", "hit10", "rr", "seconds")}
                total["ms"] = [x for r in per.values() for x in r["ms"]]
                runs.append({"setting": setting or "defaults", "overall": _rates(total),
                             "projects": {p: _rates(r) for p, r in per.items() if r["cases"]}})
        finally:
            mem.close()
    finally:
        if keep is None:
            shutil.rmtree(tmp, ignore_errors=True)
    return {"turns": turns, "projects": len(projects), "model": model or "none (lexical)",
            "import_s": round(import_s, 1), "k": K, "runs": runs}


def render(rep: dict[str, Any]) -> str:
    lines = [f"{rep['turns']} turns of {rep['projects']} projects, embeddings: {rep['model']}"]
    for r in rep["runs"]:
        o = r["overall"]
        lines.append(f"{r['setting']:28s} cases {o['cases']}  recall@5 {o['recall_at_5']}  recall@10 "
                     f"{o['recall_at_10']}  MRR {o['mrr']}  search p50 / p95 {o['search_ms_p50']} / "
                     f"{o['search_ms_p95']} ms")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="the derive-dev folder (holds raw/<project>/)")
    ap.add_argument("--labels", default="bench/learn-labels", help="the label folder (default bench/learn-labels)")
    ap.add_argument("--model", help="embedding model (default: none, lexical recall only)")
    ap.add_argument("--keep", help="keep the imported home in this folder (and reuse it when it is there)")
    ap.add_argument("--set", action="append", dest="settings", default=[],
                    help="NAME=VALUE[,NAME=VALUE]: one more run with these recall constants (remem.recall.channels)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    if not os.path.isdir(a.labels):
        raise SystemExit(f"{a.labels}: no label folder")
    rep = run(a.data, a.labels, model=a.model, keep=a.keep, settings=a.settings)
    print(json.dumps(rep, indent=2) if a.json else render(rep))
    return 0


if __name__ == "__main__":
    sys.exit(main())

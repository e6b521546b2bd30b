"""A relevance proxy on a real-shaped store: do packets and searches bring back the past turns that
name what the prompt names?

    python -m remem.bench.recall_proxy --home DIR/real-100000 [--prompts 300] [--json]

``DIR/real-N`` is a store ``remem.bench.recall_speed --real --keep DIR`` built. For each of its
real-shaped prompts whose first line names a function (``name()``) or a Python file, the relevant
turns are the past turns whose request names the same (prompts with 1–200 of them are kept). Reported
for all, the Chinese and the English prompts: the share of packets (``turn_start``) holding a relevant
turn, the packets' precision, search recall@10 and the latencies. A proxy, not labels: the
generator's requests reuse names across turns, so "names the same function" stands in for "about the
same work". Its use is to compare two versions of recall on the same store, side by side.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time
from typing import Any

from remem.text.segment import has_cjk

_FN = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]{3,})\(\)")
_FILE = re.compile(r"\b([A-Za-z_][\w/]*\.py)\b")


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(p * len(xs)))], 1) if xs else 0.0


def relevant(mem: Any, owner: str, prompts: list[str]) -> dict[str, set[str]]:
    """Each anchored prompt → the ids of the past turns whose request names its function or file
    (the owner's turns read once, page by page, through the store's sync reader)."""
    anchors = {}
    for q in prompts:
        head = q.split("```")[0].split("\n")[0]
        names = [f + "()" for f in _FN.findall(head)] + _FILE.findall(head)
        if names:
            anchors[q] = names
    holders: dict[str, set[str]] = {a: set() for names in anchors.values() for a in names}
    after: tuple[float, str] = (0.0, "")
    scope = mem.scope(owner=owner)
    while page := mem.store.turns.changed(scope, after=after, limit=2000):
        for row in page:
            req = row.get("request") or ""
            for a, ids in holders.items():
                if a in req:
                    ids.add(row["id"])
        after = (float(page[-1]["updated_at"]), str(page[-1]["id"]))
    out = {}
    for q, names in anchors.items():
        ids = set().union(*(holders[a] for a in names))
        if 0 < len(ids) <= 200:
            out[q] = ids
    return out


def measure(home: str, prompts: int = 300, model: str = "e5-small") -> dict[str, Any]:
    from remem.bench.recall_speed import REAL_OWNER, REAL_PROJECT, real_queries
    from remem.core import Remem

    mem = Remem(home, env={"REMEM_EMBEDDING_MODEL": model})
    emb = mem.embedder()
    emb.load() if hasattr(emb, "load") else None
    mem.prepare_onnx(wait=True)
    rel = relevant(mem, REAL_OWNER, real_queries(prompts + 20)[20:])
    rows: list[dict[str, Any]] = []
    for q, ids in rel.items():
        a = time.perf_counter()
        packet = mem.turn_start(q, owner=REAL_OWNER, project=REAL_PROJECT)
        b = time.perf_counter()
        found = mem.search(q, owner=REAL_OWNER, k=10)
        c = time.perf_counter()
        items = [i["id"] for i in packet["items"] if i.get("layer", "L1") == "L1"]
        top = [h["id"] for h in found]
        rows.append({"zh": has_cjk(q), "hit": any(i in ids for i in items),
                     "precision": sum(i in ids for i in items) / len(items) if items else 0.0,
                     "recall10": len(set(top) & ids) / min(10, len(ids)),
                     "turn_start_ms": (b - a) * 1000, "search_ms": (c - b) * 1000})
    mem.close()

    def summary(sel: list[dict[str, Any]]) -> dict[str, Any]:
        if not sel:
            return {"prompts": 0}
        return {"prompts": len(sel), "packet_has_relevant": round(statistics.mean(r["hit"] for r in sel), 3),
                "packet_precision": round(statistics.mean(r["precision"] for r in sel), 3),
                "search_recall_at_10": round(statistics.mean(r["recall10"] for r in sel), 3),
                "turn_start_p50_ms": _pct([r["turn_start_ms"] for r in sel], 0.5),
                "turn_start_p95_ms": _pct([r["turn_start_ms"] for r in sel], 0.95),
                "search_p50_ms": _pct([r["search_ms"] for r in sel], 0.5),
                "search_p95_ms": _pct([r["search_ms"] for r in sel], 0.95)}

    return {"home": home, "all": summary(rows), "zh": summary([r for r in rows if r["zh"]]),
            "en": summary([r for r in rows if not r["zh"]])}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--home", required=True, help="a store built by recall_speed --real --keep (DIR/real-N)")
    ap.add_argument("--prompts", type=int, default=300)
    ap.add_argument("--model", default="e5-small")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    res = measure(args.home, args.prompts, args.model)
    if args.json:
        print(json.dumps(res, indent=1))
    else:
        for k in ("all", "zh", "en"):
            print(k, res[k])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

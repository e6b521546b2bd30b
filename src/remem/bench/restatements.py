"""Can a sentence embedding join a rule's restatements? Cosines of learned rules, same item vs not.

Most labelled rules that stay candidates were said in two or more sessions in words that share little
("don't modify the original notebook" / "keep source changes minimal"), so no lexical test joins them.
This bench asks whether the offline embedder could: every project's whole history is learned
(``layers.learn``), its rule memories (preference, convention, decision) are embedded, and each pair
where at least one is matched to a label item (``remem.bench.learn``'s matcher) counts as "same" when
they match a common item and "different" otherwise. For a set of cosine thresholds it prints how many
pairs of each kind reach it and the share that are the same item (the precision a "join at this
cosine" rule would have).

    python -m remem.bench.restatements --data ../shared/bench/derive-dev [--model e5-small] [--json]
"""

from __future__ import annotations

import itertools
import json
import os
import sys
from typing import Any

from ..layers.learn import learn
from .learn import TUNE, arguments, load_labels, matches, read_project

RULES = ("preference", "convention", "decision")
THRESHOLDS = (0.80, 0.84, 0.86, 0.88, 0.90, 0.92, 0.94)


def run(data: str, labels: str, projects: list[str], model: str) -> dict[str, Any]:
    import numpy as np

    from ..embed.embedders import get_embedder

    emb = get_embedder(model)
    same: list[float] = []
    other: list[float] = []
    rules = 0
    for p in projects:
        items = (load_labels(labels, p) or {}).get("items", [])
        mems = [m for m in learn(read_project(os.path.join(data, "raw", p), p)) if m.kind in RULES]
        rules += len(mems)
        if len(mems) < 2:
            continue
        said = [{i["iid"] for i in items if matches(m, i)} for m in mems]
        vecs = np.asarray(emb.embed([m.text for m in mems]))
        cos = vecs @ vecs.T
        for i, j in itertools.combinations(range(len(mems)), 2):
            if said[i] or said[j]:
                (same if said[i] & said[j] else other).append(float(cos[i, j]))
    rows = []
    for th in THRESHOLDS:
        s, o = sum(c >= th for c in same), sum(c >= th for c in other)
        rows.append({"cosine": th, "same": s, "different": o, "precision": round(s / (s + o), 3) if s + o else None})
    return {"model": model, "projects": projects, "rules": rules, "pairs_same": len(same),
            "pairs_different": len(other), "thresholds": rows}


def main(argv: list[str] | None = None) -> int:
    ap = arguments(__doc__)   # --project: default the tuned six
    ap.add_argument("--model", default="e5-small")
    args = ap.parse_args(argv)
    res = run(args.data, args.labels, args.project or list(TUNE), args.model)
    if args.json:
        json.dump(res, sys.stdout, indent=1)
        print()
        return 0
    print(f"{res['rules']} rule memories; pairs: {res['pairs_same']} same item, {res['pairs_different']} different")
    for r in res["thresholds"]:
        print(f"cosine ≥ {r['cosine']:.2f}: same {r['same']:4d}  different {r['different']:5d}  precision {r['precision']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

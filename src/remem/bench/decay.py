#!/usr/bin/env python3
"""What the archive rule of decay (``layers/retention.py``) archives on the derive-dev histories.

Each project's whole history is learned in time order (``remem.layers.learn``, as ``remem.bench.learn``
does), then the rule is applied at the project's clock (its newest turn) with the default settings,
as the learn job applies it. Reported per project and overall: the active memories, how many the rule
archives by kind, and how many of the archived ones a label item (``bench/learn-labels``, live items
only) holds — a labelled memory archived is a memory the labeller thought worth learning, so this
is the rule's cost on what the labels can see (the labels do not say whether a memory is still
current at the end of a history). No feedback or packet use is simulated: every use count is zero,
so this is the rule at its harshest.

    python -m remem.bench.decay --data ../shared/bench/derive-dev [--labels bench/learn-labels] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from typing import Any

from ..layers import retention
from ..layers.learn import learn
from .learn import load_labels, matches, read_project


def run(data: str, labels_dir: str | None, projects: list[str] | None = None) -> dict[str, Any]:
    raw = os.path.join(data, "raw")
    names = projects or sorted(d for d in os.listdir(raw) if os.path.isdir(os.path.join(raw, d)))
    per: dict[str, Any] = {}
    total: Counter[str] = Counter()
    for p in names:
        turns = read_project(os.path.join(raw, p), p)
        clock = max((float(t.ts) for t in turns if t.ts is not None), default=0.0)
        mems = learn(turns)
        active = [m for m in mems if m.status == "active"]
        lab = load_labels(labels_dir, p) if labels_dir else None
        items = [i for i in (lab or {}).get("items", []) if not i.get("superseded_by")]
        archived = []
        for m in active:
            d = m.to_dict()
            d["data"]["last_seen"] = m.updated_at
            score, why = retention.archive_reason(d, clock)
            if why:
                archived.append((m, score))
        labelled = [m for m, _ in archived if any(matches(m, i) for i in items)]
        span = (clock - min((float(t.ts) for t in turns if t.ts is not None), default=clock)) / retention.DAY
        per[p] = {"turns": len(turns), "days": round(span, 1), "active": len(active), "archived": len(archived),
                  "archived_by_kind": dict(Counter(m.kind for m, _ in archived)),
                  "archived_labelled": len(labelled),
                  "labelled_texts": [m.text[:100] for m in labelled][:10]}
        total.update({"active": len(active), "archived": len(archived), "archived_labelled": len(labelled)})
        for m, _ in archived:
            total[f"kind.{m.kind}"] += 1
    return {"projects": per, "overall": dict(total)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="the derive-dev folder (holds raw/<project>/)")
    ap.add_argument("--labels", default="bench/learn-labels", help="the label folder")
    ap.add_argument("--project", action="append", help="only these projects (repeatable)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    out = run(a.data, a.labels if os.path.isdir(a.labels) else None, a.project)
    if a.json:
        json.dump(out, sys.stdout, indent=2, ensure_ascii=False)
        print()
        return 0
    for p, r in out["projects"].items():
        print(f"{p:<16} {r['turns']:>5} turns over {r['days']:>6.1f} days: {r['archived']:>3} of {r['active']:>3} "
              f"active archived {r['archived_by_kind']}, {r['archived_labelled']} of them labelled")
    o = out["overall"]
    print(f"overall: {o.get('archived', 0)} of {o.get('active', 0)} active archived, "
          f"{o.get('archived_labelled', 0)} labelled")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

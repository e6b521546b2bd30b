"""How many skills a benchmark split yields, and whether each one is grounded (issue 18).

Every project of ``--data``'s ``raw/`` folder is learned from its whole history (``layers.learn``);
for each skill (candidate or active) it reports its source (a fix or a command sequence), its
number of steps, parameters and uses, and whether every command it names occurs in its evidence
(``layers.skills.grounded``). Precision of active skills is the share of active skills that are
grounded. Prints counts only: no text of the histories.

    python -m remem.bench.skills --data ../shared/bench/derive-dev [--project chitin] [--json]
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from ..layers.learn import learn
from ..layers.skills import grounded
from .learn import read_project


def project_report(turns: list[Any]) -> dict[str, Any]:
    skills = [m for m in learn(turns) if m.kind == "skill"]
    out: dict[str, Any] = {"candidate": 0, "active": 0, "grounded_active": 0, "grounded": 0, "skills": []}
    for m in skills:
        ok = not grounded(m.to_dict(), turns)
        out[m.status] = out.get(m.status, 0) + 1
        out["grounded"] += ok
        out["grounded_active"] += ok and m.status == "active"
        out["skills"].append({"id": m.id, "status": m.status, "from": "fix" if m.data["trigger"]["signature"]
                              else "sequence", "steps": len(m.data["steps"]),
                              "parameters": len(m.data["parameters"]), "uses": len(m.evidence),
                              "sessions": len(m.sessions), "grounded": ok})
    return out


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="the derive-dev folder (holds raw/<project>/)")
    ap.add_argument("--project", action="append", help="only these projects (repeatable)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    raw = os.path.join(args.data, "raw")
    projects = args.project or sorted(p for p in os.listdir(raw) if os.path.isdir(os.path.join(raw, p)))
    report = {p: project_report(read_project(os.path.join(raw, p), p)) for p in projects}
    active = sum(r["active"] for r in report.values())
    total = {"projects": len(report), "skills": sum(len(r["skills"]) for r in report.values()), "active": active,
             "from_fix": sum(s["from"] == "fix" for r in report.values() for s in r["skills"]),
             "grounded": sum(r["grounded"] for r in report.values()),
             "active_precision": round(sum(r["grounded_active"] for r in report.values()) / active, 3) if active
             else None}
    if args.json:
        json.dump({"overall": total, "projects": report}, sys.stdout, indent=1)
        print()
    else:
        for p, r in report.items():
            print(f"{p:24} candidate {r['candidate']:3}  active {r['active']:3}  grounded {r['grounded']}")
        print(json.dumps(total))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

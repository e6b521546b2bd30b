#!/usr/bin/env python3
"""Learning benchmark on the derive-dev split: extraction precision / recall and the world model.

Reads each project's SpecStory sessions at run time (``raw/<id>/*.md``, the README's turn-numbering
contract), runs ``remem.layers.learn`` over them in time order and compares with label files in the
derive-dev schema (``--labels DIR``, one ``<project>.json`` each; ``_world`` holds the expected
world-model slots). A learned memory matches a label item when their kinds are compatible (rules:
preference / convention / decision; fact; procedure) and they cite a common (session, turn), or,
for a fact, when it fills the item's ``_slot`` with its ``_value``.

Not measured here (they need the store wiring of the next wave): need-point coverage, false
injection, packets, supersession in packets, database growth.

    python -m remem.bench.learn --data ../shared/bench/derive-dev [--labels bench/learn-labels] [--json]
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

from ..layers import learn
from ..layers.types import Memory
from .specstory_min import read_project

RULE_GROUP = ("preference", "convention", "decision", "correction")
WORLD_SLOTS = ("cmd.test", "cmd.build", "cmd.run", "cmd.lint", "pkg.manager")
JUDGED = ("preference", "convention", "decision", "procedure", "fact")


def _group(kind: str) -> str:
    return "rule" if kind in RULE_GROUP else kind


def _refs(item: dict[str, Any]) -> set[str]:
    return {f"{e['session']}#{e['turn']}" for e in item.get("evidence", [])}


def matches(m: Memory, item: dict[str, Any]) -> bool:
    if _group(m.kind) != _group(item["kind"]):
        return False
    if item.get("_slot"):
        return m.slot == item["_slot"] and m.value.lower() == str(item.get("_value", "")).lower()
    return bool({e.turn_id for e in m.evidence} & _refs(item))


def _pr(mems: list[Memory], items: list[dict[str, Any]]) -> dict[str, Any]:
    hit_m = [m for m in mems if any(matches(m, i) for i in items)]
    live = [i for i in items if not i.get("superseded_by")]
    hit_i = [i for i in live if any(matches(m, i) for m in mems)]
    return {"memories": len(mems), "correct": len(hit_m), "precision": round(len(hit_m) / len(mems), 3) if mems else None,
            "items": len(live), "found": len(hit_i), "recall": round(len(hit_i) / len(live), 3) if live else None,
            "false": [m.text[:120] for m in mems if m not in hit_m][:30],
            "missed": [i["iid"] for i in live if i not in hit_i]}


def world(mems: list[Memory], expected: dict[str, str]) -> dict[str, Any]:
    got = {m.slot: m.value.lower() for m in mems if m.status == "active" and m.slot in WORLD_SLOTS}
    slots = {s: {"expected": v, "got": got.get(s), "ok": got.get(s) == v} for s, v in expected.items()}
    return {"slots": slots, "ok": all(x["ok"] for x in slots.values()) if slots else None}


def run(data: str, labels_dir: str | None, projects: list[str] | None = None) -> dict[str, Any]:
    raw = os.path.join(data, "raw")
    names = projects or sorted(d for d in os.listdir(raw) if os.path.isdir(os.path.join(raw, d)))
    per: dict[str, Any] = {}
    total_turns, total_time = 0, 0.0
    all_act: list[tuple[Memory, list[dict[str, Any]]]] = []
    all_cand: list[tuple[Memory, list[dict[str, Any]]]] = []
    all_items: list[tuple[dict[str, Any], list[Memory], list[Memory]]] = []
    worlds: list[bool] = []
    for p in names:
        turns = read_project(os.path.join(raw, p), p)
        t0 = time.perf_counter()
        mems = learn(turns)
        dt = time.perf_counter() - t0
        total_turns += len(turns)
        total_time += dt
        judged = [m for m in mems if m.kind in JUDGED or m.kind == "correction"]
        active = [m for m in judged if m.status == "active"]
        cands = [m for m in judged if m.status in ("active", "candidate")]
        row: dict[str, Any] = {"turns": len(turns), "seconds": round(dt, 3), "active": len(active),
                               "candidates": len(cands) - len(active),
                               "by_kind": {k: sum(m.kind == k for m in active) for k in JUDGED}}
        lab_path = os.path.join(labels_dir, f"{p}.json") if labels_dir else ""
        if lab_path and os.path.exists(lab_path):
            with open(lab_path, encoding="utf-8") as f:
                lab = json.load(f)
            items = list(lab.get("items", []))
            have = {i.get("_slot") for i in items}
            for slot, val in (lab.get("_world") or {}).items():   # expected world slots are items too
                if slot not in have:
                    items.append({"iid": f"{p}-world-{slot}", "kind": "fact", "_slot": slot, "_value": val,
                                  "evidence": []})
            row["active_pr"] = _pr(active, items)
            row["candidate_pr"] = _pr(cands, items)
            all_act += [(m, items) for m in active]
            all_cand += [(m, items) for m in cands]
            all_items += [(i, active, cands) for i in items if not i.get("superseded_by")]
            if lab.get("_world"):
                row["world"] = world(mems, lab["_world"])
                worlds.append(bool(row["world"]["ok"]))
        per[p] = row

    def overall(pairs: list[tuple[Memory, list[dict[str, Any]]]], which: int) -> dict[str, Any]:
        ok = sum(any(matches(m, i) for i in items) for m, items in pairs)
        found = sum(any(matches(m, i) for m in (a if which == 0 else c)) for i, a, c in all_items)
        return {"precision": round(ok / len(pairs), 3) if pairs else None, "memories": len(pairs), "correct": ok,
                "recall": round(found / len(all_items), 3) if all_items else None, "items": len(all_items),
                "found": found}

    return {"projects": per,
            "overall": {"active": overall(all_act, 0), "candidates": overall(all_cand, 1),
                        "world_model_projects_right": f"{sum(worlds)}/{len(worlds)}",
                        "turns": total_turns, "learn_seconds": round(total_time, 3),
                        "turns_per_second": round(total_turns / total_time, 1) if total_time else None,
                        "seconds_per_1000_turns": round(1000 * total_time / total_turns, 3) if total_turns else None},
            "not_measured": "need-point coverage, false injection, packet size, stale injections and database "
                            "growth need the store wiring (next wave); not reported rather than faked"}


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="the derive-dev folder (holds raw/<project>/)")
    ap.add_argument("--labels", default="bench/learn-labels" if os.path.isdir("bench/learn-labels") else None,
                    help="folder of <project>.json label files (default: bench/learn-labels when present)")
    ap.add_argument("--project", action="append", help="only these projects (repeatable)")
    ap.add_argument("--json", action="store_true", help="print the whole report as JSON")
    a = ap.parse_args(argv)
    if not os.path.isdir(os.path.join(a.data, "raw")):
        print(f"no raw/ folder under {a.data}", file=sys.stderr)
        return 2
    rep = run(a.data, a.labels, a.project)
    if a.json:
        print(json.dumps(rep, indent=1, ensure_ascii=False))
        return 0
    for p, r in rep["projects"].items():
        line = f"{p:15s} turns {r['turns']:4d}  active {r['active']:3d}  cand {r['candidates']:3d}"
        if "active_pr" in r:
            ap_ = r["active_pr"]
            line += f"  P {ap_['precision']}  R {ap_['recall']}  (cand R {r['candidate_pr']['recall']})"
        if "world" in r:
            line += f"  world {'ok' if r['world']['ok'] else 'WRONG'}"
        print(line)
    o = rep["overall"]
    print(f"overall active P {o['active']['precision']} ({o['active']['correct']}/{o['active']['memories']})  "
          f"R {o['active']['recall']} ({o['active']['found']}/{o['active']['items']});  candidates P "
          f"{o['candidates']['precision']} R {o['candidates']['recall']};  world {o['world_model_projects_right']};  "
          f"{o['turns_per_second']} turns/s")
    print("not measured:", rep["not_measured"])
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Learning benchmark on the derive-dev split: extraction precision / recall and the world model.

Reads each project's SpecStory sessions at run time (``raw/<id>/*.md``, the README's turn-numbering
contract) with the product's own parser (``sources/specstory.py``, what ``remem sync`` reads, its
tool calls converted as the learn job converts stored ones: ``layers.turnview.to_action``), runs ``remem.layers.learn`` over them in time order and compares with label files in the
derive-dev schema (``--labels DIR``, one ``<project>.json`` each; ``_world`` holds the expected
world-model slots). A learned memory matches a label item when their kinds are compatible (rules:
preference / convention / decision; fact; procedure) and they cite a common (session, turn), or,
for a fact, when it fills the item's ``_slot`` with its ``_value``.

Each project's labels are ``<project>.json`` merged with ``probes/<project>.json`` when present
(items and probes appended, ``_world`` from either). Probe prompts are not stored: a probe with
``"prompt": null`` and ``_prompt_sha1`` gets the user request of its ``before`` turn from the
history at run time, checked against the hash (mismatches are reported, and such probes are not used).

Precision and recall are reported overall, per kind, for the projects labelled blind
(``BLIND``) and the rest, and for the tuning / pseudo-held-out split (``TUNE`` / ``HELDOUT``).

Not measured here: need-point coverage, false injection and stale injections (``learn_packets``),
packet size, database growth and learn speed through a real home (``learn_store``); ``remem bench
learn`` runs all three. The probes are loaded and counted.

    python -m remem.bench.learn --data ../shared/bench/derive-dev [--labels bench/learn-labels] [--json]
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from typing import Any

from ..layers.learn import learn
from ..layers.types import Memory, Turn

RULE_GROUP = ("preference", "convention", "decision", "correction")
WORLD_SLOTS = ("cmd.test", "cmd.build", "cmd.run", "cmd.lint", "pkg.manager")
JUDGED = ("preference", "convention", "decision", "procedure", "fact")
# labelled by an independent labeller without reading the extractors (bench/learn-labels/README.md)
BLIND = ("blastmerge", "semantics", "pokerswound", "schema")
# the projects looked at while tuning the extractors (issue 16); HELDOUT was not looked at
TUNE = ("chitin", "blastmerge", "pokerswound", "ttc", "ypos", "alpamayo")
HELDOUT = ("semantics", "schema", "coder", "appdatastorage", "imguiwidgets")
GROUPS = {"blind": BLIND, "author": None, "tune": TUNE, "heldout": HELDOUT}


def sessions(project_dir: str) -> list[str]:
    """The project's session files in contract order (top-level ``*.md``, byte-wise by name)."""
    return sorted((f for f in os.listdir(project_dir) if f.endswith(".md")
                   and os.path.isfile(os.path.join(project_dir, f))), key=lambda s: s.encode("utf-8"))


def read_project(project_dir: str, project: str | None = None) -> list[Turn]:
    """A project's sessions as the learner's turns, through the SpecStory source: turn *k* of a session
    is its *k*-th user header (empty requests count, so labels' (session, turn) references hold),
    its reply the last assistant text (as turn assembly keeps it), its tool calls every call of the
    assistant messages up to the next user header."""
    from ..layers.turnview import to_action
    from ..sources.specstory import parse

    project = project or os.path.basename(os.path.normpath(project_dir))
    out: list[Turn] = []
    for name in sessions(project_dir):
        with open(os.path.join(project_dir, name), "rb") as f:
            messages = parse(f.read(), name, project=project)
        by_turn: dict[int, list[Any]] = {}
        for m in messages:
            by_turn.setdefault(int(m.extra.get("turn") or 0), []).append(m)
        for k in sorted(t for t in by_turn if t >= 1):
            user, rest = by_turn[k][0], by_turn[k][1:]
            texts = [m.text for m in rest if m.role == "assistant" and m.text.strip()]
            calls = [c.to_dict() for m in rest for c in m.tool_calls]
            out.append(Turn(id=f"{name}#{k}", session=name, request=user.text, reply=texts[-1] if texts else "",
                            actions=[to_action(c) for c in calls], project=project, ts=user.ts, index=k))
    return out


def load_labels(labels_dir: str, project: str) -> dict[str, Any] | None:
    """``<project>.json`` merged with ``probes/<project>.json`` (either may be missing)."""
    lab: dict[str, Any] | None = None
    for path in (os.path.join(labels_dir, f"{project}.json"), os.path.join(labels_dir, "probes", f"{project}.json")):
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as f:
            part = json.load(f)
        if lab is None:
            lab = {"project": project, "items": [], "probes": []}
        lab["items"] += list(part.get("items") or [])
        lab["probes"] += list(part.get("probes") or [])
        if part.get("_world") and not lab.get("_world"):
            lab["_world"] = part["_world"]
    return lab


def prompt_sha1(text: str) -> str:
    return hashlib.sha1(text.replace("\r", "").strip().encode("utf-8")).hexdigest()


def resolve_probes(probes: list[dict[str, Any]], turns: list[Turn]) -> dict[str, Any]:
    """Fill each probe's prompt from its ``before`` turn; check ``_prompt_sha1``. Returns the usable
    probes (with ``prompt`` set) and the problems (missing turn, hash mismatch)."""
    by_id = {t.id: t for t in turns}
    ok: list[dict[str, Any]] = []
    problems: list[str] = []
    for p in probes:
        b = p.get("before") or {}
        ref = f"{b.get('session')}#{b.get('turn')}"
        prompt = p.get("prompt")
        if prompt is None:
            t = by_id.get(ref)
            if t is None:
                problems.append(f"{p.get('pid')}: no turn {ref}")
                continue
            prompt = t.request
            want = p.get("_prompt_sha1")
            if want and prompt_sha1(prompt) != want:
                problems.append(f"{p.get('pid')}: prompt of {ref} does not match _prompt_sha1")
                continue
        ok.append({**p, "prompt": prompt})
    return {"probes": ok, "problems": problems}


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


def _ratio(a: int, b: int) -> float | None:
    return round(a / b, 3) if b else None


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
    all_act: list[tuple[Memory, list[dict[str, Any]], str]] = []
    all_cand: list[tuple[Memory, list[dict[str, Any]], str]] = []
    all_items: list[tuple[dict[str, Any], list[Memory], list[Memory], str]] = []
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
        lab = load_labels(labels_dir, p) if labels_dir else None
        if lab is not None:
            pr = resolve_probes(lab["probes"], turns)
            row["probes"] = {"loaded": len(lab["probes"]), "usable": len(pr["probes"]),
                             "by_type": {k: sum(x.get("type") == k for x in pr["probes"])
                                         for k in ("need_point", "later_task", "negative")},
                             "problems": pr["problems"]}
            items = list(lab.get("items", []))
            have = {i.get("_slot") for i in items}
            for slot, val in (lab.get("_world") or {}).items():   # expected world slots are items too
                if slot not in have:
                    items.append({"iid": f"{p}-world-{slot}", "kind": "fact", "_slot": slot, "_value": val,
                                  "evidence": []})
            row["active_pr"] = _pr(active, items)
            row["candidate_pr"] = _pr(cands, items)
            all_act += [(m, items, p) for m in active]
            all_cand += [(m, items, p) for m in cands]
            all_items += [(i, active, cands, p) for i in items if not i.get("superseded_by")]
            if lab.get("_world"):
                row["world"] = world(mems, lab["_world"])
                worlds.append(bool(row["world"]["ok"]))
        per[p] = row

    def overall(which: int, keep: Any = lambda p: True, kind: str | None = None) -> dict[str, Any]:
        pairs = [(m, its) for m, its, p in (all_act if which == 0 else all_cand)
                 if keep(p) and (kind is None or _group(m.kind) == _group(kind))]
        ok = sum(any(matches(m, i) for i in its) for m, its in pairs)
        live = [(i, a if which == 0 else c) for i, a, c, p in all_items
                if keep(p) and (kind is None or i["kind"] == kind)]
        found = sum(any(matches(m, i) for m in ms) for i, ms in live)
        return {"precision": _ratio(ok, len(pairs)), "memories": len(pairs), "correct": ok,
                "recall": _ratio(found, len(live)), "items": len(live), "found": found}

    def member(group: tuple[str, ...] | None) -> Any:
        return (lambda p: p not in BLIND) if group is None else (lambda p: p in group)

    groups = {g: {"active": overall(0, member(ps)), "candidates": overall(1, member(ps))} for g, ps in GROUPS.items()}
    # precision per memory kind group (rules are judged together), recall per label kind
    per_kind = {k: {"recall": overall(0, kind=k)["recall"], "items": overall(0, kind=k)["items"]} for k in JUDGED}
    for k in ("rule", "fact", "procedure"):
        o = overall(0, kind="preference" if k == "rule" else k)
        per_kind.setdefault("_precision", {})[k] = {"precision": o["precision"], "memories": o["memories"]}
    probe_problems = [x for r in per.values() for x in r.get("probes", {}).get("problems", [])]

    return {"projects": per,
            "overall": {"active": overall(0), "candidates": overall(1), "groups": groups, "per_kind": per_kind,
                        "probes": sum(r.get("probes", {}).get("usable", 0) for r in per.values()),
                        "probe_problems": probe_problems,
                        "world_model_projects_right": f"{sum(worlds)}/{len(worlds)}",
                        "turns": total_turns, "learn_seconds": round(total_time, 3),
                        "turns_per_second": round(total_turns / total_time, 1) if total_time else None,
                        "seconds_per_1000_turns": round(1000 * total_time / total_turns, 3) if total_turns else None},
            "not_measured": "need points, false injection and stale injections: remem.bench.learn_packets; "
                            "packet size, database growth and learn speed through a home: remem.bench.learn_store "
                            "(all three: remem bench learn)"}


def render(rep: dict[str, Any]) -> str:
    lines: list[str] = []
    for p, r in rep["projects"].items():
        line = f"{p:15s} turns {r['turns']:4d}  active {r['active']:3d}  cand {r['candidates']:3d}"
        if "active_pr" in r:
            ap_ = r["active_pr"]
            line += f"  P {ap_['precision']}  R {ap_['recall']}  (cand R {r['candidate_pr']['recall']})"
        if "world" in r:
            line += f"  world {'ok' if r['world']['ok'] else 'WRONG'}"
        lines.append(line)
    o = rep["overall"]
    lines.append(f"overall active P {o['active']['precision']} ({o['active']['correct']}/{o['active']['memories']})  "
                 f"R {o['active']['recall']} ({o['active']['found']}/{o['active']['items']});  candidates P "
                 f"{o['candidates']['precision']} R {o['candidates']['recall']};  world {o['world_model_projects_right']};  "
                 f"{o['turns_per_second']} turns/s")
    for g, v in o["groups"].items():
        a, c = v["active"], v["candidates"]
        lines.append(f"  {g:8s} active P {a['precision']} ({a['correct']}/{a['memories']})  R {a['recall']} "
                     f"({a['found']}/{a['items']});  candidates R {c['recall']}")
    lines.append("  recall by kind: " + ", ".join(f"{k} {v['recall']} ({v['items']})" for k, v in o["per_kind"].items()
                                                 if not k.startswith("_")))
    lines.append("  precision by kind: " + ", ".join(f"{k} {v['precision']} ({v['memories']})"
                                                    for k, v in o["per_kind"]["_precision"].items()))
    lines.append(f"  probes usable {o['probes']}, problems {len(o['probe_problems'])}"
                 + ("".join(f"\n    {x}" for x in o["probe_problems"][:20])))
    lines.append("not measured here: " + rep["not_measured"])
    return "\n".join(lines)


def arguments(doc: str | None) -> Any:
    """The learning benchmarks' command line: ``--data``, ``--labels``, ``--project``, ``--json``."""
    import argparse

    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="the derive-dev folder (holds raw/<project>/)")
    ap.add_argument("--labels", default="bench/learn-labels" if os.path.isdir("bench/learn-labels") else None,
                    help="folder of <project>.json label files (default: bench/learn-labels when present)")
    ap.add_argument("--project", action="append", help="only these projects (repeatable)")
    ap.add_argument("--json", action="store_true", help="print the whole report as JSON")
    return ap


def parse(ap: Any, argv: list[str] | None, *, labels: bool = False) -> Any | None:
    """``ap``'s arguments, or None after saying why: ``--data`` holds no raw/ folder, or (``labels``)
    ``--labels`` is no folder."""
    a = ap.parse_args(argv)
    if not os.path.isdir(os.path.join(a.data, "raw")):
        print(f"no raw/ folder under {a.data}", file=sys.stderr)
        return None
    if labels and not (a.labels and os.path.isdir(a.labels)):
        print(f"no label folder {a.labels}", file=sys.stderr)
        return None
    return a


def main(argv: list[str] | None = None) -> int:
    a = parse(arguments(__doc__), argv)
    if a is None:
        return 2
    rep = run(a.data, a.labels, a.project)
    if a.json:
        print(json.dumps(rep, indent=1, ensure_ascii=False))
        return 0
    print(render(rep))
    return 0


if __name__ == "__main__":
    sys.exit(main())

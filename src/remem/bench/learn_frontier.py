"""How far activation alone can move issue 16's learning targets: the learning bench under policies
that make more of the once-said rule statements active.

A rule statement said once, without "always" / 以后 or "remember", stays a candidate: it waits for a
second session, a third restatement or the user's approval (``layers.lifecycle.activation``). This
harness measures what admitting those candidates would buy and cost, on the same labels and probes as
``remem bench learn``:

* ``shipped``: the product's activation;
* ``anchored``: also every preference, convention and decision said once that names a tool, a path,
  `code` or a project term (or says what to use instead);
* ``said-once``: also every preference, convention and decision said once.

For each policy and group (all, tuned six, held-out five, blind labels): active precision and recall
(``remem.bench.learn``), need-point coverage in packets and false injection
(``remem.bench.learn_packets``, core facts in the SessionStart context), the need points an active
memory holds whether or not the packet picked it (the selection ceiling), and why the others were
missed: active but not picked, only a candidate, or not learned at all.

The policies are applied by swapping ``lifecycle.activation`` for the length of a run (the product has
no such setting: candidates are never injected). Measurement only; the histories are read from
``--data`` at run time.

    python -m remem.bench.learn_frontier --data ../shared/bench/derive-dev [--policy anchored] [--json]
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..layers import lifecycle
from ..layers.types import Memory
from . import learn as learn_bench
from . import learn_packets
from .learn import BLIND, HELDOUT, TUNE

POLICIES = ("shipped", "anchored", "said-once")
SAID_ONCE_KINDS = ("preference", "convention", "decision")
GROUPS: dict[str, tuple[str, ...] | None] = {"all": None, "tune": TUNE, "heldout": HELDOUT, "blind": BLIND}


def _anchored(m: Memory) -> bool:
    return bool(m.data.get("anchors") or m.slot or m.data.get("avoid"))


@contextmanager
def activation_policy(name: str) -> Iterator[None]:
    """Learn under policy ``name`` (one of :data:`POLICIES`) inside the block."""
    if name not in POLICIES:
        raise ValueError(f"unknown policy {name!r}: one of {', '.join(POLICIES)}")
    base = lifecycle.activation
    if name == "shipped":
        yield
        return

    def policy(m: Memory) -> str:
        status = base(m)
        if status == "candidate" and m.kind in SAID_ONCE_KINDS and (name == "said-once" or _anchored(m)):
            return "active"
        return status

    lifecycle.activation = policy
    try:
        yield
    finally:
        lifecycle.activation = base


def _rate(a: int, b: int) -> float | None:
    return round(a / b, 3) if b else None


def need_points(packets: dict[str, Any], projects: tuple[str, ...] | None) -> dict[str, Any]:
    """Need points of ``projects`` (all with None) from a ``learn_packets.run`` report: covered in the
    packet, held by an active memory (the selection ceiling), and the misses by cause."""
    covered = total = 0
    why = {"active_not_picked": 0, "candidate_only": 0, "not_learned": 0}
    negatives = [0, 0]
    for p, row in packets["projects"].items():
        if projects is not None and p not in projects:
            continue
        got, n = (int(x) for x in row["need_point"].split("/"))
        covered += got
        total += n
        a, b = (int(x) for x in row["negative"].split("/"))
        negatives[0] += a
        negatives[1] += b
        for miss in row["misses"]:
            if miss.get("type") != "need_point":
                continue
            why["active_not_picked" if miss["learned_active"] else
                "candidate_only" if miss["learned_candidate"] else "not_learned"] += 1
    return {"coverage": _rate(covered, total), "need_points": total,
            "ceiling": _rate(covered + why["active_not_picked"], total), "missed": why,
            "false_injection": _rate(*negatives), "negatives": negatives[1]}


def run(data: str, labels_dir: str, policies: tuple[str, ...] = POLICIES,
        projects: list[str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in policies:
        with activation_policy(name):
            full = learn_bench.run(data, labels_dir, projects)
            packets = learn_packets.run(data, labels_dir, projects, core_at="session_start", feedback=False)
        ext, seen = full["overall"], set(full["projects"])
        rows: dict[str, Any] = {}
        for g, members in GROUPS.items():
            active = ext["active"] if g == "all" else ext["groups"].get(g, {}).get("active")
            if not active or members is not None and not seen & set(members):
                continue
            rows[g] = {"active_precision": active["precision"], "active_memories": active["memories"],
                       "active_recall": active["recall"], "items": active["items"],
                       **need_points(packets, members)}
        out[name] = rows
    return {"policies": out, "core_at": "session_start", "feedback": False}


def render(rep: dict[str, Any]) -> str:
    lines = [f"{'policy':10s} {'group':8s} {'P':>6s} {'R':>6s} {'need':>6s} {'ceiling':>8s} {'FI':>6s}  "
             "need-point misses"]
    for name, rows in rep["policies"].items():
        for g, r in rows.items():
            lines.append(f"{name:10s} {g:8s} {r['active_precision'] or 0:6.3f} {r['active_recall'] or 0:6.3f} "
                         f"{r['coverage'] or 0:6.3f} {r['ceiling'] or 0:8.3f} {r['false_injection'] or 0:6.3f}  "
                         + json.dumps(r["missed"]))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = learn_bench.arguments(__doc__)
    ap.add_argument("--policy", action="append", choices=POLICIES, help="only these policies (repeatable)")
    a = learn_bench.parse(ap, argv, labels=True)
    if a is None:
        return 2
    rep = run(a.data, a.labels, tuple(a.policy or POLICIES), a.project)
    print(json.dumps(rep, indent=1) if a.json else render(rep))
    return 0


if __name__ == "__main__":
    sys.exit(main())

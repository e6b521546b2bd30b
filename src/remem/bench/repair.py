#!/usr/bin/env python3
"""Decision repair on the derive-dev split (issue 18): at the second occurrence of an error family in
a session, is the fix that later worked in the repair packet?

Each project's history (read as ``remem.bench.learn`` reads it: the SpecStory parser, tool calls
converted as the learn job converts them) is replayed in time order into a fresh store (lexical
recall, as the hook's own fallback). Every failed shell call is counted by the hook's trigger
(``layers/repair.py``: command family × error signature key, per session). Where the trigger first
fires for a family (its second failure), the store holds every earlier turn, the project was learned
up to the start of the session, and ``Remem.repair`` builds the packet the hook would deliver — with
the session and the open turn's calls up to the failing one.

The fix that later worked is read out of the rest of that session (:func:`fixes`: the same family
passing after its last failure, with the edits and commands in between; unlike the learner's
procedures, without a two-turn limit): its *delta*, the words of those steps (edited file names, the
commands run) and of the passing command that the failing commands did not have (a `cd` into a package, a
flag, the file edited). A case *holds one in its history*
when a fix of the same error family, earlier (an earlier session, or earlier in this one), shares
words of that delta; the fix is *in the packet* when the packet holds at least half of those shared
words (``fix_words_in_packet``: the same test on every case fixed later, whatever its history holds).
``cases`` counts every trigger; ``fixed_later`` those with a later fix; ``held`` those whose
history holds it (the denominator of the target, ≥ 60 %); ``by_signature`` the same with earlier
fixes of the same signature key under any command family; ``in_turns`` the same test on the packet's past
turns alone, rendered at the same budget (what the packet holds without its procedures and avoid lines).

Nothing of the histories is printed but counts and, with ``--cases``, project, session file, turn
number, family and signature key.

    python -m remem.bench.repair --data ../shared/bench/derive-dev [--project chitin] [--cases] [--json]
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
import time
from typing import Any

from ..layers.commands import outcome
from ..layers.repair import command_family, error_key, note_failure
from ..layers.types import Action, Turn
from ..model import ToolCall, TurnIn
from ..recall import packet as pk
from .learn import read_project, sessions

AGENT = "cursor"
_TOK = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
_NOISE = frozenset(("cd", "eval", "run", "bin", "opt", "homebrew", "brew", "shellenv", "users", "dev", "cat",
                    "echo", "the", "and", "powershell", "command", "c%3a", "null", "true", "false"))


def words(text: str) -> set[str]:
    """The words a fix is told by: lower case, no punctuation at their ends, 3+ characters."""
    out = set()
    for t in _TOK.findall(text.lower().replace("\\", "/")):
        t = t.strip("._-")
        if len(t) >= 3 and t not in _NOISE:
            out.add(t)
    return out


MAX_FIX_STEPS = 8


def fixes(session_turns: list[Turn]) -> list[tuple[tuple[str, str], int, int, set[str]]]:
    """Every fix of an error family in one session's turns: ((family, key), turn of its first
    failure, turn it passed in, the fix's delta). A family's fix is what ran after its last failure —
    edits, other commands (at most ``MAX_FIX_STEPS``) — and the same family passing; its delta the
    words of those and of the passing command that the failing commands lacked. The same command
    passing with nothing in between is a flake, not a fix. No lookahead limit (the learner's
    procedures want the pass within two turns; a session's later fix counts here)."""
    out: list[tuple[tuple[str, str], int, int, set[str]]] = []
    open_: dict[tuple[str, str], dict[str, Any]] = {}
    for ti, t in enumerate(session_turns):
        for a in t.actions:
            shell = a.tool == "shell" and bool(a.command.strip())
            res = outcome(a) if shell else ""
            fam = command_family("shell", a.command) if shell else ""
            if res == "failed":
                k = (fam, error_key(a.output))
                if k[1]:
                    ep = open_.setdefault(k, {"first": ti, "failing": [], "steps": []})
                    ep["failing"].append(a.command)
                    ep["steps"] = []
                    ep["last"] = " ".join(a.command.split())
                    continue
            for k in [k for k in open_ if shell and res == "ok" and k[0] == fam]:
                ep = open_.pop(k)
                if not ep["steps"] and " ".join(a.command.split()) == ep["last"]:
                    continue
                told = set().union(*(words(x) for x in ep["steps"][-MAX_FIX_STEPS:])) | words(a.command)
                delta = told - words(" ".join(ep["failing"]))
                if delta:
                    out.append((k, ep["first"], ti, delta))
            step = (a.path.replace("\\", "/").rsplit("/", 1)[-1] if a.tool == "edit" and a.path
                    else a.command if shell else "")
            if step:
                for ep in open_.values():
                    ep["steps"].append(step)
    return out


def to_turn_in(t: Turn, project: str) -> TurnIn:
    """A bench turn as the store takes it (tool calls in the shapes the learn job converts back)."""
    calls = []
    for a in t.actions:
        if a.tool == "shell":
            calls.append(ToolCall("run_terminal_cmd", json.dumps({"command": a.command}), a.output,
                                  outcome(a) == "failed"))
        elif a.tool in ("edit", "read") and a.path:
            calls.append(ToolCall("edit_file" if a.tool == "edit" else "read_file",
                                  json.dumps({"target_file": a.path}), a.output, a.status == "failed"))
    shells = [a for a in t.actions if a.tool == "shell" and a.command.strip()]
    status = "failed" if shells and outcome(shells[-1]) == "failed" else "succeeded"
    ts = float(t.ts or 0) or None
    return TurnIn(request=t.request or "(empty request)", reply=t.reply, actions=calls, agent=AGENT, project=project,
                  session_id=t.session, source_key=f"bench:{t.id}", status=status, started_at=ts,
                  ended_at=ts + 60 if ts else None)


def tool_dicts(actions: list[Action]) -> list[dict[str, Any]]:
    return [c.to_dict() for c in to_turn_in(Turn(id="x", session="x", request="x", actions=actions), "").actions]


def run_project(project_dir: str, project: str, *, keep_cases: bool = False) -> dict[str, Any]:
    from .. import Remem

    turns = read_project(project_dir, project)
    order = {name: i for i, name in enumerate(sessions(project_dir))}
    turns.sort(key=lambda t: (order.get(t.session, 0), t.index))
    by_session: dict[str, list[Turn]] = {}
    for t in turns:
        by_session.setdefault(t.session, []).append(t)
    c: dict[str, Any] = {"cases": 0, "fixed_later": 0, "held": 0, "in_packet": 0, "held_by_signature": 0,
         "in_packet_by_signature": 0, "with_procedure": 0, "with_avoid": 0, "empty": 0, "fix_words_in_packet": 0,
                         "earlier_fix_of_family": 0, "in_turns": 0, "in_turns_by_signature": 0}
    listed: list[dict[str, Any]] = []
    earlier: list[tuple[tuple[str, str], set[str], str, int]] = []   # family, delta, session, fixed-in index
    ms: list[float] = []
    with tempfile.TemporaryDirectory(prefix="remem-bench-repair-") as home:
        env = {**os.environ, "REMEM_EMBEDDING_ENABLED": "false", "REMEM_NO_PLUGINS": "1"}
        env.pop("REMEM_DATABASE_URL", None)
        mem = Remem(home, env=env)
        try:
            for name in sorted(by_session, key=lambda s: order.get(s, 0)):
                st_turns = by_session[name]
                found = fixes(st_turns)
                trig: dict[str, Any] = {}
                learned_here = False
                for ti, t in enumerate(st_turns):
                    for ai, a in enumerate(t.actions):
                        if a.tool != "shell" or not a.command.strip() or outcome(a) != "failed":
                            continue
                        fam, key = command_family("shell", a.command), error_key(a.output)
                        if not note_failure(trig, fam, key) or trig["sent"].get(f"{fam}\x1f{key}") != 2:
                            continue
                        c["cases"] += 1
                        later = [f for f in found if f[0] == (fam, key) and f[2] >= ti]
                        delta = later[0][3] if later else set()
                        if not learned_here:
                            mem.learn(project=project)
                            learned_here = True
                        t0 = time.perf_counter()
                        got = mem.repair(a.output, tool="run_terminal_cmd", command=a.command, project=project,
                                         session=name, attempts=tool_dicts(t.actions[: ai + 1]), agent=AGENT)
                        ms.append(1000 * (time.perf_counter() - t0))
                        text = words(got.get("text") or "")
                        alone = pk.render([i for i in got.get("items") or [] if i.get("layer") == "L1"],
                                          budget=int(got.get("budget") or 1500), now=time.time())[0]
                        l1 = words(alone)
                        kinds = [i.get("layer") for i in got.get("items") or []]
                        c["with_procedure"] += any(k in ("L2", "L3") for k in kinds)
                        c["with_avoid"] += "avoid" in kinds
                        c["empty"] += not got.get("text")
                        row = {"project": project, "session": name, "turn": t.index, "family": fam, "key": key,
                               "fixed_later": bool(later)}
                        c["earlier_fix_of_family"] += any(f == (fam, key) and (s != name or fi < ti)
                                                          for f, _, s, fi in earlier)
                        if later and delta:
                            c["fixed_later"] += 1
                            c["fix_words_in_packet"] += len(text & delta) * 2 >= len(delta)
                            for tag, strict in (("", True), ("_by_signature", False)):
                                shared = [delta & d for f, d, s, fi in earlier
                                          if (f == (fam, key) if strict else f[1] == key)
                                          and (s != name or fi < ti) and delta & d]
                                if not shared:
                                    continue
                                c["held" + tag] += 1
                                hit = any(len(text & sh) * 2 >= len(sh) for sh in shared)
                                c["in_packet" + tag] += hit
                                c["in_turns" + tag] += any(len(l1 & sh) * 2 >= len(sh) for sh in shared)
                                row["held" + tag], row["in_packet" + tag] = True, hit
                        if keep_cases:
                            listed.append(row)
                    # the turn is written after its calls: the next failures see it
                    mem.add_turns([to_turn_in(t, project)])
                for k, _, fixed_at, d in found:
                    earlier.append((k, d, name, fixed_at))
        finally:
            mem.close()
    c["turns"] = len(turns)
    c["repair_ms_p50"] = round(sorted(ms)[len(ms) // 2], 1) if ms else None
    if keep_cases:
        c["case_list"] = listed
    return c


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="the derive-dev folder (holds raw/<project>/)")
    ap.add_argument("--project", action="append", help="only these projects (repeatable)")
    ap.add_argument("--cases", action="store_true", help="list every case (project, session, turn, family, key)")
    ap.add_argument("--json", action="store_true", help="print the whole report as JSON")
    args = ap.parse_args(argv)
    raw = os.path.join(args.data, "raw")
    projects = args.project or sorted(p for p in os.listdir(raw) if os.path.isdir(os.path.join(raw, p)))
    t0 = time.perf_counter()
    per = {p: run_project(os.path.join(raw, p), p, keep_cases=args.cases) for p in projects}
    keys = ("cases", "fixed_later", "held", "in_packet", "held_by_signature", "in_packet_by_signature",
            "with_procedure", "with_avoid", "empty", "fix_words_in_packet", "earlier_fix_of_family", "in_turns", "in_turns_by_signature", "turns")
    total: dict[str, Any] = {k: sum(int(v.get(k) or 0) for v in per.values()) for k in keys}
    total["fix_in_packet"] = round(total["in_packet"] / total["held"], 3) if total["held"] else None
    total["fix_in_packet_by_signature"] = (round(total["in_packet_by_signature"] / total["held_by_signature"], 3)
                                           if total["held_by_signature"] else None)
    total["seconds"] = round(time.perf_counter() - t0, 1)
    report = {"overall": total, "projects": per}
    if args.json:
        json.dump(report, sys.stdout, indent=1, ensure_ascii=False)
        print()
        return 0
    print(f"repair packets at the second failure of an error family: {total['cases']} cases, "
          f"{total['fixed_later']} fixed later in their session, {total['earlier_fix_of_family']} with an earlier fix "
          "of the family (whatever it did)")
    print(f"fix that later worked in the packet, where the history holds it (same family and signature): "
          f"{total['in_packet']} / {total['held']} = {total['fix_in_packet']}")
    print(f"  same signature key, any command family: {total['in_packet_by_signature']} / "
          f"{total['held_by_signature']} = {total['fix_in_packet_by_signature']}")
    print(f"  in the past turns alone (no procedures, no avoid lines): {total['in_turns']} / {total['held']}; "
          f"by signature {total['in_turns_by_signature']} / {total['held_by_signature']}")
    print(f"  any case fixed later whose packet holds half of the fix's words: {total['fix_words_in_packet']} / "
          f"{total['fixed_later']}")
    print(f"packets with a procedure: {total['with_procedure']}, with avoid lines: {total['with_avoid']}, "
          f"empty: {total['empty']}; {total['turns']} turns replayed in {total['seconds']} s")
    for p, v in per.items():
        print(f"  {p:16} cases {v['cases']:3}  fixed later {v['fixed_later']:3}  held {v['held']:2} "
              f"in packet {v['in_packet']:2}  (by signature {v['in_packet_by_signature']}/{v['held_by_signature']})"
              f"  p50 {v['repair_ms_p50']} ms")
        for row in v.get("case_list") or []:
            print(f"    {row}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

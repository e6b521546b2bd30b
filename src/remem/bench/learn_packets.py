"""Learned memories at the prompts that needed them: need-point coverage and false injection.

For every probe of the dev labels (``bench/learn-labels/<id>.json`` and ``probes/<id>.json``) the
project's history is learned up to the probe (earlier sessions and the turns before it in its own
session: only the past is visible), the learned channel picks what it would put in the packet for
the probe's prompt (``layers.select.pick``), and the picks are judged against the probe's
``expects`` with the matcher of ``remem.bench.learn``:

* need-point coverage: need_point probes whose expected items have a picked memory holding one;
* later-task coverage: the same for later_task probes;
* false injection: negative probes (nothing learned is relevant) that get any learned item; also
  without the project's core facts that the first prompt of a session carries by design
  (``false_injection_prompt_matched``: items the prompt itself brought in).

Feedback (issue 18) is simulated from the histories themselves: before each session the project is
learned up to that point (at most ``SNAPSHOTS`` learns a project; between them the latest one stands),
every earlier turn gets the packet the learned channel would have built for it, its outcome is judged
from the user's next message and the commands' results (``layers.feedback.turn_outcome``), and the
verdicts (``layers.feedback.judge``) known before a probe are folded into the memories learned for it
(``layers.feedback.apply``) before its packet is picked. ``overall`` is with feedback,
``without_feedback`` the same probes without it (``--no-feedback``: only that).

Probe prompts are not stored in the labels (the histories carry no licence): each probe has
``_prompt_sha1`` and the prompt is read from the history here and checked against it.

    python -m remem.bench.learn_packets --data ../shared/bench/derive-dev [--project chitin] [--json]
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import time
from copy import copy
from typing import Any

from ..layers import feedback as fbk
from ..layers.learn import learn
from ..layers.select import RECENT_TURNS, pick, recent_context
from ..layers.types import Memory, Turn
from .learn import TUNE, arguments, load_labels, matches, parse, read_project

KINDS = ("need_point", "later_task", "negative", "negative_prompt_matched")


def labels(labels_dir: str, project: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(items, probes) of a project's labels (``learn.load_labels``: either file may be missing)."""
    lab = load_labels(labels_dir, project) or {}
    return list(lab.get("items", [])), list(lab.get("probes", []))


def _position(turns: list[Turn], session: str, k: int) -> int | None:
    for i, t in enumerate(turns):
        if t.session == session and t.index == k:
            return i
    return None


SNAPSHOTS = 40       # learns a project at most, for the packets of its earlier turns (feedback)


def feedback_events(turns: list[Turn], upto: int, cache: dict[int, list[Memory]],
                    timing: dict[str, float]) -> list[tuple[int, str, str, str]]:
    """(known at position, memory id, effect, turn id) for every turn before ``upto``: the packet the
    learned channel builds for it from what was learned before its session, judged by what followed."""
    starts = [i for i in range(min(upto, len(turns))) if i == 0 or turns[i].session != turns[i - 1].session]
    step = max(1, -(-len(starts) // SNAPSHOTS))
    snap = set(starts[::step])
    out: list[tuple[int, str, str, str]] = []
    active: list[dict[str, Any]] = []
    for j in range(min(upto, len(turns)) - 1):
        if j in snap:
            if j not in cache:
                t0 = time.perf_counter()
                cache[j] = learn(turns[:j])
                timing["learn_s"] = timing.get("learn_s", 0.0) + time.perf_counter() - t0
            active = [m.to_dict() | {"polarity": m.polarity} for m in cache[j] if m.status == "active"]
        t, nxt = turns[j], turns[j + 1]
        if nxt.session != t.session or not active:
            continue
        first = j == 0 or turns[j - 1].session != t.session
        ctx = recent_context(a for x in turns[max(0, j - RECENT_TURNS):j] if x.session == t.session for a in x.actions)
        picked = pick(active, t.request, first_of_session=first, now=t.ts or time.time(), recent_context=ctx)
        result = fbk.turn_outcome(t, nxt)
        for v in fbk.judge(picked, t, nxt, result):
            out.append((j + 1, v.memory_id, v.effect, t.id))
    return out


def with_feedback(mems: list[Memory], events: list[tuple[int, str, str, str]], pos: int) -> list[Memory]:
    """The memories learned for a probe at ``pos`` with the feedback known before it folded in (copies)."""
    fb: dict[str, dict[str, Any]] = {}
    for at, mid, effect, tid in events:
        if at < pos:
            fb[mid] = fbk.add(fb.get(mid), effect, tid)
    out = []
    for m in mems:
        if m.id in fb:
            m = copy(m)
            m.data = dict(m.data)
            fbk.apply(m, fb[m.id])
        out.append(m)
    return out



def _says(m: Memory, item: dict[str, Any]) -> bool:
    """``m`` says what the labelled item says: it matches (kind and evidence, or slot and value) and
    names one of the item's keywords (evidence alone is loose: a build-command fact citing the turn that
    named the app is not a statement of its name)."""
    if not matches(m, item):
        return False
    if item.get("_slot"):
        return True
    text = m.text.lower()
    return any(re.search(r"(?<!\w)" + re.escape(k.lower()) + r"(?!\w)", text) for k in item.get("keywords", []))


def _stale(m: Memory, by_iid: dict[str, dict[str, Any]], iid: str) -> bool:
    """``m`` says the replaced item ``iid`` and not (also) the item that replaced it."""
    new = by_iid[iid].get("superseded_by")
    return _says(m, by_iid[iid]) and not (new in by_iid and _says(m, by_iid[new]))


def run(data: str, labels_dir: str, projects: list[str] | None = None, *,
        core_at: str = "prompt", feedback: bool = True,
        caches: dict[str, dict[int, list[Memory]]] | None = None) -> dict[str, Any]:
    """``feedback``: fold the feedback simulated from the history before each probe into its memories
    (module doc). ``core_at="prompt"``: the core facts ride with a session's first prompt (what turn_start does);
    ``"session_start"``: they are in the SessionStart context instead, visible to every prompt of the
    session (counted for coverage) but not part of any prompt's packet (not counted as injection)."""
    raw = os.path.join(data, "raw")
    names = projects or sorted(d for d in os.listdir(raw) if os.path.isdir(os.path.join(raw, d)))
    per: dict[str, Any] = {}
    tot: dict[str, Any] = {"need_point": [0, 0], "later_task": [0, 0], "negative": [0, 0],
                           "negative_prompt_matched": [0, 0], "items": 0, "stale": [0, 0],
                           "probes": 0, "bad_prompt": 0, "learn_s": 0.0, "negative_why": {}, "feedback": {}}
    for p in names:
        items, probes = labels(labels_dir, p)
        if not probes:
            continue
        by_iid = {i["iid"]: i for i in items}
        turns = read_project(os.path.join(raw, p), p)   # contract order: sessions by name, turns in order
        # labelled items a later statement replaced, and from which position on they are stale
        ended: dict[str, int] = {}
        for i in items:
            until = i.get("valid_until")
            end = _position(turns, until["session"], int(until["turn"])) if until else None
            if end is not None:
                ended[i["iid"]] = end
        row: dict[str, Any] = {"need_point": [0, 0], "later_task": [0, 0], "negative": [0, 0],
                               "negative_prompt_matched": [0, 0], "items": 0, "misses": []}
        cache: dict[int, list[Memory]] = caches.setdefault(p, {}) if caches is not None else {}
        starts: dict[str, list[Memory]] = {}
        events: list[tuple[int, str, str, str]] = []
        if feedback:
            last = max((p for p in (_position(turns, pr["before"]["session"], int(pr["before"]["turn"]))
                                    for pr in probes) if p is not None), default=0)
            timing: dict[str, float] = {}
            events = feedback_events(turns, last, cache, timing)
            tot["learn_s"] += timing.get("learn_s", 0.0)
            for _at, _mid, effect, _tid in events:
                tot["feedback"][effect] = tot["feedback"].get(effect, 0) + 1
        for pr in probes:
            b = pr["before"]
            pos = _position(turns, b["session"], int(b["turn"]))
            if pos is None:
                tot["bad_prompt"] += 1
                continue
            prompt = turns[pos].request
            if pr.get("_prompt_sha1") and hashlib.sha1(prompt.encode("utf-8")).hexdigest() != pr["_prompt_sha1"]:
                tot["bad_prompt"] += 1
                continue
            if pos not in cache:
                t0 = time.perf_counter()
                cache[pos] = learn(turns[:pos])
                tot["learn_s"] += time.perf_counter() - t0
            mems = with_feedback(cache[pos], events, pos) if events else cache[pos]
            by_id = {m.id: m for m in mems}
            now = turns[pos].ts or time.time()
            first = int(b["turn"]) == 1
            active = [m.to_dict() for m in mems if m.status == "active"]
            ctx = recent_context(a for t in turns[max(0, pos - RECENT_TURNS):pos] if t.session == b["session"]
                                 for a in t.actions)
            picked = pick(active, prompt, first_of_session=first and core_at == "prompt", now=now,
                          new_session=first, recent_context=ctx)
            pinned: list[Memory] = []
            if core_at == "session_start":
                if b["session"] not in starts:
                    s0 = next(i for i, t in enumerate(turns) if t.session == b["session"])
                    if s0 not in cache:
                        cache[s0] = learn(turns[:s0])
                    at = {m.id: m for m in cache[s0]}
                    got = pick([m.to_dict() for m in cache[s0] if m.status == "active"], "",
                               entry="session_start", now=now)
                    starts[b["session"]] = [at[x["id"]] for x in got if x["id"] in at]
                pinned = starts[b["session"]]
            row["items"] += len(picked)
            # stale injections: what this packet (and the session's pinned core) shows that matches an
            # item already replaced by the time of this prompt (labels: valid_until)
            shown = [by_id[x["id"]] for x in picked if x["id"] in by_id] + pinned
            tot["stale"][1] += len(shown)
            tot["stale"][0] += sum(any(_stale(m, by_iid, iid)
                                       for iid, end in ended.items() if end <= pos) for m in shown)
            kind = pr.get("type", "")
            if kind not in row:
                continue
            row[kind][1] += 1
            if kind == "negative":
                for x in picked:        # why the items of unrelated prompts came in (slot, words, …)
                    tot["negative_why"][x["why"]] = tot["negative_why"].get(x["why"], 0) + 1
                row[kind][0] += bool(picked)
                row["negative_prompt_matched"][0] += any(x["why"] != "core" for x in picked)
                row["negative_prompt_matched"][1] += 1
                continue
            want = [by_iid[i] for i in pr.get("expects", []) if i in by_iid]
            hit = any(matches(by_id[x["id"]], i) for x in picked if x["id"] in by_id for i in want) or \
                any(matches(m, i) for m in pinned for i in want)
            row[kind][0] += hit
            if not hit:
                have = any(matches(m, i) for m in mems if m.status == "active" for i in want)
                cand = any(matches(m, i) for m in mems if m.status == "candidate" for i in want)
                row["misses"].append({"pid": pr.get("pid"), "type": kind, "learned_active": have,
                                      "learned_candidate": cand, "picked": len(picked)})
        per[p] = row
        grp = tot.setdefault("tune" if p in TUNE else "heldout", {k: [0, 0] for k in KINDS})
        for k in KINDS:
            grp[k][0] += row[k][0]
            grp[k][1] += row[k][1]
        for k in KINDS:
            tot[k][0] += row[k][0]
            tot[k][1] += row[k][1]
        tot["items"] += row["items"]
        tot["probes"] += sum(row[k][1] for k in ("need_point", "later_task", "negative"))

    def rate(x: list[int]) -> float | None:
        return round(x[0] / x[1], 3) if x[1] else None

    return {"projects": {p: {k: (f"{r[k][0]}/{r[k][1]}" if k in KINDS else r[k])
                             for k in r} for p, r in per.items()},
            "overall": {"need_point_coverage": rate(tot["need_point"]), "need_points": tot["need_point"][1],
                        "later_task_coverage": rate(tot["later_task"]), "later_tasks": tot["later_task"][1],
                        "false_injection": rate(tot["negative"]), "negatives": tot["negative"][1],
                        "stale_injections": tot["stale"][0], "shown": tot["stale"][1],
                        "false_injection_prompt_matched": rate(tot["negative_prompt_matched"]),
                        "negative_items_by_why": dict(sorted(tot["negative_why"].items())),
                        "learned_items_per_probe": round(tot["items"] / tot["probes"], 2) if tot["probes"] else None,
                        "probes_unreadable": tot["bad_prompt"], "learn_seconds": round(tot["learn_s"], 1),
                        "core_at": core_at, "feedback": feedback, "feedback_verdicts": tot["feedback"]},
            "groups": {g: {"need_point_coverage": rate(tot[g]["need_point"]),
                           "later_task_coverage": rate(tot[g]["later_task"]),
                           "false_injection": rate(tot[g]["negative"]),
                           "false_injection_prompt_matched": rate(tot[g]["negative_prompt_matched"]),
                           "counts": {k: tot[g][k] for k in KINDS}}
                       for g in ("tune", "heldout") if g in tot}}


def report(data: str, labels_dir: str, projects: list[str] | None = None, *, core_at: str = "prompt",
           feedback: bool = True) -> dict[str, Any]:
    """:func:`run`; with ``feedback``, also the same probes without it (``without_feedback``), on the same learns."""
    caches: dict[str, dict[int, list[Memory]]] = {}
    rep = run(data, labels_dir, projects, core_at=core_at, feedback=feedback, caches=caches)
    if feedback:
        base = run(data, labels_dir, projects, core_at=core_at, feedback=False, caches=caches)
        rep["without_feedback"] = {"overall": base["overall"], "groups": base["groups"]}
    return rep


def render(rep: dict[str, Any]) -> str:
    lines = [f"{p:15s} need {r['need_point']:>6s}  later {r['later_task']:>6s}  negative-injected "
             f"{r['negative']:>6s}  items {r['items']}" for p, r in rep["projects"].items()]
    lines.append("overall " + json.dumps(rep["overall"]))
    if "without_feedback" in rep:
        lines.append("without feedback " + json.dumps(rep["without_feedback"]["overall"]))
    lines += [f"{g} " + json.dumps({k: v for k, v in r.items() if k != "counts"}) for g, r in rep["groups"].items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = arguments(__doc__)
    ap.add_argument("--core-at", choices=("prompt", "session_start"), default="prompt",
                    help="where the core facts go: with a session's first prompt (default) or in the "
                         "SessionStart context")
    ap.add_argument("--no-feedback", action="store_true",
                    help="do not simulate feedback from the histories (by default both are reported)")
    a = parse(ap, argv, labels=True)
    if a is None:
        return 2
    rep = report(a.data, a.labels, a.project, core_at=a.core_at, feedback=not a.no_feedback)
    print(json.dumps(rep, indent=1) if a.json else render(rep))
    return 0


if __name__ == "__main__":
    sys.exit(main())

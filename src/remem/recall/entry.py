"""Recall entry points: turn_start, sub_agent, repair, resume, and ``search`` (from search.py).

Each returns a dict with at least ``text`` (what the agent receives, empty when nothing is
relevant) and ``items``. Their defaults, in one table (docs/recall.md explains them):

==========  =====  ======  =========  ======================================================
entry       k      budget  failed     notes
==========  =====  ======  =========  ======================================================
turn_start  8      2000    penalised  MMR λ 0.75, ≤ 2 per session, threshold 0.35 × best,
                                      same project ×1.2; trivial prompts get nothing
sub_agent   5      1200    penalised  like turn_start, narrower: a sub-agent's task is focused
repair      5      1500    wanted     same error signature first, each with what fixed it
resume      5 / 1  3000    shown      no session: up to 5 candidate episodes; with one: it in full
==========  =====  ======  =========  ======================================================

``session_start`` is not a search: it carries the project's core facts (commands, package manager,
≤ 3 must-follow rules) for an agent's SessionStart context, once per session; the first prompt of a
session whose start showed them leaves them out (``turn_start(..., core_shown=True)``).
"""

from __future__ import annotations

import re
from typing import Any

from ..agent_text import safe
from ..ingest.signatures import error_signatures
from ..scope import Scope
from . import gate, learned
from . import packet as pk
from . import repair as rp
from .config import PACKET, RecallConfig
from .context import RecallContext
from .search import Ranked, rank, search_sessions, to_results
from .search import search as search

DEFAULTS: dict[str, dict[str, Any]] = {
    "turn_start": {"k": 8, "budget": 2000, "project_boost": 1.2},
    "sub_agent": {"k": 5, "budget": 1200, "project_boost": 1.2},
    "repair": {"k": 5, "budget": 1500},
    "resume": {"k": 5, "budget": 3000},
}
_TRIVIAL = re.compile(r"^\s*(?:ok(?:ay)?|yes|no|y|n|continue|go on|thanks?|thank you|好的?|继续|是|否|/\w+)\s*[.!]?\s*$",
                      re.I)


def _relevant(ranked: Ranked, t: str) -> bool:
    """Something other than recency found it (recall/gate.py)."""
    return gate.relevant(ranked.details.get(t, {}).get("channels", {}))


def _items(ctx: RecallContext, scope: Scope, ranked: Ranked, order: list[tuple[str, float]],
           rows: dict[str, dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    if rows is None:
        rows = ranked.full_rows(ctx, scope, [t for t, _ in order])
    out = []
    for t, score in order:
        row = rows.get(t)
        if row is None:
            continue
        out.append({
            "id": t, "score": round(score, 6), "owner": row["owner"], "agent": row["agent"],
            "project": row["project"], "session_id": row["session_id"], "status": row["status"],
            "request": row["request"], "reply": row["reply"], "error_sigs": row["error_sigs"],
            "created_at": row["created_at"], "updated_at": row["updated_at"],
            "last_update": row.get("ended_at") or row.get("started_at") or row["updated_at"],
            "shared_by": next((str(x)[len("shared-by:"):] for x in row.get("tags") or ()
                               if str(x).startswith("shared-by:")), ""),
            "details": ranked.details.get(t, {}),
        })
    return out


def _packet(ctx: RecallContext, prompt: str, scope: Scope, *, entry: str, project: str | None, budget: int | None,
            cfg: RecallConfig, now: float | None = None, session: str | None = None,
            core_shown: bool = False) -> dict[str, Any]:
    d = DEFAULTS[entry]
    now = ctx.now() if now is None else now
    budget = pk.clamp_budget(budget or d["budget"])
    base = {"entry": entry, "budget": budget, "prompt": prompt}
    if not prompt.strip() or _TRIVIAL.match(prompt):
        # no past turns for "ok" / "continue"; a fresh working state still answers "continue"
        picked = learned.pick(ctx, prompt, scope, entry=entry, project=project, session=session, now=now,
                              core_shown=core_shown) if prompt.strip() else []
        if picked:
            text, kept, tokens = pk.render([], budget=budget, now=now, learned=picked)
            return {**base, "text": text, "items": kept, "tokens": tokens, "stats": {}}
        return {**base, "text": "", "items": [], "tokens": 0, "stats": {}, "skipped": "trivial prompt"}
    ranked = rank(ctx, prompt, scope, k=d["k"] * 2, cfg=cfg, now=now)
    order = [(t, s) for t, s in ranked.items if _relevant(ranked, t)]
    rows = ranked.full_rows(ctx, scope, [t for t, _ in order])  # read once: the word gate, then the items
    if cfg.min_coverage > 0:
        order = gate.covered(ctx, ranked, order, rows, cfg.min_coverage)
    if project:
        boosted = []
        for t, s in order:
            if ranked.meta.get(t, {}).get("project") == project:
                ranked.details[t].setdefault("boosts", {})["project"] = d["project_boost"]
                s *= d["project_boost"]
            boosted.append((t, s))
        order = sorted(boosted, key=lambda x: -x[1])
    items = _distinct(_items(ctx, scope, ranked, order, rows))[: d["k"]]
    _attach_fixes(ctx, scope, items)
    picked = learned.pick(ctx, prompt, scope, entry=entry, project=project, session=session, now=now,
                          core_shown=core_shown)
    text, kept, tokens = pk.render(items, budget=budget, now=now, learned=picked)
    turns = [i["id"] for i in kept if i.get("layer") == "L1"]
    if turns:
        ctx.shown(scope, turns, now)
    return {**base, "text": text, "items": kept, "tokens": tokens, "stats": ranked.stats()}


def _distinct(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per text: the same request and reply recorded by several agents (the same work
    imported from two tools, a prompt repeated) is shown once, best first, with the others named."""
    seen: dict[str, dict[str, Any]] = {}
    out = []
    for it in items:
        key = " ".join((it.get("request") or "").lower().split()) + "\0" + " ".join((it.get("reply") or "").lower().split())
        first = seen.get(key)
        if first is None:
            seen[key] = it
            out.append(it)
        else:
            first.setdefault("also", []).append({"id": it["id"], "agent": it["agent"], "project": it["project"]})
    return out


def _attach_fixes(ctx: RecallContext, scope: Scope, items: list[dict[str, Any]], skip_shown: bool = True) -> None:
    """A failed turn is shown with the turn that fixed it (the next success in its session)."""
    failed = [it["id"] for it in items if it["status"] == "failed"]
    meta = ctx.candidates.meta(scope, failed)
    shown = {it["id"] for it in items} if skip_shown else set()
    for it in items:
        if it["id"] in meta:
            fixes = [f for f in ctx.candidates.fixes_after(scope, meta[it["id"]]) if f["id"] not in shown]
            it["evidence"] = [("fixed by " + f["id"], f["request"] + " → " + f["reply"]) for f in fixes[:1]]


def turn_start(ctx: RecallContext, prompt: str, scope: Scope, *, project: str | None = None,
               budget: int = 2000, config: RecallConfig | None = None, now: float | None = None,
               session: str | None = None, core_shown: bool = False) -> dict[str, Any]:
    """Before an agent answers ``prompt``: the packet of memories it should see (``session``: the
    agent's session id, so the project's core facts come with its first prompt — unless
    ``core_shown``: the session's start context already carried them, :func:`session_start`)."""
    return _packet(ctx, prompt, scope, entry="turn_start", project=project, budget=budget,
                   cfg=config or PACKET, now=now, session=session, core_shown=core_shown)


def session_start(ctx: RecallContext, scope: Scope, *, project: str | None, budget: int | None = None,
                  now: float | None = None) -> dict[str, Any]:
    """The project's core facts for a session's start context (the SessionStart hook): its commands,
    package manager and ≤ 3 must-follow rules, learned and active, in the learned section's form.

    Shown there they are visible to every prompt of the session and part of none of their packets, so
    a prompt they have nothing to do with gets no learned item ("once per session, not on every
    prompt"); agents without a session start get them with the first prompt instead."""
    now = ctx.now() if now is None else now
    budget = pk.clamp_budget(budget or DEFAULTS["turn_start"]["budget"])
    picked = learned.pick(ctx, "", scope, entry="session_start", project=project, now=now)
    text, kept, tokens = pk.render([], budget=budget, now=now, learned=picked)
    return {"entry": "session_start", "budget": budget, "text": text, "items": kept, "tokens": tokens}


def sub_agent(ctx: RecallContext, task: str, scope: Scope, *, project: str | None = None, budget: int | None = None,
              config: RecallConfig | None = None, now: float | None = None) -> dict[str, Any]:
    """A sub-agent's task prompt → a smaller packet."""
    return _packet(ctx, task, scope, entry="sub_agent", project=project, budget=budget,
                   cfg=config or PACKET, now=now)


def repair(ctx: RecallContext, error: str, scope: Scope, *, tool: str = "", budget: int | None = None,
           now: float | None = None, project: str | None = None, command: str = "", session: str | None = None,
           attempts: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """After the same failure came back (``layers/repair.py`` says when): the procedures learned
    for its error family first, then what was tried against it and failed ("avoid" lines, from
    earlier sessions and this one: ``session`` and the open turn's ``attempts``, the hook's tool
    calls ending with the failing one), then past failures with the same error signature and what
    fixed them (recall/repair.py). ``command``: the failing shell command (its family)."""
    now = ctx.now() if now is None else now
    budget = pk.clamp_budget(budget or DEFAULTS["repair"]["budget"])
    sigs = error_signatures(error) or [error.strip().splitlines()[-1][:160]] if error.strip() else []
    fam, key = rp.error_family(error, tool, command)
    hits = ctx.candidates.by_error(scope, sigs, DEFAULTS["repair"]["k"] * 2)
    cfg = PACKET.with_(failed_penalty=0.0, threshold=0.0, weights={"structural": 2.0, "bm25": 1.0, "entity": 0.4})
    ranked = rank(ctx, f"{tool} {command} {error}".strip(), scope, k=DEFAULTS["repair"]["k"], cfg=cfg, now=now)
    # the floor: the same error first; other turns only as the packet's gates let them in
    found = [(t, s) for t, s in ranked.items if _relevant(ranked, t)]
    found = gate.covered(ctx, ranked, found, ranked.full_rows(ctx, scope, [t for t, _ in found]), cfg.min_coverage)
    order = list(dict.fromkeys([t for t, _ in hits] + [t for t, _ in found]))[: DEFAULTS["repair"]["k"]]
    score = {t: s for t, s in ranked.items}
    past = ranked.full_rows(ctx, scope, list(dict.fromkeys([t for t, _ in hits][: rp.PAST_TURNS] + order)))
    items = _items(ctx, scope, ranked, [(t, score.get(t, 1.0)) for t in order], past)
    _attach_fixes(ctx, scope, items, skip_shown=False)
    rp.fix_steps(ctx, scope, items)
    # the procedures learned for this error come first
    picked = [m for m in learned.pick(ctx, error, scope, entry="repair", project=project, now=now)
              if m.get("kind") in ("procedure", "skill") or m.get("why") == "signature"]
    procs = rp.procedures(ctx, scope, project, fam, key, picked)
    avoid = rp.avoid_lines(ctx, scope, fam, key, session=session, attempts=list(attempts or []),
                           past=[past[t] for t, _ in hits if t in past], procs=procs, now=now, command=command)
    text, kept, tokens = pk.render(items, budget=budget, now=now, learned=procs, avoid=avoid)
    return {"entry": "repair", "budget": budget, "signatures": sigs, "family": fam, "key": key, "text": text,
            "items": kept, "tokens": tokens, "stats": ranked.stats()}


RESUME_HEAD = "Sessions to resume (agent · turns · age · session):"
TITLE_TURNS = 20    # a candidate session is titled by the goal stated in its first requests


def resume(ctx: RecallContext, query: str, scope: Scope, *, session: str | None = None, budget: int | None = None,
           now: float | None = None, project: str | None = None) -> dict[str, Any]:
    """No ``session``: where work in ``project`` was left off (its newest working state, learned)
    and up to 5 candidate episodes for ``query``. With one (a key from the candidates,
    ``owner/agent/session_id``): that episode in full, oldest turn first, budgeted."""
    now = ctx.now() if now is None else now
    budget = pk.clamp_budget(budget or DEFAULTS["resume"]["budget"])
    if not session:
        from ..layers.world import first_goal

        cands = search_sessions(ctx, query, scope, k=DEFAULTS["resume"]["k"], related_only=True)
        for c in cands:
            sturns = ctx.candidates.session_turns(scope, c["owner"], c["agent"], c["session_id"], limit=1000)
            c["turns"] = len(sturns)
            # what the session was for ("continue" or a greeting says nothing), else how it opened
            goal, _ = first_goal((x.get("request") or "" for x in sturns), limit=TITLE_TURNS)
            c["title"] = (goal or (sturns[0]["request"] if sturns else ""))[:80]
            last = max((x.get("ended_at") or x.get("started_at") or 0 for x in sturns), default=0)
            c["age"] = pk.relative_age(now - last) if last else "unknown age"
        lines = [f"{i}. [{safe(c['agent'])} · {c['turns']} turns · {c['age']} · session {safe(c['session'])}]"
                 f" {safe(c['title'], limit=80)}" for i, c in enumerate(cands, 1)]
        picked = learned.pick(ctx, query, scope, entry="resume", project=project, now=now) if project else []
        text, kept, tokens = pk.render([], budget=budget, now=now, learned=picked,
                                       tail=[RESUME_HEAD, *lines] if lines else ())
        return {"entry": "resume", "text": text, "items": kept + cands, "tokens": tokens, "budget": budget}
    owner, agent, sid = (session.split("/", 2) + ["", ""])[:3] if session.count("/") >= 2 else ("", "", session)
    owners = [owner] if owner in scope.owners else list(scope.owners)
    turns: list[dict[str, Any]] = []
    for o in owners:
        sc = Scope.of(o, agent=scope.agent, project=scope.project)
        if agent:
            turns = ctx.candidates.session_turns(sc, o, agent, sid, limit=500)
        else:
            turns = ctx.candidates.session_turns_of_any_agent(sc, sid, limit=500)
        if turns:
            break
    items = [{**t, "last_update": t.get("ended_at") or t.get("started_at") or t.get("updated_at"),
              "error_sigs": t.get("error_sigs") if isinstance(t.get("error_sigs"), list) else []} for t in turns]
    text, kept, tokens = pk.render(items, budget=budget, now=now, item_chars=600)
    return {"entry": "resume", "session": session, "text": text, "items": kept, "tokens": tokens,
            "budget": budget, "turns": len(turns), "truncated": len(kept) < len(turns)}


def results(ctx: RecallContext, scope: Scope, ranked: Ranked, explain: bool = True) -> list[dict[str, Any]]:
    return to_results(ctx, scope, ranked, explain=explain)

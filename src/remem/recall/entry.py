"""Recall entry points: turn_start, sub_agent, repair, resume (``search`` lives in search.py).

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
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING, Any

from ..agent_text import safe
from ..ingest.signatures import error_signatures
from ..scope import Scope
from ..store.sqlite import candidates as recrepo
from ..store.sqlite import turns as turnrepo
from . import coverage as cov
from . import packet as pk
from .channels import coverage_terms
from .config import PACKET, RecallConfig
from .search import Ranked, rank, search_sessions, to_results, words_text

if TYPE_CHECKING:
    from ..core import Remem

DEFAULTS: dict[str, dict[str, Any]] = {
    "turn_start": {"k": 8, "budget": 2000, "project_boost": 1.2},
    "sub_agent": {"k": 5, "budget": 1200, "project_boost": 1.2},
    "repair": {"k": 5, "budget": 1500},
    "resume": {"k": 5, "budget": 3000},
}
_TRIVIAL = re.compile(r"^\s*(?:ok(?:ay)?|yes|no|y|n|continue|go on|thanks?|thank you|好的?|继续|是|否|/\w+)\s*[.!]?\s*$",
                      re.I)
_GATED = ("bm25", "substring", "vector", "vector_actions", "structural", "entity", "time")


def _relevant(ranked: Ranked, t: str) -> bool:
    """Something other than recency found it."""
    return any(c in _GATED for c in ranked.details.get(t, {}).get("channels", {}))


def _items(mem: Remem, scope: Scope, ranked: Ranked, order: list[tuple[str, float]],
           rows: dict[str, dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    if rows is None:
        rows = recrepo.full_rows(mem.db, scope, [t for t, _ in order])
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
            "details": ranked.details.get(t, {}),
        })
    return out


def _packet(mem: Remem, prompt: str, scope: Scope, *, entry: str, project: str | None, budget: int | None,
            cfg: RecallConfig, now: float | None = None) -> dict[str, Any]:
    d = DEFAULTS[entry]
    now = time.time() if now is None else now
    budget = pk.clamp_budget(budget or d["budget"])
    base = {"entry": entry, "budget": budget, "prompt": prompt}
    if not prompt.strip() or _TRIVIAL.match(prompt):
        return {**base, "text": "", "items": [], "tokens": 0, "stats": {}, "skipped": "trivial prompt"}
    ranked = rank(mem, prompt, scope, k=d["k"] * 2, cfg=cfg, now=now)
    order = [(t, s) for t, s in ranked.items if _relevant(ranked, t)]
    rows = recrepo.full_rows(mem.db, scope, [t for t, _ in order])  # read once: the word gate, then the items
    if cfg.min_coverage > 0:
        order = _covered(mem, ranked, order, rows, cfg.min_coverage)
    if project:
        boosted = []
        for t, s in order:
            if ranked.meta.get(t, {}).get("project") == project:
                ranked.details[t].setdefault("boosts", {})["project"] = d["project_boost"]
                s *= d["project_boost"]
            boosted.append((t, s))
        order = sorted(boosted, key=lambda x: -x[1])
    items = _distinct(_items(mem, scope, ranked, order, rows))[: d["k"]]
    _attach_fixes(mem, scope, items)
    text, kept, tokens = pk.render(items, budget=budget, now=now)
    if kept:
        turnrepo_touch(mem, scope, [i["id"] for i in kept], now)
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


_WORD_CHANNELS = {"bm25", "substring"}


def _own_channels(ranked: Ranked, t: str) -> set[str]:
    """The channels that found ``t`` by the query itself: an entity hit only through an entity the
    query's ones co-occur with ("CI" next to test_retry_backoff) does not count."""
    chans = set(ranked.details.get(t, {}).get("channels", {}))
    ent = ranked.channels.get("entity")
    if "entity" in chans and ent is not None and ent.own is not None and t not in ent.own:
        chans.discard("entity")
    return chans


def _covered(mem: Remem, ranked: Ranked, order: list[tuple[str, float]], rows: dict[str, dict[str, Any]],
             least: float) -> list[tuple[str, float]]:
    """``order`` without the turns only the word channels found that hold less than ``least``
    of the prompt's word weight, or none of its topic words when it has some (coverage.topic_words;
    each checked one shows its coverage in its details, every one the words it matched)."""
    q = ranked.query
    terms = coverage_terms(q)
    n, df = recrepo.doc_freqs(mem.db, terms)
    weights = cov.weights(terms, n, df)
    topics = cov.topic_words(terms)
    keep = []
    for t, s in order:
        if t not in rows:
            continue
        hit = cov.matched(q, words_text(rows[t]), terms)
        d = ranked.details.setdefault(t, {})
        d["matched"] = hit  # --explain shows them
        if _own_channels(ranked, t) <= _WORD_CHANNELS:
            c = cov.share(q, hit, weights, terms)
            d.setdefault("evidence", {})["coverage"] = round(c, 3)
            # a prompt that names a topic ("staging kubeconfig") is not answered by a memory sharing
            # only its other words ("kept")
            if c < least or (topics and not topics & set(hit)):
                continue
        keep.append((t, s))
    return keep


def _attach_fixes(mem: Remem, scope: Scope, items: list[dict[str, Any]], skip_shown: bool = True) -> None:
    """A failed turn is shown with the turn that fixed it (the next success in its session)."""
    failed = [it["id"] for it in items if it["status"] == "failed"]
    meta = recrepo.meta(mem.db, scope, failed)
    shown = {it["id"] for it in items} if skip_shown else set()
    for it in items:
        if it["id"] in meta:
            fixes = [f for f in recrepo.fixes_after(mem.db, scope, meta[it["id"]]) if f["id"] not in shown]
            it["evidence"] = [("fixed by " + f["id"], f["request"] + " → " + f["reply"]) for f in fixes[:1]]


def turnrepo_touch(mem: Remem, scope: Scope, ids: list[str], now: float) -> None:
    try:
        mem.note_access(scope, ids, now)
    except Exception:  # access counts are a nicety; a busy database must not cost the agent its packet
        pass


def turn_start(mem: Remem, prompt: str, scope: Scope, *, project: str | None = None,
               budget: int = 2000, config: RecallConfig | None = None, now: float | None = None) -> dict[str, Any]:
    """Before an agent answers ``prompt``: the packet of memories it should see."""
    return _packet(mem, prompt, scope, entry="turn_start", project=project, budget=budget,
                   cfg=config or PACKET, now=now)


def sub_agent(mem: Remem, task: str, scope: Scope, *, project: str | None = None, budget: int | None = None,
              config: RecallConfig | None = None, now: float | None = None) -> dict[str, Any]:
    """A sub-agent's task prompt → a smaller packet."""
    return _packet(mem, task, scope, entry="sub_agent", project=project, budget=budget,
                   cfg=config or PACKET, now=now)


def repair(mem: Remem, error: str, scope: Scope, *, tool: str = "", budget: int | None = None,
           now: float | None = None) -> dict[str, Any]:
    """After repeated failures: past failures with the same error signature and what fixed them."""
    now = time.time() if now is None else now
    budget = pk.clamp_budget(budget or DEFAULTS["repair"]["budget"])
    sigs = error_signatures(error) or [error.strip().splitlines()[-1][:160]] if error.strip() else []
    hits = recrepo.by_error(mem.db, scope, sigs, DEFAULTS["repair"]["k"] * 2)
    cfg = PACKET.with_(failed_penalty=0.0, threshold=0.0, weights={"structural": 2.0, "bm25": 1.0, "entity": 0.4})
    ranked = rank(mem, f"{tool} {error}".strip(), scope, k=DEFAULTS["repair"]["k"], cfg=cfg, now=now)
    # the floor: the same error first; other turns only as the packet's gates let them in
    found = [(t, s) for t, s in ranked.items if _relevant(ranked, t)]
    found = _covered(mem, ranked, found, recrepo.full_rows(mem.db, scope, [t for t, _ in found]), cfg.min_coverage)
    order = list(dict.fromkeys([t for t, _ in hits] + [t for t, _ in found]))[: DEFAULTS["repair"]["k"]]
    score = {t: s for t, s in ranked.items}
    items = _items(mem, scope, ranked, [(t, score.get(t, 1.0)) for t in order])
    _attach_fixes(mem, scope, items, skip_shown=False)
    text, kept, tokens = pk.render(items, budget=budget, now=now)
    return {"entry": "repair", "budget": budget, "signatures": sigs, "text": text, "items": kept,
            "tokens": tokens, "stats": ranked.stats()}


def resume(mem: Remem, query: str, scope: Scope, *, session: str | None = None, budget: int | None = None,
           now: float | None = None) -> dict[str, Any]:
    """No ``session``: up to 5 candidate episodes for ``query``. With one (a key from the
    candidates, ``owner/agent/session_id``): that episode in full, oldest turn first, budgeted."""
    now = time.time() if now is None else now
    budget = pk.clamp_budget(budget or DEFAULTS["resume"]["budget"])
    if not session:
        cands = search_sessions(mem, query, scope, k=DEFAULTS["resume"]["k"], related_only=True)
        for c in cands:
            sturns = recrepo.session_turns(mem.db, scope, c["owner"], c["agent"], c["session_id"], limit=1000)
            c["turns"] = len(sturns)
            c["title"] = (sturns[0]["request"][:80] if sturns else "")
            last = max((x.get("ended_at") or x.get("started_at") or 0 for x in sturns), default=0)
            c["age"] = pk.relative_age(now - last) if last else "unknown age"
        lines = [f"{i}. [{safe(c['agent'])} · {c['turns']} turns · {c['age']} · session {safe(c['session'])}]"
                 f" {safe(c['title'], limit=80)}" for i, c in enumerate(cands, 1)]
        text = f"{pk.OPEN}\n{pk.NOTICE}\n" + "\n".join(lines) + f"\n{pk.CLOSE}" if cands else ""
        return {"entry": "resume", "text": text, "items": cands, "tokens": pk.count_tokens(text), "budget": budget}
    owner, agent, sid = (session.split("/", 2) + ["", ""])[:3] if session.count("/") >= 2 else ("", "", session)
    owners = [owner] if owner in scope.owners else list(scope.owners)
    turns: list[dict[str, Any]] = []
    for o in owners:
        sc = Scope.of(o, agent=scope.agent, project=scope.project)
        if agent:
            turns = recrepo.session_turns(mem.db, sc, o, agent, sid, limit=500)
        else:
            turns = [dict(r) for r in turnrepo.list_turns(mem.db, sc, session_id=sid, limit=500, order="asc")]
        if turns:
            break
    items = [{**t, "last_update": t.get("ended_at") or t.get("started_at") or t.get("updated_at"),
              "error_sigs": t.get("error_sigs") if isinstance(t.get("error_sigs"), list) else []} for t in turns]
    text, kept, tokens = pk.render(items, budget=budget, now=now, item_chars=600)
    return {"entry": "resume", "session": session, "text": text, "items": kept, "tokens": tokens,
            "budget": budget, "turns": len(turns), "truncated": len(kept) < len(turns)}


def results(mem: Remem, scope: Scope, ranked: Ranked, explain: bool = True) -> list[dict[str, Any]]:
    return to_results(mem, scope, ranked, explain=explain)

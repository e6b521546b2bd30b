"""The optional LLM's pass over learned candidates, after the deterministic learn (``service.run``).

Off unless ``learn.llm.base_url`` is set. Then, per pass: the candidates not yet judged on their
current evidence (preferences, conventions, decisions, procedures and facts the learner left as
candidates; never a locked, user-decided or conflicting one — nor one for a slot an active memory
fills with another value —, never a working state or a whole session) go to the model in batches of ``learn.llm.batch_size``, each with a few redacted quotes of
its evidence (``judge.py``). A pass stops at the day's token budget, at ``learn.llm.max_requests``,
or when the circuit breaker opens; after a pass that asked, the next waits ``cooldown_seconds``.

Verdicts are decisions with actor ``llm`` in the learned history: ``llm_keep`` (the candidate
becomes active), ``llm_reject`` (rejected; the user can still approve it), ``llm_rewrite`` (active,
in the model's wording, which ``judge`` checked against the evidence) and ``llm_quarantine`` (the
answer could not be backed: the memory stays a candidate, the reason and what was proposed are kept
in its ``data.llm`` and shown by ``remem learned list --status quarantined``). A verdict holds for
the evidence it was given (``data.llm.on``): ``carry`` re-applies it on every relearn, and new
evidence sends the candidate back to the model. A user's decision always wins over the model's.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from ..ingest.redact import redact
from ..scope import Scope
from . import judge, llm
from .lifecycle import CANDIDATE_SLOTS
from .llm import Clock, LlmFailure, LlmSettings

if TYPE_CHECKING:
    from ..core import Remem

log = logging.getLogger(__name__)

JUDGED_KINDS = ("preference", "convention", "decision", "procedure", "fact")
EVENTS = {"keep": "llm_keep", "reject": "llm_reject", "rewrite": "llm_rewrite", "quarantine": "llm_quarantine"}
APPLIED = ("keep", "reject", "rewrite")      # verdicts that change a memory (quarantine only records)
ACTOR = "llm"


def supporting(rec: dict[str, Any]) -> list[str]:
    return [e["turn_id"] for e in rec.get("evidence") or [] if not e.get("against")]


def eligible(rec: dict[str, Any]) -> bool:
    """A candidate the model may judge: the learner's own, undecided, unlocked, not in conflict."""
    data = rec.get("data") or {}
    return (rec["status"] == "candidate" and not rec["locked"] and not rec["decided"] and bool(rec["text"])
            and rec["kind"] in JUDGED_KINDS and not str(rec["slot"]).startswith(CANDIDATE_SLOTS)
            and not data.get("conflict_with") and not data.get("layer") and bool(supporting(rec)))


def pending(rec: dict[str, Any]) -> bool:
    """Eligible and not judged on this evidence yet."""
    mark = (rec.get("data") or {}).get("llm")
    return eligible(rec) and not (isinstance(mark, dict) and mark.get("on") == supporting(rec))


def taken_slots(active: list[dict[str, Any]]) -> dict[tuple[str, str, str], set[str]]:
    """(owner, project, slot) → the values active memories hold there."""
    out: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    for r in active:
        if r["slot"]:
            out[(r["owner"], r["project"], r["slot"])].add(str(r["value"]))
    return out


def contested(rec: dict[str, Any], taken: dict[tuple[str, str, str], set[str]]) -> bool:
    """A candidate for a slot an active memory fills with another value ("The package manager is
    yarn" beside an active "… is bun"): which one holds is the user's review, not the model's."""
    held = taken.get((rec["owner"], rec["project"], rec["slot"])) if rec["slot"] else None
    return held is not None and bool(held) and str(rec["value"]) not in held


def quarantined(rec: dict[str, Any]) -> bool:
    mark = (rec.get("data") or {}).get("llm")
    return isinstance(mark, dict) and mark.get("verdict") == "quarantine"


def carry(prev: dict[str, Any] | None, rec: dict[str, Any]) -> None:
    """Keep the model's verdict through a relearn while the evidence it judged is the evidence the
    memory has (the learner recomputes the row from the turns each time; the verdict is data)."""
    if prev is None or prev["decided"] or rec["locked"]:
        return
    mark = (prev.get("data") or {}).get("llm")
    if not isinstance(mark, dict) or mark.get("on") != supporting(rec):
        return                                  # new evidence: judged again
    rec["data"]["llm"] = mark
    if rec["status"] != "candidate":
        return
    verdict = mark.get("verdict")
    if verdict == "keep":
        rec["status"] = "active"
    elif verdict == "reject":
        rec["status"] = "rejected"
    elif verdict == "rewrite" and mark.get("text"):
        rec["status"], rec["text"] = "active", redact(str(mark["text"])).text


def _batches(recs: list[dict[str, Any]], size: int) -> list[list[dict[str, Any]]]:
    by_owner: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in recs:
        by_owner[r["owner"]].append(r)
    out = []
    for owner in sorted(by_owner):
        group = by_owner[owner]
        out += [group[i:i + size] for i in range(0, len(group), size)]
    return out


def _candidates(mem: Remem, batch: list[dict[str, Any]]) -> list[judge.Candidate]:
    """The batch as the model sees it: text and quoted evidence requests, each redacted again (the
    turns were redacted when written; this is the second lock on the door)."""
    area = mem.store.learned  # type: ignore[attr-defined]
    owner = batch[0]["owner"]
    ids = [t for r in batch for t in supporting(r)[:judge.QUOTES]]
    turns = area.turn_requests(Scope(owners=(owner,)), ids)
    out = []
    for r in batch:
        quotes = [judge.quote(redact(turns[t]["request"] or "").text) for t in supporting(r)[:judge.QUOTES]
                  if t in turns and (turns[t]["request"] or "").strip()]
        out.append(judge.Candidate(r["id"], r["kind"], redact(r["text"]).text, quotes))
    return out


def _apply(mem: Remem, rec: dict[str, Any], o: judge.Outcome, s: LlmSettings, now: float) -> str | None:
    """Write one outcome with its event (caller holds the transaction); the event's action."""
    from .service import view

    area = mem.store.learned  # type: ignore[attr-defined]
    new = {**rec, "data": dict(rec["data"]), "updated_at": now}
    mark: dict[str, Any] = {"verdict": o.verdict, "on": supporting(rec), "at": now, "model": s.model,
                            "reason": redact(o.reason).text}
    if o.verdict == "keep":
        new["status"] = "active"
    elif o.verdict == "reject":
        new["status"] = "rejected"
    elif o.verdict == "rewrite":
        mark["text"], mark["was"] = redact(o.text).text, rec["text"]
        new["status"], new["text"] = "active", mark["text"]
    else:
        mark["proposed"] = redact(o.text).text
    new["data"]["llm"] = mark
    area.put(new)
    action = EVENTS[o.verdict]
    after = view(new) | {"reason": mark["reason"]}
    if o.verdict == "quarantine":
        after["proposed"] = mark["proposed"]
    area.add_event(rec["owner"], rec["id"], action, view(rec), after, actor=ACTOR, ts=now)
    return action


def review(mem: Remem, scope: Scope, s: LlmSettings | None = None, *, clock: Clock | None = None) -> dict[str, Any]:
    """One pass of the model over the pending candidates in scope (see the module's docstring)."""
    s = s or llm.configured(mem)
    out: dict[str, Any] = {"requests": 0, "tokens": 0, "judged": 0, "keep": 0, "reject": 0, "rewrite": 0,
                           "quarantine": 0, "strays": 0, "failures": 0, "pending": 0, "stopped": ""}
    if s is None:
        out["stopped"] = "off"
        return out
    tick = clock or time.time
    area = mem.store.learned  # type: ignore[attr-defined]
    with llm.state_lock(mem.home):
        st = llm.load_state(mem.home)
        taken = taken_slots(area.list(scope, statuses=("active",)))
        todo = [r for r in area.list(scope, statuses=("candidate",)) if pending(r) and not contested(r, taken)]
        out["pending"] = len(todo)
        batches = _batches(todo, s.batch_size)
        for batch in batches:
            now = tick()
            why = st.blocked(s, now)
            if not why and out["requests"] >= s.max_requests:
                why = "max_requests"
            if not why:
                cands = _candidates(mem, batch)
                need = judge.request_estimate(cands)
                if st.tokens + need > s.daily_tokens:
                    why = "budget"
            if why:
                out["stopped"] = why
                break
            out["requests"] += 1
            messages = judge.messages(cands)
            try:
                reply = llm.chat(s, messages)
            except LlmFailure as e:
                out["failures"] += 1
                opened = st.fail(s, tick(), str(e), e.retry_after)
                log.warning("learn: the LLM request failed (%s)%s", e, "; circuit breaker open" if opened else "")
                llm.save_state(mem.home, st)
                continue
            used = reply.tokens if reply.tokens is not None else need - judge.REPLY_TOKENS * len(cands) + \
                judge.estimate_tokens(reply.content)
            st.spend(used)
            out["tokens"] += used
            llm.save_state(mem.home, st)                 # spent is spent, whatever happens next
            outcomes, strays = judge.judge(reply.content, cands)
            for entry in strays:       # no text kept: it may quote a turn the user later forgets
                st.stray({"reason": entry["reason"], "id": redact(str(entry.get("id", ""))).text,
                          "verdict": str(entry.get("verdict", "")), "chars": len(str(entry.get("text")
                                                                                    or entry.get("entry") or "")),
                          "at": tick(), "owner": batch[0]["owner"]})
                out["strays"] += 1
            by_id = {r["id"]: r for r in batch}
            done = tick()
            with mem.store.transaction():
                for o in outcomes:
                    rec = area.get(Scope(owners=(by_id[o.id]["owner"],)), o.id)
                    if rec is None or not pending(rec) or supporting(rec) != supporting(by_id[o.id]):
                        continue                         # the user (or a relearn) got there first
                    _apply(mem, rec, o, s, done)
                    out["judged"] += 1
                    out[o.verdict] += 1
            if strays:
                llm.save_state(mem.home, st)
        if out["requests"]:
            st.next_at = max(st.next_at, tick() + s.cooldown)
        llm.save_state(mem.home, st)
    out["pending"] -= out["judged"]
    return out


def status(mem: Remem) -> dict[str, Any]:
    """What ``remem learned llm`` shows: whether a model is set, the day's spending, the breaker and
    the replies that named unknown ids (never the key)."""
    s = llm.configured(mem)
    st = llm.load_state(mem.home)
    now = time.time()
    st.roll(now)
    return {"configured": s is not None, "base_url": s.base_url if s else "", "model": s.model if s else "",
            "day": st.day, "tokens": st.tokens, "daily_tokens": s.daily_tokens if s else 0,
            "requests": st.requests, "failures": st.failures,
            "breaker_open_until": st.open_until if st.open_until > now else None,
            "cooldown_until": st.next_at if st.next_at > now else None, "last_error": st.last_error,
            "strays": st.strays}

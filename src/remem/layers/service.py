"""The learn job and the user's governance of learned memories, over the store (``store.learned``).

``run(mem, scope)`` feeds the stored turns of every project that changed since its last learn
(time order, per owner and project) through the pure core (``layers.learn``), keeps what the user
decided (locked and edited text, approvals, rejections, archives, forgets), redacts the text with
the ingest redactor, and writes each change with an event holding the memory before and after.
A project is always recomputed from all its turns (the lifecycle folds across sessions), so an
incremental run and ``rebuild=True`` give the same memories; incremental only skips projects whose
turns did not change. The user's actions (approve, reject, edit, lock, forget, rollback) are
events too and any event can be rolled back. With ``learn.llm.base_url`` set, a pass of the optional
model over the candidates follows (``review.py``); its verdicts are events with actor ``llm``.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import privacy
from ..ingest.normalize import InputError
from ..ingest.redact import redact, redact_value
from ..scope import Scope
from ..store.protocols import Learned
from . import feedback as fbk
from . import llm, retention, review
from .learn import learn as learn_core
from .learn import learner_version
from .packets import judge_packets
from .turnview import to_turns
from .types import KINDS, STATUSES, Memory, Turn

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from ..core import Remem

VERDICTS = {"good": "approve", "bad": "reject", "outdated": "archive"}
ACTIONS = ("approve", "reject", "archive", "edit", "lock", "unlock", "forget", "delete", "restore")
DECIDED_OUT = ("rejected", "archived", "forgotten", "deleted")   # the user's decisions the learner keeps


class LearnedNotFound(InputError):
    """No learned memory (or event) with that id in this scope."""


def _area(mem: Remem) -> Learned:
    """The store's learned area (``store.learned``; not yet on the shared ``Store`` protocol)."""
    return mem.store.learned  # type: ignore[attr-defined,no-any-return]


# -- records -------------------------------------------------------------------------------

def view(rec: dict[str, Any]) -> dict[str, Any]:
    """What an event keeps of a memory (before / after) and what rollback restores."""
    return {k: rec.get(k) for k in ("id", "kind", "status", "text", "confidence", "locked", "edited", "decided",
                                    "superseded_by", "slot", "value")} | {
        "evidence": [e["turn_id"] for e in rec.get("evidence") or []]}


def public(rec: dict[str, Any]) -> dict[str, Any]:
    """A learned memory as the faces show it (``Remem.learned``)."""
    support = [e for e in rec["evidence"] if not e.get("against")]
    return {"id": rec["id"], "layer": rec["layer"], "kind": rec["kind"], "text": rec["text"],
            "status": rec["status"], "confidence": round(float(rec["confidence"]), 3), "scope": rec["scope"],
            "project": rec["project"], "owner": rec["owner"], "slot": rec["slot"], "value": rec["value"],
            "evidence": [e["turn_id"] for e in support],
            "against": [e["turn_id"] for e in rec["evidence"] if e.get("against")],
            "sessions": rec["sessions"], "turns": rec["turns"], "locked": rec["locked"], "edited": rec["edited"],
            "decided": rec["decided"] or None, "superseded_by": rec["superseded_by"] or None,
            "created_at": rec["created_at"], "updated_at": rec["updated_at"], "data": rec["data"]}


def _cited(m: Memory, sessions: dict[str, list[str]]) -> list[tuple[str, str]]:
    """Every turn the memory's text or data may quote: its evidence, and for a working state the
    whole session (and the earlier turn whose goal a "continue" session carried on), for a procedure
    every turn from the failure to the fix (so forgetting any of them takes the memory along)."""
    out = [(e.turn_id, e.session) for e in m.evidence]
    for e in m.evidence[:1]:
        turns = sessions.get(e.session, [])
        if m.kind == "working_state":
            out = [(t, e.session) for t in turns]
            src = m.data.get("goal_turn")
            if isinstance(src, list | tuple) and len(src) == 2:
                out.append((str(src[0]), str(src[1])))
        elif m.kind == "procedure" and e.turn_id in turns:
            fixed = str(m.data.get("fixed_in") or "")
            start = turns.index(e.turn_id)
            end = turns.index(fixed) if fixed in turns else start
            out += [(t, e.session) for t in turns[start:end + 1]]
    return list(dict.fromkeys(out))


def _record(owner: str, m: Memory, prev: dict[str, Any] | None, now: float,
            sessions: dict[str, list[str]]) -> dict[str, Any]:
    data = redact_value(m.data)     # it quotes turns too: a goal, a reply's report, an error line
    data["first_seen"], data["last_seen"] = m.created_at, m.updated_at
    evidence = [{"turn_id": t, "session_id": sess, "against": False} for t, sess in _cited(m, sessions)]
    evidence += [{"turn_id": e.turn_id, "session_id": e.session, "against": True} for e in m.against
                 if e.turn_id not in {x["turn_id"] for x in evidence}]
    return {"owner": owner, "id": m.id, "project": m.project, "layer": m.layer, "kind": m.kind, "slot": m.slot,
            "value": redact(m.value).text, "text": redact(m.text).text, "status": m.status,
            "confidence": round(m.confidence, 4), "sessions": len(m.sessions), "turns": len(m.evidence),
            "locked": m.locked, "edited": bool(prev and prev["edited"]), "decided": prev["decided"] if prev else "",
            "polarity": m.polarity, "scope": m.scope, "data": data, "stale": 0,
            "created_at": prev["created_at"] if prev else now, "updated_at": now,
            "superseded_by": m.superseded_by, "evidence": evidence}


_COMPARED = ("text", "status", "confidence", "sessions", "turns", "locked", "superseded_by", "kind", "value")


def _changed(a: dict[str, Any], b: dict[str, Any], ignore: tuple[str, ...] = ()) -> bool:
    if any(a[k] != b[k] for k in _COMPARED) or a["stale"] != b["stale"]:
        return True
    if [e["turn_id"] for e in a["evidence"]] != [e["turn_id"] for e in b["evidence"]]:
        return True
    strip = ("first_seen", "last_seen", *ignore)
    return {k: v for k, v in a["data"].items() if k not in strip} != {
        k: v for k, v in b["data"].items() if k not in strip}


def _action(prev: dict[str, Any] | None, rec: dict[str, Any]) -> str:
    if prev is None:
        return "created"
    if prev["status"] != rec["status"] and rec["status"] in ("active", "superseded"):
        return "activated" if rec["status"] == "active" else "superseded"
    return "updated"


# -- the learn job -------------------------------------------------------------------------

def decay_rule(mem: Remem) -> retention.Rule:
    """The archive rule as the settings say (``learn.retention``)."""
    lives = retention.HalfLives(*mem.recall_settings().half_lives)   # one reading of learn.retention.half_life_*
    return retention.Rule(half_lives=lives, archive_below=float(mem.config.get("learn.retention.archive_below")),
                          min_age_days=float(mem.config.get("learn.retention.min_age_days")),
                          enabled=bool(mem.config.get("learn.retention.enabled")))


def project_clock(turns: list[Turn]) -> float:
    """The project's clock for decay: its newest turn's time (0: none known)."""
    return max((float(t.ts) for t in turns if t.ts is not None), default=0.0)


def _locked_memory(s: dict[str, Any]) -> Memory:
    return Memory(id=s["id"], kind=s["kind"], key="", text=s["text"], status=s["status"], locked=True)


BUILTIN_LAYER = "learned"   # remem's own layer (this package); registered by remem.builtins


def plugin_memories(rows: list[dict[str, Any]], project: str, mem: Remem) -> list[Memory]:
    """What the memory layers plugins registered (``LayerSpec.extractors``) derive from a project's
    turns, as candidates: they wait in the review queue (never injected) until the user approves
    them, and only evidence among these turns is kept — a memory that cites none is dropped."""
    from .. import plugins
    from .types import Evidence

    if not plugins.third_party():
        return []
    known = {r["id"]: r for r in rows}
    out: list[Memory] = []
    for name, layer in plugins.layers().items():
        if name == BUILTIN_LAYER:
            continue
        for extract in layer.extractors:
            try:
                got = list(extract(mem, rows) or [])
            except Exception as e:  # noqa: BLE001 - a plugin's failure is its layer's, never the learn job's
                log.warning("memory layer %s: extractor %s failed: %s", name, getattr(extract, "__name__", extract), e)
                continue
            for d in got:
                ev = [t for t in (d.get("evidence") or []) if isinstance(t, str) and t in known]
                text = str(d.get("text") or "").strip()[:2000]   # redacted with every memory in _record
                kind = str(d.get("kind") or "fact")
                if not ev or not text:
                    continue
                ident = hashlib.sha1(f"{name}\0{project}\0{kind}\0{text}".encode()).hexdigest()[:16]
                out.append(Memory(id=f"m_{ident}", kind=kind, key=f"{name}:{ident}", text=text, project=project,
                                  layer="L3" if name == "L3" else "L2", status="candidate", confidence=0.5,
                                  evidence=[Evidence(t, known[t].get("session_id") or "", known[t].get("started_at"))
                                            for t in ev], data={"layer": name}))
    return out


def _not_private(mem: Remem, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Turns of an incognito stretch (or of the home's incognito switch) that reached the store
    anyway (stored by a writer before the hook saw the command) are never learned from."""
    spans = privacy.load(mem.home)
    if not spans.sessions and not spans.paused:
        return rows
    return [r for r in rows if not spans.keeps_out(str(r.get("session_id") or ""),
                                                   r.get("started_at") or r.get("ended_at") or r.get("created_at"))]


def learn_project(mem: Remem, owner: str, project: str, seen: tuple[int, int, float] | None,
                  now: float) -> dict[str, int]:
    """Recompute one owner's project from its turns and write the differences with events."""
    area = _area(mem)
    counts = {"created": 0, "updated": 0, "dropped": 0, "turns": 0, "packets_judged": 0}
    rows = _not_private(mem, area.turns_in_time_order(owner, project)) if seen else []
    counts["turns"] = len(rows)
    exact = Scope(owners=(owner,), project=project)
    stored = {s["id"]: s for s in area.list(exact)}
    locked = {i: _locked_memory(s) for i, s in stored.items() if s["locked"] and (s["text"] or s["edited"])}
    refuse = {i for i, s in stored.items() if s["decided"] in DECIDED_OUT}
    turns = to_turns(rows)
    sessions: dict[str, list[str]] = {}
    for t in turns:
        sessions.setdefault(t.session, []).append(t.id)
    computed = learn_core(turns, locked=locked, rejected=refuse) if rows else []
    computed += plugin_memories(rows, project, mem) if rows else []
    judged, verdicts = judge_packets(mem, owner, project, rows, turns, stored, now) if rows else ([], {})
    used: dict[str, list[tuple[str, float]]] = {}      # memory id → (outcome, time) of the packets that carried it
    for _pid, result, _turn, ids, at in judged:
        for i in ids if result != "unknown" else ():
            used.setdefault(i, []).append((result, at))
    rule = decay_rule(mem)
    clock = project_clock(turns)
    counts["decayed"] = 0
    with mem.store.transaction():
        for pid, result, turn_id, _ids, _at in judged:
            mem.store.packets.judge(owner, pid, result, turn_id, now)  # type: ignore[attr-defined]
        counts["packets_judged"] = len(judged)
        for m in computed:
            prev = stored.pop(m.id, None)
            heard = verdicts.get(m.id, [])
            if prev is not None:
                fb = prev["data"].get("feedback")
                for v, _pid, turn_id in heard:
                    fb = fbk.add(fb, v.effect, turn_id)
                    counts[v.effect] = counts.get(v.effect, 0) + 1
                fbk.apply(m, fb, approved=prev["decided"] == "active")
                use = prev["data"].get("use")
                for result, at in used.get(m.id, ()):
                    use = retention.add_use(use, result, at)
                if use:
                    m.data["use"] = use
                if prev["locked"] and m.id not in locked:   # locked, its text cleared by a forget
                    m.locked, m.status = True, prev["status"]
                decided = prev["decided"]
                if decided in DECIDED_OUT:
                    old = set(prev["data"].get("decided_on") or [])
                    fresh = {e.turn_id for e in m.evidence} - old
                    m.status = "rejected" if decided == "forgotten" else decided
                    for k in ("deleted_at", "deleted_from"):     # a soft delete: when, and what restore puts back
                        if k in prev["data"]:
                            m.data[k] = prev["data"][k]
                    if decided == "deleted":     # a forgotten turn's trigger keeps only decided_on
                        m.data.setdefault("deleted_at", prev["updated_at"])
                    if decided == "rejected" and fresh and old:
                        m.status, m.data["reconsider"] = "candidate", sorted(fresh)
                    m.data["decided_on"] = sorted(old)
                elif decided == "active" and m.status == "candidate":
                    m.status = "active"
            rec = _record(owner, m, prev, now, sessions)
            if prev is not None and prev["decided"] == "forgotten":
                rec["text"], rec["data"] = "", {"decided_on": m.data.get("decided_on", [])}
            review.carry(prev, rec)                     # the optional LLM's verdict on this evidence
            score, why = retention.archive_reason(rec, clock, rule) if clock else (0.0, "")
            if why:                                     # faded: archived by decay, back when confirmed again
                rec["status"] = "archived"
                was = (prev or {}).get("data", {}).get("decay")
                rec["data"]["decay"] = was if prev and prev["status"] == "archived" and was else {
                    "retention": round(score, 4), "at": clock, "reason": why}
            if prev is not None and not _changed(prev, rec):
                continue
            area.put(rec)
            if prev is not None and not _changed(prev, rec, ignore=("use",)):
                continue                                # only its use counts moved: no event for that
            if why and prev is not None and prev["status"] != "archived":
                area.add_event(owner, m.id, "archived", view(prev),
                               view(rec) | {"reason": why, "retention": round(score, 4)}, actor="decay", ts=now)
                counts["decayed"] += 1
                continue
            counts["decayed"] += bool(why and prev is None)
            action = _action(prev, rec)
            if prev is not None and heard:
                for v, pid, turn_id in heard:        # feedback: its own events, with before / after
                    area.add_event(owner, m.id, v.effect, view(prev),
                                   view(rec) | {"packet": pid, "turn": turn_id, "reason": v.reason},
                                   actor="feedback", ts=now)
                if action == "updated":
                    continue
            area.add_event(owner, m.id, action, None if prev is None else view(prev), view(rec),
                           actor="learner", ts=now)
            counts["created" if prev is None else "updated"] += 1
        for s in stored.values():                       # no longer learned from the turns
            if (s["locked"] or s["decided"]) and s["evidence"] or s["data"].get("origin") == "user":
                continue                                # decided with evidence, or written by the user
            area.delete(owner, s["id"])
            area.add_event(owner, s["id"], "dropped", view(s), None, actor="learner", ts=now)
            counts["dropped"] += 1
        if seen:
            area.set_cursor(owner, project, seen, now, learner_version())
        else:
            area.drop_cursor(owner, project)
    return counts


def run(mem: Remem, scope: Scope, *, rebuild: bool = False,
        clock: Callable[[], float] | None = None) -> dict[str, Any]:
    """Learn every project in scope whose turns changed since its last learn (all with ``rebuild``);
    then, only with ``learn.llm.base_url`` set, let the model judge the candidates (``review``;
    ``clock`` is its time: the day's budget, the cooldown, the breaker)."""
    t0 = time.perf_counter()
    now = time.time()
    area = _area(mem)
    have = area.projects(scope)
    cursors = area.cursors(scope)
    out: dict[str, Any] = {"projects": 0, "skipped": 0, "turns": 0, "created": 0, "updated": 0, "dropped": 0,
                           "decayed": 0, "packets_judged": 0, **dict.fromkeys(fbk.EFFECTS, 0)}
    from ..teamsync import mirrored_owners

    mirrored = set(mirrored_owners(mem.home))   # a team's memories here come from its server
    for key in sorted(set(have) | set(cursors)):
        if key[0] in mirrored:
            out["mirrored"] = out.get("mirrored", 0) + 1
            continue
        seen, cur = have.get(key), cursors.get(key)
        fresh = (cur is not None and not cur["dirty"] and seen is not None
                 and (cur["turns"], cur["last_rowid"], cur["last_update"]) == seen
                 and cur.get("learner") == learner_version())      # another remem learned it: again
        if fresh and not rebuild:
            out["skipped"] += 1
            continue
        got = learn_project(mem, key[0], key[1], seen, now)
        out["projects"] += 1
        for k, v in got.items():
            out[k] = out.get(k, 0) + v
    out["purged"] = purge_deleted(mem, scope, now)
    packets = getattr(mem.store, "packets", None)
    if packets is not None:
        with mem.store.transaction():
            out["packets_pruned"] = packets.prune(before=now - 86400.0 * float(mem.config.get("learn.packets_days")),
                                                  keep=int(mem.config.get("learn.packets_max")))
    settings = llm.configured(mem)
    if settings is not None:                             # only with learn.llm.base_url set
        out["llm"] = review.review(mem, scope, settings, clock=clock)
    out["seconds"] = round(time.perf_counter() - t0, 3)
    out["learned"] = area.count(scope)
    return out


# -- in the background ----------------------------------------------------------------------

LEARN_KIND = "learn"




def run_job(mem: Remem, payload: dict[str, Any]) -> dict[str, Any]:
    """The daemon's ``learn`` job: learn what changed for the owner named in the payload."""
    owner = str(payload.get("owner") or "") or None
    scope = mem.scope(owner)
    out = run(mem, scope, rebuild=bool(payload.get("rebuild")))
    for _ in range(2):   # turns written while it ran (their enqueue met this running job): learn them too
        more = run(mem, scope)
        if not more["projects"]:
            break
        for k in ("projects", "turns", "created", "updated", "dropped", "decayed", "packets_judged", *fbk.EFFECTS):
            out[k] = out.get(k, 0) + more.get(k, 0)
        out["learned"] = more["learned"]
    return out


# -- reading and governing -----------------------------------------------------------------

def check_filters(status: str | None, kind: str | None) -> tuple[str, ...] | None:
    if kind is not None and kind not in KINDS:
        raise InputError(f"unknown kind {kind!r}: one of {', '.join(KINDS)}")
    if status in (None, "", "all"):
        return None
    if status in ("review", "quarantined"):
        return ("candidate",)
    if status not in STATUSES:
        raise InputError(f"unknown status {status!r}: one of {', '.join(STATUSES)}, review, quarantined or all")
    return (status,)


def listing(mem: Remem, scope: Scope, *, status: str | None = "active",
            kind: str | None = None) -> list[dict[str, Any]]:
    statuses = check_filters(status, kind)
    return [public(r) for r in _area(mem).list(scope, statuses=statuses, kind=kind)
            if r["decided"] != "forgotten" and (status != "quarantined" or review.quarantined(r))]


def _get(mem: Remem, scope: Scope, memory_id: str) -> dict[str, Any]:
    rec = _area(mem).get(scope, memory_id)
    if rec is None or rec["decided"] == "forgotten":
        raise LearnedNotFound(f"no learned memory {memory_id!r} in this scope (see remem learned list --status all)")
    return rec


def show(mem: Remem, scope: Scope, memory_id: str, *, quote: int = 200) -> dict[str, Any]:
    """One memory with its evidence turns' requests (shortened) and its history."""
    rec = _get(mem, scope, memory_id)
    turns = _area(mem).turn_requests(scope, [e["turn_id"] for e in rec["evidence"]])
    out = public(rec)
    clock = _area(mem).clock(rec["owner"], rec["project"]) or time.time()
    rule = decay_rule(mem)
    out["retention"] = {"score": round(retention.of(rec, clock, rule.half_lives), 4), "at": clock,
                        "half_life_days": rule.half_lives.of(rec["kind"], rec["slot"]),
                        "exempt": retention.exempt(rec, clock, rule) or None}
    out["quotes"] = []
    for e in rec["evidence"]:
        t = turns.get(e["turn_id"])
        if t is None:
            continue
        text = " ".join((t["request"] or "").split())
        out["quotes"].append({"turn_id": e["turn_id"], "session_id": t["session_id"], "at": t["started_at"],
                              "against": e["against"],
                              "request": text if len(text) <= quote else text[:quote - 1] + "…"})
    return out


def history(mem: Remem, scope: Scope, memory_id: str) -> list[dict[str, Any]]:
    events = _area(mem).events(scope, memory_id)
    if not events and _area(mem).get(scope, memory_id) is None:
        raise LearnedNotFound(f"no learned memory {memory_id!r} in this scope")
    return events


def act(mem: Remem, scope: Scope, memory_id: str, action: str, *, text: str | None = None,
        note: str = "", actor: str = "user") -> dict[str, Any]:
    """A user's decision on one memory, written with its event. Returns the memory after it."""
    if action not in ACTIONS:
        raise InputError(f"unknown action {action!r}: one of {', '.join(ACTIONS)}")
    with mem.store.transaction():
        return act_in(mem, scope, memory_id, action, text=text, note=note, actor=actor)


def act_in(mem: Remem, scope: Scope, memory_id: str, action: str, *, text: str | None = None,
           note: str = "", actor: str = "user") -> dict[str, Any]:
    """``act`` inside the caller's transaction (an import applies many decisions all or nothing)."""
    area = _area(mem)
    rec = _get(mem, scope, memory_id)
    before = view(rec)
    new = {**rec, "data": dict(rec["data"]), "updated_at": time.time()}
    if action == "delete" and rec["status"] == "deleted":
        raise InputError(f"{memory_id} is already deleted (restore it with `remem learned restore {memory_id}`, "
                         f"or delete it for good with --hard)")
    if action == "restore":
        _restore(mem, rec, new)
    elif action == "delete":                  # soft: recoverable for learn.retention.deleted_days
        new["status"], new["decided"] = "deleted", "deleted"
        new["data"]["deleted_at"] = new["updated_at"]
        new["data"]["deleted_from"] = {"status": rec["status"], "decided": rec["decided"]}
        new["data"]["decided_on"] = [e["turn_id"] for e in rec["evidence"]]
    elif action == "approve":
        new["status"], new["decided"] = "active", "active"
    elif action in ("reject", "archive", "forget"):
        new["status"] = "rejected" if action in ("reject", "forget") else "archived"
        new["decided"] = {"reject": "rejected", "archive": "archived", "forget": "forgotten"}[action]
        new["data"]["decided_on"] = [e["turn_id"] for e in rec["evidence"]]
        new["data"].pop("reconsider", None)
    elif action == "edit":
        clean = " ".join((text or "").split())
        if not clean:
            raise InputError("the new text is empty")
        if len(clean) > 2000:
            raise InputError("the new text is longer than 2000 characters")
        new["text"], new["edited"], new["locked"] = redact(clean).text, True, True
    elif action == "lock":
        new["locked"] = True
    elif action == "unlock":
        new["locked"] = False
    if note:
        new["data"]["note"] = redact(note[:500]).text
    if action == "forget":   # a tombstone: the learner never re-creates it; its events quote it
        new["text"], new["data"] = "", {"decided_on": new["data"]["decided_on"]}
    area.put(new)
    if action == "forget":
        area.purge_events(rec["owner"], memory_id)
        area.add_event(rec["owner"], memory_id, "forget", {"kind": rec["kind"], "status": rec["status"]},
                       None, actor=actor, ts=new["updated_at"])
    else:
        area.add_event(rec["owner"], memory_id, action, before, view(new), actor=actor, ts=new["updated_at"])
    return public(new)


def deleted_days(mem: Remem) -> float:
    return float(mem.config.get("learn.retention.deleted_days"))


def _restore(mem: Remem, rec: dict[str, Any], new: dict[str, Any]) -> None:
    """``restore``: a soft-deleted memory as it was before the delete (within ``deleted_days``); an
    archived one (by the user, by decay or by feedback) active and approved, so decay leaves it be."""
    if rec["status"] == "deleted":
        at = float(rec["data"].get("deleted_at") or rec["updated_at"])
        days = (float(new["updated_at"]) - at) / 86400.0
        if days > deleted_days(mem):
            raise InputError(f"{rec['id']} was deleted {days:.0f} days ago: a deleted memory can be restored for "
                             f"{deleted_days(mem):g} days (learn.retention.deleted_days); nothing was changed")
        was = rec["data"].get("deleted_from") or {}
        new["status"], new["decided"] = str(was.get("status") or "candidate"), str(was.get("decided") or "")
        for k in ("deleted_at", "deleted_from"):
            new["data"].pop(k, None)
        if not new["decided"]:
            new["data"].pop("decided_on", None)
    elif rec["status"] == "archived":
        new["status"], new["decided"] = "active", "active"
        new["data"].pop("decay", None)
    else:
        raise InputError(f"{rec['id']} is {rec['status']}, not deleted or archived: nothing to restore")


def delete(mem: Remem, scope: Scope, memory_id: str, *, hard: bool = False, actor: str = "user") -> dict[str, Any]:
    """``remem learned delete``: soft (status deleted, restorable for ``learn.retention.deleted_days``)
    or ``hard`` (gone now: a tombstone without text or history that learning never re-creates)."""
    return act(mem, scope, memory_id, "forget" if hard else "delete", actor=actor)


def purge_deleted(mem: Remem, scope: Scope, now: float) -> int:
    """Soft-deleted memories past ``learn.retention.deleted_days`` are deleted for good (tombstones)."""
    area = _area(mem)
    cutoff = now - 86400.0 * deleted_days(mem)
    old = [r for r in area.list(scope, statuses=("deleted",))
           if float(r["data"].get("deleted_at") or r["updated_at"]) < cutoff]
    if not old:
        return 0
    with mem.store.transaction():
        for r in old:
            act_in(mem, Scope(owners=(r["owner"],)), r["id"], "forget", actor="learner")
    return len(old)


def rollback(mem: Remem, scope: Scope, event_id: int, *, actor: str = "user") -> dict[str, Any]:
    """Put a memory back as it was before one event (a creation rolled back rejects it)."""
    area = _area(mem)
    with mem.store.transaction():
        ev = area.event(scope, int(event_id))
        if ev is None:
            raise LearnedNotFound(f"no learned event {event_id} in this scope (see remem learned history ID)")
        rec = area.get(scope, ev["learned_id"])
        if rec is None or rec["decided"] == "forgotten":
            raise LearnedNotFound(f"learned memory {ev['learned_id']!r} is gone; its events cannot be rolled back")
        before = view(rec)
        new = {**rec, "data": dict(rec["data"]), "updated_at": time.time()}
        old = ev["before"]
        if old is None:
            new["status"], new["decided"] = "rejected", "rejected"
            new["data"]["decided_on"] = [e["turn_id"] for e in rec["evidence"]]
        else:
            for k in ("status", "locked", "edited", "decided", "superseded_by"):
                if k in old and old[k] is not None:
                    new[k] = old[k]
            if old.get("text"):
                new["text"] = redact(str(old["text"])).text
        if ev["actor"] == "decay" and new["status"] == "active":
            new["decided"] = "active"      # the user keeps what decay archived: approved, so decay leaves it
        if ev["actor"] == review.ACTOR and isinstance(new["data"].get("llm"), dict):
            # the user overruled the model: its verdict is not re-applied nor asked for again
            new["data"]["llm"] = {**new["data"]["llm"], "verdict": "overruled"}
        area.put(new)
        area.add_event(rec["owner"], rec["id"], "rollback", before, view(new) | {"event": ev["id"]}, actor=actor,
                       ts=new["updated_at"])
    return public(new)


def feedback(mem: Remem, scope: Scope, memory_id: str, verdict: str, note: str = "",
             actor: str = "agent") -> dict[str, Any]:
    """An agent's verdict (MCP ``memory_feedback``): good → approve, bad → reject, outdated → archive."""
    if verdict not in VERDICTS:
        raise InputError(f"unknown verdict {verdict!r}: one of {', '.join(VERDICTS)}")
    return act(mem, scope, memory_id, VERDICTS[verdict], note=note, actor=actor)


# -- sharing as a file (layers/exchange.py) ---------------------------------------------------

def _shared(mem: Remem, scope: Scope) -> tuple[list[dict[str, Any]], list[str]]:
    """The active memories a file carries, and the projects they belong to (every project of the
    scope with learned memories, so an empty one can receive new lines)."""
    from .exchange import EXPORT_KINDS

    rows = [r for r in _area(mem).list(scope) if r["decided"] != "forgotten"]
    projects = sorted({r["project"] for r in rows} | ({scope.project} if scope.project else set()))
    return [r for r in rows if r["status"] == "active" and r["kind"] in EXPORT_KINDS], projects


def _active_at(area: Learned, scope: Scope, memory_id: str, ts: float) -> bool:
    """Was the memory active at ``ts`` (so an export made then carried it)? Its last event up to then
    says; a memory with no event by then did not exist yet."""
    state = None
    for e in area.events(scope, memory_id):
        if float(e["ts"]) > ts:
            break
        if e["after"] is not None:
            state = e["after"].get("status", state)
        elif e["action"] in ("dropped", "forget", "forgotten"):
            state = None
    return state == "active"


def export_file(mem: Remem, scope: Scope, fmt: str = "md", *, home: str | None = None,
                front_matter: bool = False) -> str:
    """The active conventions, preferences, decisions, procedures and facts in scope as Markdown or
    JSON (``remem learned export``), for one owner."""
    from . import exchange

    if fmt not in ("md", "json"):
        raise InputError(f"unknown format {fmt!r}: md or json")
    if len(scope.owners) != 1:
        raise InputError("export the learned memories of one owner at a time")
    at = time.time()          # before the read: what changes after it is not in the file
    records, projects = _shared(mem, scope)
    if fmt == "json":
        return exchange.render_json(records, scope.owners[0], projects, at, home=home)
    return exchange.render_md(records, scope.owners[0], projects, at, home=home, front_matter=front_matter)


def import_file(mem: Remem, scope: Scope, text: str, *, archive_missing: bool = False, dry_run: bool = False,
                actor: str = "user", home: str | None = None) -> dict[str, Any]:
    """Apply an edited export: changed text → ``edit`` (locks it), new lines → new locked memories
    written by the user, memories the file lost → ``archive`` with ``archive_missing`` (else only
    listed). Everything is checked first and applied in one transaction, each change an event."""
    from ..ingest.pii import anonymise_paths
    from . import exchange

    if len(scope.owners) != 1:
        raise InputError("import into one owner at a time")
    owner = scope.owners[0]
    header, entries = exchange.parse(text)
    if header.owner != owner:
        raise InputError(f"this file was exported for owner {header.owner!r}; pass --owner {header.owner} "
                         f"to import it there")
    area = _area(mem)
    owner_scope = Scope(owners=(owner,))
    stored = {r["id"]: r for r in area.list(owner_scope)}
    real = {anonymise_paths(p, home=home): p for _, p in area.projects(owner_scope)}   # file name → project
    real |= {anonymise_paths(r["project"], home=home): r["project"] for r in stored.values()}
    if scope.project is not None:
        shown_project = anonymise_paths(scope.project, home=home)
        entries = [e for e in entries if e.project == shown_project]
        header.projects = [p for p in header.projects if p == shown_project]
    todo = exchange.plan(header, entries, stored, owner, home=home)
    todo.missing = [r for r in todo.missing if _active_at(area, owner_scope, r["id"], header.at)]
    out: dict[str, Any] = {"edited": [], "created": [], "unchanged": todo.unchanged, "archived": [],
                           "missing": [{"id": r["id"], "project": r["project"], "kind": r["kind"],
                                        "text": exchange.shown(r["text"], home)} for r in todo.missing],
                           "dry_run": dry_run}
    news = []
    for e in todo.new:
        project = real.get(e.project, e.project)
        mid = exchange.new_id(owner, project, e.kind, e.text)
        if mid in stored:
            out["unchanged"] += 1
            continue
        news.append((mid, project, e))
    out["edited"] = [{"id": e.id, "line": e.line, "before": exchange.shown(rec["text"], home), "after": e.text}
                     for e, rec in todo.edits]
    out["created"] = [{"id": mid, "line": e.line, "project": p, "kind": e.kind, "text": e.text}
                      for mid, p, e in news]
    if archive_missing:
        out["archived"] = [m["id"] for m in out["missing"]]
    if dry_run:
        return out
    now = time.time()
    with mem.store.transaction():
        for e, rec in todo.edits:
            act_in(mem, owner_scope, rec["id"], "edit", text=e.text, actor=actor)
        for mid, project, e in news:
            rec = {"owner": owner, "id": mid, "project": project, "layer": "L3" if e.kind == "fact" else "L2",
                   "kind": e.kind, "slot": "", "value": "", "text": redact(e.text).text, "status": "active",
                   "confidence": 1.0, "sessions": 0, "turns": 0, "locked": True, "edited": True,
                   "decided": "active", "polarity": 1, "scope": "project", "data": {"origin": "user"},
                   "stale": 0, "created_at": now, "updated_at": now, "superseded_by": "", "evidence": []}
            area.put(rec)
            area.add_event(owner, mid, "created", None, view(rec), actor=actor, ts=now)
        for mid in out["archived"]:
            act_in(mem, owner_scope, mid, "archive", actor=actor)
    return out

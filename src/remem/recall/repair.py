"""The parts of a repair packet (issue 18, decision repair) besides the past turns.

``entry.repair`` builds the packet an agent gets when it fails the same way twice in a session
(``layers/repair.py`` decides when). Its order is what helps most first:

1. the learned procedures for this error family (error → fix): active ones (and the active skills
   grown from such fixes, ``layers/skills.py``), then candidates of the exact family and signature key (a fix seen once is still the best lead for the very same error:
   a repair packet is asked for by the failure, not guessed from a prompt);
2. "avoid" lines: what was tried against this error family and failed the same way — in earlier
   sessions (the trajectories of past turns with the error, a procedure's own ``avoid``) and
   earlier in this one (its stored turns and the open turn's calls the hook kept);
3. related past turns with what fixed them (``entry.repair`` itself).

Everything is read inside the caller's scope (the procedures through ``store.learned`` with the
scope's owners, the turns through ``store.candidates``): never another owner's memories.
"""

from __future__ import annotations

from typing import Any

from ..layers.repair import Attempt, command_family, error_key, failed_attempts, signature_key
from ..scope import Scope
from .context import RecallContext

MAX_PROCEDURES = 3
MAX_AVOID = 4
PAST_TURNS = 10         # past turns with the error: their sessions are read for avoid lines
PAST_SESSIONS = 4       # at most this many earlier sessions read whole for avoid lines
SESSION_TURNS = 12      # a session's newest stored turns read for avoid lines


def procedure_family(m: dict[str, Any]) -> tuple[str, str]:
    """(command family, signature key) a learned procedure was learned for."""
    trig = (m.get("data") or {}).get("trigger") or {}
    cmd = str(trig.get("command") or "")
    return (command_family("shell", cmd) if cmd else "", signature_key(str(trig.get("signature") or "")))


def procedures(ctx: RecallContext, scope: Scope, project: str | None, fam: str, key: str,
               picked: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The procedures for (``fam``, ``key``) in ``project``, best first: those the learned channel
    already ``picked`` for the error's signature, then active ones of the same key (same family
    first), then candidates of the same family and key."""
    area = getattr(ctx.store, "learned", None)
    out = {m["id"]: m for m in picked if m.get("id")}
    if area is None or not project or not key:
        return list(out.values())[:MAX_PROCEDURES]
    sc = Scope.of(list(scope.owners), project=project)
    try:
        rows = area.list(sc, statuses=("active", "candidate"), kind="procedure", limit=500)
        rows += area.list(sc, statuses=("active",), kind="skill", limit=200)     # skills beside them, active only
    except ctx.errors:
        return list(out.values())[:MAX_PROCEDURES]
    ranked: list[tuple[int, float, dict[str, Any]]] = []
    for m in rows:
        if m.get("id") in out or m.get("owner", scope.owners[0]) not in scope.owners:
            continue
        f, k = procedure_family(m)
        if k != key or (m.get("status") != "active" and f != fam):
            continue
        tier = (0 if m.get("status") == "active" else 2) + (0 if f == fam else 1)
        ranked.append((tier, -float(m.get("confidence") or 0), {**m, "layer": m.get("layer") or "L2",
                                                               "why": "error family"}))
    for _, _, m in sorted(ranked, key=lambda x: (x[0], x[1])):
        out.setdefault(m["id"], m)
    return list(out.values())[:MAX_PROCEDURES]


def _actions(calls: list[Any]) -> list[Any]:
    from ..layers.turnview import to_action

    return [to_action(c) for c in calls if isinstance(c, dict) and c.get("name") != "note"]


def avoid_lines(ctx: RecallContext, scope: Scope, fam: str, key: str, *, session: str | None,
                attempts: list[dict[str, Any]], past: list[dict[str, Any]],
                procs: list[dict[str, Any]], now: float, command: str = "") -> list[dict[str, Any]]:
    """What was tried against (``fam``, ``key``) and failed the same way, newest evidence first:
    this session (its stored turns, then the open turn's ``attempts``, which end with the failing
    call), then the sessions of the ``past`` turns with the error (read whole: an attempt often
    spans turns, "try again") and the procedures' own ``avoid`` commands. One line per distinct
    attempt, at most :data:`MAX_AVOID`; the failing ``command`` itself retried is no line."""
    out: list[dict[str, Any]] = []
    seen: set[Attempt] = {Attempt((), " ".join(command.split())[:160])} if command.strip() else set()

    def add(att: Attempt, where: str, turn_id: str, when: float | None) -> None:
        if att in seen or len(out) >= MAX_AVOID:
            return
        seen.add(att)
        out.append({"id": turn_id, "layer": "avoid", "kind": "avoid", "text": att.text(), "where": where,
                    "last_update": when})

    def session_rows(sid: str) -> list[dict[str, Any]]:
        try:
            return ctx.candidates.session_turns_of_any_agent(scope, sid, limit=SESSION_TURNS, newest=True)
        except ctx.errors:
            return []

    mine = session_rows(session) if session else []
    calls = [c for r in mine for c in (r.get("actions") or [])] + list(attempts)
    for att in reversed(failed_attempts(_actions(calls), fam, key, limit=MAX_AVOID)):
        add(att, "this session", "", now)
    done = {session} if session else set()
    for row in past:
        sid = str(row.get("session_id") or "")
        if sid in done or len(done) > PAST_SESSIONS:
            continue
        done.add(sid)
        rows = session_rows(sid) if sid else [row]
        for att in reversed(failed_attempts(_actions([c for r in rows or [row] for c in (r.get("actions") or [])]),
                                            fam, key)):
            add(att, "earlier session", str(row.get("id") or ""),
                row.get("ended_at") or row.get("started_at") or row.get("updated_at"))
    for m in procs:
        trig = " ".join(str(((m.get("data") or {}).get("trigger") or {}).get("command") or "").split())[:160]
        for cmd in (m.get("data") or {}).get("avoid") or []:
            cmd = " ".join(str(cmd).split())[:160]
            if cmd != trig:      # the trigger failing again is no attempt
                add(Attempt((), cmd), "earlier session", "", (m.get("data") or {}).get("last_seen") or m.get("updated_at"))
    return out


def error_family(error: str, tool: str, command: str) -> tuple[str, str]:
    """(command family, signature key) of a failure as the hook and the repair entry name it."""
    return command_family(tool, command), error_key(error)


def fix_steps(ctx: RecallContext, scope: Scope, items: list[dict[str, Any]]) -> None:
    """A past failure's "fixed by" line also says what the fixing turn did: its edits and the commands
    it ran (the passing run of the family last), which is what the agent can repeat — the request and
    reply of that turn ("ok try again", "all green now") seldom say it."""
    fix_ids = [label.split(" ", 2)[2] for it in items for label, _ in it.get("evidence") or []
               if label.startswith("fixed by ")]
    if not fix_ids:
        return
    rows = ctx.candidates.full_rows(scope, fix_ids)
    for it in items:
        ev = []
        for label, extra in it.get("evidence") or []:
            row = rows.get(label.split(" ", 2)[2]) if label.startswith("fixed by ") else None
            if row is not None:
                steps = [s for s in (_step_of(a) for a in _actions(row.get("actions") or [])) if s]
                if steps:
                    extra = "; ".join(dict.fromkeys(steps[-4:])) + " — " + extra
            ev.append((label, extra))
        it["evidence"] = ev


def _step_of(a: Any) -> str:
    if a.tool == "edit" and a.path:
        return f"edit {a.path.replace(chr(92), '/').rsplit('/', 1)[-1]}"
    if a.tool == "shell" and a.command.strip():
        return f"ran `{' '.join(a.command.split())[:100]}`"
    return ""

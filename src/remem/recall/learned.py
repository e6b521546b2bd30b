"""The learned section of a packet: which learned memories (L2 rules and procedures, L3 facts) an
entry point carries, read inside the caller's scope and chosen by ``layers/select.py``'s rules.

Learned memories are not fused with the turns (a rule is not a better or worse match than a past
turn, it is a different thing): they get their own section, first, within ``SHARE`` of the budget.
Only active memories of the prompt's project are read (``store.learned``; never candidates,
superseded, archived or rejected ones); without a project there is nothing to read yet (every learned
memory belongs to a project).
"""

from __future__ import annotations

from typing import Any

from ..scope import Scope
from .context import RecallContext

SHARE = 0.3          # at most this share of a packet's budget goes to learned memories


def first_of_session(ctx: RecallContext, scope: Scope, session: str | None) -> bool:
    """No turn of ``session`` is stored yet: this is its first prompt (unknown session: False)."""
    if not session:
        return False
    try:
        return not ctx.candidates.session_turns_of_any_agent(scope, session, limit=1)
    except ctx.errors:
        return False


def _recent(ctx: RecallContext, scope: Scope, session: str | None) -> str:
    """The files and commands of the session's last turns (what the agent is working on)."""
    if not session:
        return ""
    from ..layers.select import RECENT_TURNS, recent_context
    from ..layers.turnview import to_action

    try:
        rows = ctx.candidates.session_turns_of_any_agent(scope, session, limit=RECENT_TURNS, newest=True)
    except ctx.errors:
        return ""
    calls = [c for r in rows[-RECENT_TURNS:] for c in (r.get("actions") or []) if isinstance(c, dict)]
    return recent_context(to_action(c) for c in calls if c.get("name") != "note")


def pick(ctx: RecallContext, prompt: str, scope: Scope, *, entry: str, project: str | None,
         session: str | None = None, now: float, core_shown: bool = False) -> list[dict[str, Any]]:
    """The learned memories for this packet, best first, each marked with ``layer``, ``kind`` and
    ``why`` (what brought it in: slot, signature, words, core, reminder, resume). ``core_shown``: the
    session's start context carried the core facts, so its first prompt does not repeat them."""
    area = getattr(ctx.store, "learned", None)
    if area is None or not project:
        return []
    from ..layers.select import pick as choose

    sc = Scope.of(list(scope.owners), project=project)
    try:
        active = area.list(sc, statuses=("active",), limit=500)
    except ctx.errors:
        return []
    if not active:
        return []
    new = first_of_session(ctx, scope, session) if session and entry == "turn_start" else None
    first = entry == "session_start" or (entry == "turn_start" and not core_shown and bool(new))
    from ..layers.retention import HalfLives

    lives = ctx.settings.half_lives
    got = choose(active, prompt, entry=entry, first_of_session=first, now=now, new_session=new,
                 recent_context=_recent(ctx, scope, session) if not new else "",
                 half_lives=HalfLives(*lives) if len(lives) == 6 else None, start_shown=core_shown)
    return [{**m, "layer": m.get("layer") or "L2"} for m in got]

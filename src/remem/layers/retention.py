"""Retention of learned memories (issue 18, decay): how much a memory is still worth injecting, as
a pure function of plain values, no LLM.

    retention = confidence × 0.5 ** (age / (half_life × boost))

* ``age``: days from the memory's newest evidence or successful use to *the project's clock* (the
  newest turn of its project; a live packet uses the prompt's time). A project left alone for months
  therefore forgets nothing — a memory fades when work goes on without it being said, run or used
  again — and a rebuild from the same turns gives the same scores.
* ``half_life``: per kind (``HalfLives``, settings ``learn.retention.*``): standing rules the user set
  last longest, facts about commands and the stack change with the project, where work was left off
  matters for days.
* ``boost = 1 + log2(1 + reinforcements)``, reinforcements = the other sessions that said it, the
  packets that carried it into a turn that went well and the feedback that saw it followed: like
  spaced repetition, each confirmation stretches the half-life.
* ``confidence``: the Beta mean of its evidence and feedback (``lifecycle.confidence``,
  ``feedback.apply``), so a weakened memory fades sooner.

It is a soft factor in the packet's ranking (``select.pick``) and drives the archive rule
(``archive_reason``): an active memory below ``archive_below`` is archived by the learn job — unless
it is locked, approved by the user (remem has no separate pin: the user's approval is the pin) or its
newest evidence is younger than ``min_age_days``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

DAY = 86400.0


@dataclass(frozen=True, slots=True)
class HalfLives:
    """Days until an unconfirmed memory's retention halves (before its boost), per kind."""

    rules: float = 180.0         # preferences and conventions: the user's standing instructions
    decisions: float = 120.0     # a design decision holds until the design moves on
    facts: float = 60.0          # the test / build command, package manager, stack: they change
    procedures: float = 90.0     # an error → fix: as long as the error can come back
    working_state: float = 2.0   # where work was left off: days
    other: float = 30.0          # corrections (records), layouts, ports

    def of(self, kind: str, slot: str = "") -> float:
        if kind in ("preference", "convention"):
            return self.rules
        if kind == "decision":
            return self.decisions
        if kind in ("procedure", "skill"):      # a skill fades as the procedures it grew from
            return self.procedures
        if kind == "working_state":
            return self.working_state
        if kind == "fact" and not slot.startswith(("layout.", "env.port.")):
            return self.facts
        return self.other


@dataclass(frozen=True, slots=True)
class Rule:
    """The archive rule's settings (``learn.retention``)."""

    half_lives: HalfLives = HalfLives()
    archive_below: float = 0.1   # an active memory under this retention is archived
    min_age_days: float = 7.0    # ... but never one whose newest evidence is younger
    enabled: bool = True


def score(*, kind: str, slot: str = "", age_days: float, confidence: float, sessions: int = 1,
          uses: int = 0, supports: int = 0, half_lives: HalfLives = HalfLives()) -> float:
    """The retention of one memory in [0, 1] (see the module docstring)."""
    reinforcements = max(0, sessions - 1) + max(0, uses) + max(0, supports)
    boost = 1.0 + math.log2(1.0 + reinforcements)
    life = max(half_lives.of(kind, slot), 1e-6) * boost
    decay = 0.5 ** (max(0.0, age_days) / life)
    return max(0.0, min(1.0, confidence)) * decay


def _dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _num(v: Any) -> float:
    try:
        return float(v or 0.0)
    except (TypeError, ValueError):
        return 0.0


def last_confirmed(m: Mapping[str, Any]) -> float:
    """The newest evidence or successful use of a stored memory (or a ``Memory.to_dict()``), epoch s."""
    data = _dict(m.get("data"))
    use = _dict(data.get("use"))
    seen = _num(data.get("last_seen")) or _num(m.get("updated_at"))
    return max(seen, _num(use.get("last")))


def _sessions(m: Mapping[str, Any]) -> int:
    s = m.get("sessions")
    return len(s) if isinstance(s, list | set | tuple) else int(_num(s))


def of(m: Mapping[str, Any], now: float, half_lives: HalfLives = HalfLives()) -> float:
    """The retention of a stored memory (``store.learned`` record, ``Remem.learned`` item or
    ``Memory.to_dict()``) at ``now``."""
    data = _dict(m.get("data"))
    use, fb = _dict(data.get("use")), _dict(data.get("feedback"))
    age = (now - last_confirmed(m)) / DAY if last_confirmed(m) else 0.0
    return score(kind=str(m.get("kind") or ""), slot=str(m.get("slot") or ""), age_days=age,
                 confidence=_num(m.get("confidence")), sessions=_sessions(m), uses=int(_num(use.get("succeeded"))),
                 supports=len(fb.get("supported") or ()), half_lives=half_lives)


def exempt(m: Mapping[str, Any], now: float, rule: Rule = Rule()) -> str:
    """Why the archive rule leaves this memory alone ('' when it does not)."""
    if m.get("locked"):
        return "locked"
    if m.get("decided") == "active":
        return "approved"            # the user's approval is the pin
    if _dict(m.get("data")).get("origin") == "user":
        return "written by the user"
    if (now - last_confirmed(m)) / DAY < rule.min_age_days:
        return "young"
    return ""


def archive_reason(m: Mapping[str, Any], now: float, rule: Rule = Rule()) -> tuple[float, str]:
    """(retention, reason) — a reason when the archive rule archives this active memory at ``now``,
    '' when it stays."""
    r = of(m, now, rule.half_lives)
    if not rule.enabled or m.get("status") != "active" or exempt(m, now, rule):
        return r, ""
    if r >= rule.archive_below:
        return r, ""
    days = (now - last_confirmed(m)) / DAY
    return r, (f"retention {r:.3f} < {rule.archive_below:g}: last said or used {days:.0f} days before the "
               f"project's newest turn")


def add_use(use: Mapping[str, Any] | None, outcome: str, at: float) -> dict[str, Any]:
    """``use`` (a memory's ``data["use"]``) after one judged packet carried it: every judged packet
    counts as injected, one whose turn went well (``succeeded``) as a successful use at ``at``."""
    got = {"injected": int(_num((use or {}).get("injected"))), "succeeded": int(_num((use or {}).get("succeeded"))),
           "last": _num((use or {}).get("last"))}
    got["injected"] += 1
    if outcome == "succeeded":
        got["succeeded"] += 1
        got["last"] = max(got["last"], at)
    return got

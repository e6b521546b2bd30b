"""Feedback without an LLM (issue 18): how a turn went, and what that says about the learned memories
its packet injected. Pure functions of plain values; the learn job (``layers/service.py``) joins
packets to turns and writes what these return.

Outcome of a turn, from the turn and the user's next message (``turn_outcome``):

* ``corrected``  the next user message corrects the agent (``rules.is_correction``, EN and ZH);
* ``failed``     the turn's status is failed, or a command failed with no later clean run of that
                 command family (in the turn, or in the next one);
* ``abandoned``  failed, and the session ended on that open error (no next message);
* ``succeeded``  the next message moves on (or thanks) and nothing above holds;
* ``""``         not known yet (no next message, the session may go on).

What a packet's injected memories get from its outcome (``judge``), no collateral blame:

* a correction weakens only the memories whose slot or entities it touches (its slot's cue words,
  the memory's value or avoided tool, its anchors, an identifier or two informative words shared);
* a correction that *repeats* an injected memory (restates it, names its value, or says "again" /
  "I told you" about what it covers) marks it ``not_followed``: the agent saw it and did not follow
  it, a format problem to report, not a reason to weaken it;
* the agent following an injected preference (its commands or edits use the preferred value or an
  anchor of the rule) with no correction is weak ``supported`` evidence.

How feedback moves a memory (``apply``): a weakening counts as one contradicting observation in the
Beta confidence, a support as half a supporting one; ``DEMOTE_AFTER`` weakenings in distinct turns
outweighing its supports send an active, unlocked memory back to candidate (never injected until the
user approves it or new evidence outweighs the corrections).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .clean import sentences, user_voice
from .commands import family, outcome, segments
from .lifecycle import confidence, support
from .rules import _contrast, is_correction
from .select import SLOT_CUES, _identifier, _weight, terms
from .types import Memory, Turn
from .vocab import REPEAT_EN, REPEAT_ZH

OUTCOMES = ("failed", "corrected", "succeeded", "abandoned")
EFFECTS = ("weakened", "supported", "not_followed")
SUPPORT_WEIGHT = 0.5       # following an injected memory is weak evidence
DEMOTE_AFTER = 2           # weakenings (distinct turns) that can send an active memory back to candidate
REPEAT_OVERLAP = 0.5       # share of the memory's words a correction restates to repeat it
MIN_WORDS_WEIGHT = 1.3     # two informative words shared (as layers/select.py counts them)
MIN_ANCHOR = 4
KEEP = 50                  # turn ids kept per effect on a memory
RULE_KINDS = ("preference", "convention", "decision", "correction")


def _fams(command: str) -> list[str]:
    return [f for f in (family(s) for s in segments(command)) if f] or ([command.strip()] if command.strip() else [])


def open_error(turn: Turn, later: Iterable[Any] = ()) -> bool:
    """A shell command of the turn failed and no later run of the same command family was clean."""
    open_: set[str] = set()
    for i, a in enumerate([*turn.actions, *later]):
        if a.tool != "shell":
            continue
        res = outcome(a)
        fams = _fams(a.command)
        if res == "failed" and i < len(turn.actions):
            open_.update(fams)
        elif res == "ok":
            open_.difference_update(fams)
    return bool(open_)


def turn_outcome(turn: Turn, next_turn: Turn | None, *, status: str = "", session_over: bool = False) -> str:
    """failed / corrected / succeeded / abandoned, or "" when not known yet (see the module doc)."""
    if next_turn is not None and is_correction(user_voice(next_turn.request)):
        return "corrected"
    failed = status == "failed" or open_error(turn, next_turn.actions if next_turn is not None else ())
    if next_turn is None:
        return "abandoned" if failed and session_over else ""
    return "failed" if failed else "succeeded"


@dataclass(frozen=True, slots=True)
class Verdict:
    """What one packet's outcome says about one injected memory."""

    memory_id: str
    effect: str          # weakened | supported | not_followed
    reason: str          # slot | entities | repeated | followed


def _words(m: dict[str, Any]) -> set[str]:
    data = m.get("data") or {}
    out = {str(m.get("value") or "").lower(), str(data.get("avoid") or "").lower()}
    return {w for w in out if len(w) >= 2}


def touches(m: dict[str, Any], text: str) -> str:
    """"slot" / "entities" when ``text`` (a correction, the user's voice) is about the memory, else ""."""
    low = text.lower()
    slot = str(m.get("slot") or "")
    cue = SLOT_CUES.get(slot)
    if cue is not None and cue.search(text):
        return "slot"
    said = set(re.findall(r"[a-z][\w.+-]*", low))
    if _words(m) & said:
        return "slot" if slot else "entities"
    anchors = [str(a).lower() for a in (m.get("data") or {}).get("anchors") or () if len(str(a)) >= MIN_ANCHOR]
    if any(a in low for a in anchors):
        return "entities"
    shared = terms(text) & terms(str(m.get("text") or ""))
    if any(_identifier(w) for w in shared) or (len(shared) >= 2 and sum(_weight(w) for w in shared) >= MIN_WORDS_WEIGHT):
        return "entities"
    return ""


def _named(word: str, text: str) -> bool:
    """``word`` appears in ``text`` and is not negated ("not npm", "don't use npm")."""
    w = re.escape(word)
    low = text.lower()
    if not re.search(rf"(?<![\w.-]){w}(?![\w-])", low):
        return False
    return not re.search(rf"\b(?:not|no|don'?t|never|stop|instead of)\s+(?:use\s+|using\s+)?{w}(?![\w-])|"
                         rf"(?:不要|别|不用)(?:再)?(?:用|使用)?\s*{w}", low)


def repeats(m: dict[str, Any], text: str) -> bool:
    """The correction restates the memory (the agent was told and did not follow): it names the
    memory's value (a slot memory), or restates most of its words, or says "again" / "I told you"
    about a rule without a value."""
    value = str(m.get("value") or "").lower()
    if value:
        for s in sentences(text):
            pair = _contrast(s)
            if pair:
                return pair[0].lower() == value
        return _named(value, text)
    mine = terms(str(m.get("text") or ""))
    if mine and len(mine & terms(text)) >= REPEAT_OVERLAP * len(mine):
        return True
    return bool(REPEAT_EN.search(text) or REPEAT_ZH.search(text))


def followed(m: dict[str, Any], turn: Turn) -> bool:
    """The agent's commands or edits in ``turn`` use what an injected preference asks for."""
    if m.get("kind") not in RULE_KINDS or int(m.get("polarity") or 1) < 0:
        return False
    did = "\n".join(a.command or a.path for a in turn.actions if a.command or a.path).lower()
    if not did:
        return False
    data = m.get("data") or {}
    avoid = str(data.get("avoid") or "").lower()
    value = str(m.get("value") or "").lower()
    if value and _named(value, did):
        return not (avoid and _named(avoid, did))
    anchors = [str(a).lower() for a in data.get("anchors") or () if len(str(a)) >= MIN_ANCHOR]
    return m.get("kind") == "preference" and any(a in did for a in anchors)


def judge(injected: Iterable[dict[str, Any]], turn: Turn, next_turn: Turn | None, result: str) -> list[Verdict]:
    """The verdicts a packet's outcome gives its injected learned memories (see the module doc)."""
    out: list[Verdict] = []
    if result == "corrected" and next_turn is not None:
        said = user_voice(next_turn.request)
        for m in injected:
            why = touches(m, said)
            if not why:
                continue
            if repeats(m, said):
                out.append(Verdict(m["id"], "not_followed", "repeated"))
            else:
                out.append(Verdict(m["id"], "weakened", why))
    elif result == "succeeded":
        out += [Verdict(m["id"], "supported", "followed") for m in injected if followed(m, turn)]
    return out


# -- what feedback does to a memory -----------------------------------------------------------

def add(fb: dict[str, Any] | None, effect: str, turn_id: str) -> dict[str, Any]:
    """``fb`` (a memory's ``data["feedback"]``) with one more turn for ``effect`` (each turn once)."""
    got = {k: list(v) for k, v in (fb or {}).items() if isinstance(v, list)}
    seen = got.setdefault(effect, [])
    if turn_id not in seen:
        seen.append(turn_id)
        del seen[:-KEEP]
    return got


def apply(m: Memory, fb: dict[str, Any] | None) -> Memory:
    """Fold stored feedback into a freshly learned memory's confidence and status (in place)."""
    if not fb:
        return m
    m.data["feedback"] = fb
    weak = len(fb.get("weakened") or ())
    sup = len(fb.get("supported") or ())
    if not weak and not sup:
        return m
    m.confidence = confidence(support(m) + SUPPORT_WEIGHT * sup, float(len(m.against)) + weak)
    if m.status == "active" and not m.locked and weak >= DEMOTE_AFTER and weak > SUPPORT_WEIGHT * sup:
        m.status = "candidate"
        m.data["demoted"] = "feedback"
    return m

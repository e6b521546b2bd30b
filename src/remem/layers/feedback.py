"""Feedback without an LLM (issue 18): how a turn went, and what that says about the learned memories
its packet injected. Pure functions of plain values; the learn job (``layers/service.py``) joins
packets to turns and writes what these return.

Outcome of a turn, from the turn and the user's next message (``turn_outcome``):

* ``corrected``  the next user message corrects the agent (``rules.is_correction``, EN and ZH) or
                 reports its work wrong ("you broke …", "it still fails", 还是不行);
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
* the agent following an injected preference (its commands or edits use the preferred value, not
  the avoided one) with no correction is weak ``supported`` evidence.

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

from ..recall.coverage import reference_weight
from .clean import sentences, user_voice
from .commands import family, outcome, segments
from .lifecycle import confidence, support
from .rules import _contrast, is_correction
from .select import SLOT_CUES, _identifier, terms
from .types import Memory, Turn
from .vocab import REPEAT_EN, REPEAT_ZH, SLOT_TOOLS

_NOT_FOLLOWED = re.compile(r"\b(?:not|n'?t|never) follow(?:ed|ing)?\b|\bignor(?:ed|ing|e) (?:the|my|that|this|our) "
                           r"(?:rule|instruction|preference|convention)|(?:没有?|不)(?:遵守|遵循|按照)", re.I)

OUTCOMES = ("failed", "corrected", "succeeded", "abandoned")
EFFECTS = ("weakened", "supported", "not_followed", "passed", "failed")   # the last two: a skill's trials
SUPPORT_WEIGHT = 0.5       # following an injected memory is weak evidence
DEMOTE_AFTER = 2           # weakenings (distinct turns) that can send an active memory back to candidate
REPEAT_OVERLAP = 0.5       # share of the memory's words a correction restates to repeat it
MIN_WORDS_WEIGHT = 1.3     # informative words shared (as layers/select.py weighs them)
MIN_SHARED = 3             # ... at least this many, for a rule without a concrete anchor in the text
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


# the next message reports that the work is wrong without a correction's opening ("you broke …",
# "it still fails", "we regressed on …", 还是不行): the agent is corrected all the same, never succeeded
_COMPLAINT = re.compile(
    r"\byou (?:broke|have broken|missed|forgot|removed|deleted|ignored)\b|"
    r"\b(?:is|are|was|were|it'?s|still) (?:broken|wrong|incorrect|failing|not working)\b|"
    r"\b(?:doesn'?t|does not|didn'?t|did not|isn'?t|is not|still not|not) work(?:ing|s|ed)?\b|"
    r"\bregress(?:ed|ion|ions)?\b|\bstill (?:see|get|fails?|failing|broken|happening|there|wrong)\b|"
    r"(?:还是|仍然|依然)(?:不行|报错|有问题|不对|失败)|不(?:工作|生效)了?|坏了|又(?:出错|报错|坏)", re.I)


_PASTED = re.compile(r"(?:^|\s)[❯➜λ%$#]\s.*$|^\s*[\w.@/-]+ v?\d+\.\d+(?:\.\d+)?\b.*$", re.M)   # prompts, version banners


def said(text: str) -> str:
    """The user's own words of a message: ``user_voice`` without what follows a pasted shell prompt
    and without version banners (``❯ bun run …``, ``Bun v1.2.9 (macOS arm64)``: the tool names of
    pasted output, not of the request)."""
    return _PASTED.sub("", user_voice(text)).strip()


def corrects(text: str) -> bool:
    """The user's next message corrects the agent (``rules.is_correction``) or reports its work wrong."""
    voice = user_voice(text)
    return is_correction(voice) or bool(_COMPLAINT.search(voice))


def turn_outcome(turn: Turn, next_turn: Turn | None, *, status: str = "", session_over: bool = False) -> str:
    """failed / corrected / succeeded / abandoned, or "" when not known yet (see the module doc)."""
    if next_turn is not None and corrects(next_turn.request):
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


def _rivals(m: dict[str, Any], text: str) -> bool:
    """``text`` names another value for the memory's slot (a competing tool, not the one the memory
    says to avoid) or negates its value."""
    slot, value = str(m.get("slot") or ""), str(m.get("value") or "").lower()
    if not slot or not value:
        return False
    head = value.split()[0]
    if re.search(rf"\b(?:not|no|don'?t|never|stop|instead of)\s+(?:use\s+|using\s+|run\s+)?{re.escape(head)}(?![\w-])|"
                 rf"(?:不要|别|不用)(?:再)?(?:用|使用)?\s*{re.escape(head)}", text.lower()):
        return True
    rivals = set(SLOT_TOOLS.get(slot, ())) or (set(SLOT_TOOLS["pkg.manager"]) | set(SLOT_TOOLS["tool.test_runner"])
                                              if slot.startswith("cmd.") else set())
    avoid = str((m.get("data") or {}).get("avoid") or "").lower()
    names = "|".join(re.escape(r) for r in sorted(rivals - {head, value, avoid}))
    # stated as what to use ("use yarn", "the tests run with vitest", 改用 yarn), not merely mentioned
    return bool(names) and bool(re.search(rf"(?:\b(?:use|uses|using|run|runs|with|via|switch(?:ed)? to|prefer|"
                                          rf"it'?s|is)|用|改用|换成|使用)\s*`?(?:{names})(?![\w-])", text.lower()))


def touches(m: dict[str, Any], text: str) -> str:
    """"slot" / "entities" when ``text`` (a correction, the user's voice) is about the memory, else "".

    A memory that fills a slot (the test command, the package manager) is touched when the text is
    about its value: names it, negates it, or names a rival for the slot. The slot's cue words alone
    ("run the tests", "format") are not enough: a correction that mentions the tests is rarely about
    which command runs them. A rule is touched by its anchors (concrete things: a `code` term, a path,
    an identifier), a shared identifier, or at least three informative shared words."""
    low = text.lower()
    slot = str(m.get("slot") or "")
    if slot and m.get("value"):
        cue = SLOT_CUES.get(slot)
        said = set(re.findall(r"[a-z][\w.+-]*", low))
        if _rivals(m, text) and (cue is None or cue.search(text) or _words(m) & said):
            return "slot"
        return "slot" if _words(m) & said or _named(str(m["value"]).lower(), text) else ""
    anchors = [str(a).lower() for a in (m.get("data") or {}).get("anchors") or () if len(str(a)) >= MIN_ANCHOR]
    if any(_identifier(a) and a in low for a in anchors):
        return "entities"
    shared = terms(text) & terms(str(m.get("text") or ""))
    if any(_identifier(w) for w in shared) or (len(shared) >= MIN_SHARED and
                                                sum(reference_weight(w) for w in shared) >= MIN_WORDS_WEIGHT):
        return "entities"
    if _words(m) & set(re.findall(r"[a-z][\w.+-]*", low)):
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
    memory's value or the thing it says to avoid (a slot memory, unless it names a rival value), or
    restates most of its words, or says "again" / "I told you" / "you did not follow"."""
    value = str(m.get("value") or "").lower()
    if value:
        for s in sentences(text):
            pair = _contrast(s)
            if pair:
                return pair[0].lower() == value
        if _rivals(m, text):
            return False                     # another value for the slot: the memory is contradicted
        avoid = str((m.get("data") or {}).get("avoid") or "").lower()
        return (_named(value, text) or bool(avoid and re.search(rf"(?<![\w.-]){re.escape(avoid)}(?![\w-])", text.lower()))
                or bool(REPEAT_EN.search(text) or REPEAT_ZH.search(text) or _NOT_FOLLOWED.search(text)))
    mine = terms(str(m.get("text") or ""))
    if mine and len(mine & terms(text)) >= REPEAT_OVERLAP * len(mine):
        return True
    return bool(REPEAT_EN.search(text) or REPEAT_ZH.search(text) or _NOT_FOLLOWED.search(text))


def followed(m: dict[str, Any], turn: Turn) -> bool:
    """The agent's commands or edits in ``turn`` use the value an injected preference asks for (and
    not the one it says to avoid)."""
    if m.get("kind") not in RULE_KINDS or int(m.get("polarity") or 1) < 0:
        return False
    did = "\n".join(a.command or a.path for a in turn.actions if a.command or a.path).lower()
    if not did:
        return False
    data = m.get("data") or {}
    avoid = str(data.get("avoid") or "").lower()
    value = str(m.get("value") or "").lower()
    # only a preference with a value can be seen followed in commands: a rule's anchors in a command
    # ("the fibers command's output …" and `fibers deps` run) say the agent was there, not that it obeyed
    return bool(value) and _named(value, did) and not (avoid and _named(avoid, did))


def judge(injected: Iterable[dict[str, Any]], turn: Turn, next_turn: Turn | None, result: str) -> list[Verdict]:
    """The verdicts a packet's outcome gives its injected learned memories (see the module doc)."""
    from .skills import trial

    injected = list(injected)
    out: list[Verdict] = [Verdict(m["id"], got, "trial") for m in injected if m.get("kind") == "skill"
                          and (got := trial(m, turn, next_turn, result))]
    injected = [m for m in injected if m.get("kind") != "skill"]
    if result == "corrected" and next_turn is not None:
        words = said(next_turn.request)
        for m in injected:
            why = touches(m, words)
            if not why:
                continue
            if repeats(m, words):
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


def apply(m: Memory, fb: dict[str, Any] | None, *, approved: bool = False) -> Memory:
    """Fold stored feedback into a freshly learned memory's confidence and status (in place); a
    skill's trials into its η (``skills.apply_trials``; ``approved``: the user's approval keeps it)."""
    if m.kind == "skill":
        from .skills import apply_trials

        if fb:
            m.data["feedback"] = fb
        apply_trials(m, fb, approved=approved)
        return m
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

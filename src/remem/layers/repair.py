"""Decision repair (issue 18): when a repair packet is due, and what was tried before. Pure.

The second failure of the same *error family* — (command family, error signature key) — within a
session means the agent is going round in circles; remem then hands it a repair packet (the
procedures learned for that error, what was tried and failed before, related past turns). This
module decides when (:func:`note_failure`, on a small JSON-able per-session state the hook keeps)
and reads the failed attempts out of a tool trajectory (:func:`failed_attempts`). The packet
itself is built by ``recall/entry.py::repair``.

Why a *key* of the signature rather than the signature: the same compiler error reaches a hook
cut at different lengths (``IDE0055: Fix formatting (https://l`` / ``… (https://learn.micr``), so
codes (``CS0246``, ``IDE0055``, ``TS2307``) stand for themselves and other signatures are cut
before their first parenthesis and to a few words.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ..ingest.signatures import error_signatures, normalize_signature
from .commands import family, outcome, segments
from .types import Action

STEPS = (2, 4, 8, 16)     # occurrence counts of one error family that may bring a repair packet
SESSION_CAP = 4           # repair packets per session at most, whatever happens (no storms)
MAX_KEYS = 64             # error families a session's state remembers (the oldest go first)

_CODE = re.compile(r"^(?:error\s+)?([A-Z]{1,8}\d{3,5})\b")
_PHRASES = ("command not found", "No such file or directory", "Permission denied")
_WORD = re.compile(r"[^\W_]+|…|<path>", re.UNICODE)
_ERRORISH = re.compile(r"error|fail|exception|denied|not found|cannot|can't|could not|invalid|refused|timed? ?out|"
                       r"unable|unknown|missing|no such|fatal|abort", re.I)
_WINPATH = re.compile(r"\b[A-Za-z]:\\[^\s\"']+")


@dataclass(frozen=True, slots=True)
class Attempt:
    """Something tried against an error family that did not help: the steps taken after one
    failure (edits, other commands) and the command that then failed the same way."""

    steps: tuple[str, ...]
    command: str

    def text(self) -> str:
        tried = "; ".join(self.steps)
        cmd = f"`{self.command}`"
        return f"{tried} → {cmd} still failed the same way" if tried else f"{cmd} failed the same way"


def signature_key(sig: str) -> str:
    """What makes two signatures the same error: a code (``CS0246``, ``E0425``), a fixed phrase
    ("No such file or directory"), else the first words before any parenthesis."""
    sig = " ".join((sig or "").split())
    m = _CODE.match(sig)
    if m:
        return m.group(1)
    for p in _PHRASES:
        if p.lower() in sig.lower():
            return p
    words = _WORD.findall(sig.split("(", 1)[0])
    return " ".join(words[:6])


def error_key(output: str, fallback: str = "") -> str:
    """The signature key of a failed call's output: its first error signature, else the last of its
    last five non-empty lines that reads as an error ("… not found", "Cannot …", "… failed"),
    normalised the same way; else ``fallback`` when the output is empty, else "" (no key: a failure
    whose output names no error — a build log ending on a path — is not known to be the same one)."""
    sigs = error_signatures((output or "")[-6000:], limit=3)
    if sigs:
        return signature_key(sigs[0])
    lines = [ln for ln in (output or "").splitlines() if ln.strip()]
    for ln in reversed(lines[-5:]):
        if _ERRORISH.search(ln):
            return signature_key(normalize_signature(_WINPATH.sub("<path>", ln[:200])))
    return "" if lines else fallback


def command_family(tool: str, command: str) -> str:
    """The family of a call: the last meaningful segment's family for a shell command (``bun
    test``, ``dotnet build``), else the tool's own name (``Edit``, ``Read``)."""
    fams = [f for f in (family(s) for s in segments(command)) if f] if command.strip() else []
    return fams[-1] if fams else (tool or "tool").strip().lower()


def command_of(tool_input: str) -> str:
    """The shell command of a hook's tool input: ``{"command": "…"}`` (Claude Code, Gemini),
    ``{"command": ["bash", "-lc", "…"]}`` or ``{"cmd": "…"}`` (Codex), else "" (not a shell call).
    The store's trajectories are read by ``layers.turnview.to_action``, which knows more shapes."""
    raw = (tool_input or "").strip()
    if raw[:1] != "{":
        return ""
    try:
        args = json.loads(raw)
    except ValueError:
        return ""
    cmd = args.get("command", args.get("cmd", "")) if isinstance(args, dict) else ""
    if isinstance(cmd, list):
        cmd = cmd[-1] if cmd else ""
    return str(cmd or "")


def family_key(fam: str, key: str) -> str:
    """One string for a (family, signature key) pair: how the hook's JSON state names it."""
    return f"{fam}\x1f{key}"


def note_failure(state: dict[str, Any], fam: str, key: str) -> bool:
    """Count one failure of (``fam``, ``key``) in a session's ``state`` (changed in place: counts,
    the step each family last got a packet at, packets given). True when a repair packet is due:
    the count reached a step of :data:`STEPS` this family has not had a packet for, and the session
    is under :data:`SESSION_CAP`. The first failure never is."""
    if not key:
        return False
    counts: dict[str, int] = state.setdefault("counts", {})
    sent: dict[str, int] = state.setdefault("sent", {})
    k = family_key(fam, key)
    counts[k] = counts.pop(k, 0) + 1                # re-inserted: the newest family is last
    while len(counts) > MAX_KEYS:
        old = next(iter(counts))
        counts.pop(old)
        sent.pop(old, None)
    n = counts[k]
    step = max((s for s in STEPS if s <= n), default=0)
    if step < STEPS[0] or sent.get(k, 0) >= step or int(state.get("packets", 0)) >= SESSION_CAP:
        return False
    sent[k] = step
    state["packets"] = int(state.get("packets", 0)) + 1
    return True


def _shell(a: Action) -> bool:
    return a.tool == "shell" and bool(a.command.strip())


def _matches(a: Action, fam: str, key: str) -> bool:
    return _shell(a) and outcome(a) == "failed" and command_family(a.tool, a.command) == fam \
        and error_key(a.output) == key


def _step(a: Action) -> str:
    if a.tool == "edit" and a.path:
        return f"edit {a.path}"
    if _shell(a):
        return f"run `{' '.join(a.command.split())[:100]}`"
    return ""


def failed_attempts(actions: list[Action], fam: str, key: str, limit: int = 3) -> list[Attempt]:
    """What was tried between two failures of (``fam``, ``key``) in ``actions`` (one trajectory,
    in order): the edits and other commands after a failure, and the command that failed the same
    way after them. A plain retry of the same command with nothing in between tried nothing."""
    out: list[Attempt] = []
    last: Action | None = None
    steps: list[str] = []
    for a in actions:
        if _matches(a, fam, key):
            cmd = " ".join(a.command.split())[:160]
            if last is not None and (steps or cmd != " ".join(last.command.split())[:160]):
                att = Attempt(tuple(dict.fromkeys(steps))[:4], cmd)
                if att not in out:
                    out.append(att)
            last, steps = a, []
        elif last is not None:
            s = _step(a)
            if s:
                steps.append(s)
    return out[-limit:]

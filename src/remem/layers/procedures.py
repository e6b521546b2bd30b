"""Error → fix procedures from the agent's tool calls.

A shell call fails with an error signature; later, in the same turn or the next two turns of the
same session, the same command family passes. The procedure records the trigger (signature,
command), the action (edits and commands in between, the assistant's explanation), what to avoid
(attempts that failed the same way) and how to verify (the passing command). Pure.
"""

from __future__ import annotations

import hashlib
import re

from .commands import family, outcome, segments, signatures
from .types import Action, Evidence, Observation, Turn

LOOKAHEAD_TURNS = 2          # the fix must pass in the same turn or the next two
MAX_STEPS = 6
_EXPLAIN = re.compile(r"\b(?:because|the (?:issue|problem|error) (?:is|was)|caused by|instead)\b|因为|原因是|问题是", re.I)


def explanation(reply: str) -> str:
    """The sentence of the assistant's reply that says why (first 'because' / 'the issue is' / 因为)."""
    m = _EXPLAIN.search(reply[:20000])
    if not m:
        return ""
    start = max(reply.rfind(".", 0, m.start()), reply.rfind("\n", 0, m.start()), reply.rfind("。", 0, m.start())) + 1
    ends = [i for i in (reply.find(".", m.end()), reply.find("\n", m.end()), reply.find("。", m.end())) if i >= 0]
    return reply[start:min(ends) if ends else len(reply)].strip()[:240]


def _shell(a: Action) -> bool:
    return a.tool == "shell" and bool(a.command.strip())


def _fams(a: Action) -> list[str]:
    return [f for f in (family(s) for s in segments(a.command)) if f]


def _key(sig: str, fam: str) -> str:
    return "proc:" + hashlib.sha1(f"{sig}\x1f{fam}".encode()).hexdigest()[:12]


def procedure_observations(session_turns: list[Turn]) -> list[Observation]:
    """Every error→fix inside one session's turns (given in time order)."""
    flat: list[tuple[int, Action]] = [(i, a) for i, t in enumerate(session_turns) for a in t.actions]
    out: list[Observation] = []
    used: set[int] = set()
    for pos, (ti, a) in enumerate(flat):
        if pos in used or not _shell(a) or outcome(a) != "failed":
            continue
        sigs = signatures(a)
        fams = _fams(a)
        if not sigs or not fams:
            continue
        fam = fams[-1]
        steps: list[str] = []
        avoid: list[str] = []
        for p2 in range(pos + 1, len(flat)):
            tj, b = flat[p2]
            if tj - ti > LOOKAHEAD_TURNS:
                break
            if _shell(b) and fam in _fams(b):
                res = outcome(b)
                if res == "failed" and set(signatures(b)) & set(sigs):
                    avoid.append(b.command.strip()[:160])
                    used.add(p2)
                    continue
                if res == "ok":
                    turn = session_turns[tj]
                    explain = explanation(session_turns[ti].reply or "") or explanation(turn.reply or "")
                    if not steps and b.command.strip() == a.command.strip():
                        break        # the same command passing again is a flake, not a fix
                    sig = sigs[0]
                    text = (f"When `{fam}` fails with \"{sig}\": " +
                            ("; ".join(steps[:MAX_STEPS]) if steps else f"run `{b.command.strip()[:120]}`") +
                            f". Verify with `{b.command.strip()[:120]}`.")
                    first = session_turns[ti]
                    out.append(Observation(
                        kind="procedure", key=_key(sig, fam), text=text, project=first.project,
                        evidence=Evidence(turn_id=first.id, session=first.session, ts=first.ts,
                                          source="inferred"),
                        terms=frozenset(re.findall(r"[a-z]\w+", (sig + " " + fam).lower())),
                        data={"trigger": {"signature": sig, "command": a.command.strip()[:200]},
                              "action": steps[:MAX_STEPS], "avoid": avoid[:3], "verify": b.command.strip()[:200],
                              "explanation": explain, "fixed_in": turn.id}))
                    break
            elif b.tool == "edit" and b.path:
                steps.append(f"edit {b.path}")
            elif _shell(b):
                steps.append(f"run `{b.command.strip()[:100]}`")
    return out

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
_EXPLAIN = re.compile(r"[^.\n]{0,200}\b(?:because|the (?:issue|problem|error) (?:is|was)|caused by|need(?:s|ed)? to|"
                      r"fix(?:ed)? (?:it|this|the)|instead)\b[^.\n]{0,200}[.\n]|[^。\n]{0,80}(?:因为|原因是|问题是|需要)[^。\n]{0,80}[。\n]",
                      re.I)


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
                    explain = ""
                    m = _EXPLAIN.search(session_turns[ti].reply or "") or _EXPLAIN.search(turn.reply or "")
                    if m:
                        explain = m.group(0).strip()[:240]
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

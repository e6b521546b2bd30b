"""``/remem-resume``: find up to five past episodes, then inject the one the user picks.

``/remem-resume <query>`` lists candidates (one per session: agent, project, when, first line);
the user answers ``1``–``5`` (bare, right after the list, or as ``/remem-resume 3``) and the
whole episode — every turn of that session — comes back as continuation context. The list is
kept in the session's hook state between the two prompts, and outlives SessionEnd for its pick
window (``claude -p '/remem-resume x'`` then ``claude -p '1' --continue``). Neither the command
nor the pick is ever stored as a turn.
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING, Any

from . import render

if TYPE_CHECKING:
    from .backend import Backend

MAX_CANDIDATES = 5
PICK_WINDOW = 30 * 60   # a bare "2" counts as a pick only this long after the list was shown
_COMMAND = re.compile(r"^\s*/?remem[-_]resume\b:?\s*(.*)$", re.S | re.I)
_PICK = re.compile(r"^\s*#?([1-9])\s*\.?\s*$")


def parse(prompt: str, state: dict[str, Any], now: float | None = None) -> tuple[str, str] | None:
    """("query", text) or ("pick", "N") when ``prompt`` is a resume request, else None."""
    m = _COMMAND.match(prompt or "")
    if m:
        arg = m.group(1).strip()
        # Claude Code expands the command file: keep only the first line (the arguments)
        arg = arg.splitlines()[0].strip() if arg else ""
        p = _PICK.match(arg)
        if p:
            return ("pick", p.group(1))
        return ("query", arg)
    p = _PICK.match(prompt or "")
    if p and still_open(state, now):
        return ("pick", p.group(1))
    return None


def is_pick(prompt: str) -> bool:
    """A bare 1-9 (``2``, ``#2``, ``2.``): a pick, when a list was just shown."""
    return bool(_PICK.match(prompt or ""))


def still_open(state: dict[str, Any], now: float | None = None) -> bool:
    """The state holds a candidate list inside its pick window."""
    last = state.get("resume") or {}
    return bool(last.get("candidates")) and (now or time.time()) - float(last.get("ts", 0)) < PICK_WINDOW


def candidates(backend: Backend, query: str, project: str, *, as_agent: str) -> list[dict[str, Any]]:
    """Distinct past episodes (sessions) ``as_agent`` may read for ``query``, or the latest in
    ``project`` if empty. ``when`` is when the work happened (not when remem imported it)."""
    if query:
        hits = backend.search(query, k=25, as_agent=as_agent)
        rows = [{"id": h.get("id"), "agent": h.get("agent"), "project": h.get("project"),
                 "session_id": h.get("session_id"), "when": render.when_of(h),
                 "title": h.get("text", "")} for h in hits]
    else:
        from ..layers.world import first_goal

        recent = backend.recent(project, limit=25, as_agent=as_agent)
        # a session by the goal its requests among these state ("continue", "ok" say nothing), oldest first
        said: dict[tuple[str, str], list[str]] = {}
        for r in reversed(recent):
            said.setdefault(_episode(r), []).append(str(r.get("request") or ""))
        goals = {k: first_goal(v)[0] for k, v in said.items()}
        rows = [{"id": r.get("id"), "agent": r.get("agent"), "project": r.get("project"),
                 "session_id": r.get("session_id"), "when": render.when_of(r),
                 "title": goals.get(_episode(r)) or r.get("request", "")} for r in recent]
    out: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for r in rows:
        key = _episode(r)
        if key in seen:
            continue
        seen.add(key)
        out.append(r)
        if len(out) >= MAX_CANDIDATES:
            break
    return out


def _episode(r: dict[str, Any]) -> tuple[str, str]:
    """The episode a row belongs to: its agent's session (a row without one is its own)."""
    return str(r.get("agent")), str(r.get("session_id") or r.get("id"))


def episode(backend: Backend, cand: dict[str, Any], *, as_agent: str) -> list[dict[str, Any]]:
    sid = cand.get("session_id")
    if sid:
        turns = [t for t in backend.timeline(str(sid), as_agent=as_agent) if t.get("agent") == cand.get("agent")]
        if turns:
            return turns
    one = backend.get(str(cand.get("id")), as_agent=as_agent)
    return [one] if one else []


def handle(backend: Backend, action: tuple[str, str], state: dict[str, Any], project: str,
           now: float | None = None, *, as_agent: str) -> str:
    """Run a parsed resume request; updates ``state["resume"]``; returns the context text."""
    kind, arg = action
    now = now or time.time()
    if kind == "query":
        cands = candidates(backend, arg, project, as_agent=as_agent)
        state["resume"] = {"query": arg, "candidates": cands, "ts": now}
        return render.resume_candidates(arg, cands, now)
    cands = (state.get("resume") or {}).get("candidates") or []
    n = int(arg)
    if not 1 <= n <= len(cands):
        return (f"<remem_resume>\nThere is no candidate {n}. Ask the user to run /remem-resume <words> "
                "first, then answer with one of the listed numbers.\n</remem_resume>")
    cand = cands[n - 1]
    state.pop("resume", None)
    return render.resume_episode(cand, episode(backend, cand, as_agent=as_agent), now)

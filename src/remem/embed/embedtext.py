"""What a turn's vectors see: the parts with the most signal per token, each capped.

A real coding turn is ~4-30 KB, most of it tool output (test logs, file reads, diffs). The model
costs ~0.3 ms per token per core and reads at most 510 tokens, so embedding the turn's start spent
the budget on the first tool output. Two texts are embedded instead (recall/channels.py reads both
fields):

- ``summary``: the request (what the user wanted: the best single signal), a long one cut to its
  start and end as a prompt is at recall, then the opening of the turn's summary or reply,
  skipping code blocks (the reply's first prose says what was done);
- ``actions``: one line per tool call, its name and what it touched (the command, the file path,
  the search pattern), and the first error line of its output (``KeyError: 'x'``, ``FAILED ...``).

Budgets are in characters where one CJK character counts as three (XLM-R's vocabulary spends about
as many tokens on one Chinese character as on three Latin ones). A request of up to 264 is embedded
whole; a longer one by its first 200 and last 64, about the 48 + 16 tokens a prompt is embedded by
at recall (recall/channels.py ``QUERY_EMBED_TOKENS``): the middle of a long request is mostly pasted
code or log, which the word indexes read in full. That and the shorter opening (100) took session
21's real-shaped turns from 160 to 144 tokens (embedding 34.5 -> 40.0 turns/s on two cores, best round), with
turn recall at the labelled dev probes and LoCoMo unchanged within noise (bench/RESULTS.md).
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..text.cjk import WIDE
from ..text.fences import FENCED

#: a long request's start and end
REQUEST_HEAD = 200
REQUEST_TAIL = 64
#: the opening of the summary or reply
GIST_BUDGET = 100
#: all tool calls together; one call's target and its error line
ACTIONS_BUDGET = 200
TARGET_BUDGET = 70
ERROR_BUDGET = 80

_CJK = re.compile(f"[{WIDE}]")
_SPACE = re.compile(r"\s+")
_ERROR_LINE = re.compile(
    r"^\s*(?:E\s+)?(?:[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning)\b.*"
    r"|FAILED\b.*|ERROR\b.*|error(?:\[\w+\])?:.*|fatal:.*|panic:.*|Traceback \(most recent call last\).*)$",
    re.M)
# the input fields that say what a call touched, in order of preference
_KEYS = ("command", "cmd", "pattern", "query", "url", "file_path", "notebook_path", "path", "prompt",
         "description")


def weight(text: str) -> int:
    """The budget ``text`` uses: its length, CJK characters counted three times."""
    return len(text) + 2 * len(_CJK.findall(text))


def cap(text: str, budget: int) -> str:
    """``text`` cut to ``budget`` (see :func:`weight`), at a word boundary when one is near."""
    if weight(text) <= budget:
        return text
    used, end = 0, 0
    for i, ch in enumerate(text):
        used += 3 if _CJK.match(ch) else 1
        if used > budget:
            end = i
            break
    cut = text[:end]
    space = cut.rfind(" ")
    return cut[:space] if space > end * 0.7 else cut


def head_and_tail(text: str, head: int, tail: int) -> str:
    """``text`` when it weighs at most ``head + tail``, else its first ``head`` and last ``tail``
    (at word boundaries when near) joined by " … "."""
    if weight(text) <= head + tail:
        return text
    return cap(text, head) + " … " + cap(text[::-1], tail)[::-1].strip()


def opening(text: str, budget: int) -> str:
    """The first ``budget`` of ``text`` without its fenced code blocks (all of it when it is only code)."""
    prose = _SPACE.sub(" ", FENCED.sub(" ", text)).strip()
    return cap(prose or _SPACE.sub(" ", text).strip(), budget)


def summary_text(request: str, summary: str, reply: str) -> str:
    """What the 'summary' vector sees."""
    gist = opening(summary or reply, GIST_BUDGET)
    return (head_and_tail(request.strip(), REQUEST_HEAD, REQUEST_TAIL) + "\n" + gist).strip()


def _short_path(p: str) -> str:
    parts = p.strip().split("/")
    return "/".join(parts[-3:]) if len(parts) > 3 else p.strip()


def _target(raw: str) -> str:
    """What one call touched: a known field of its JSON input, else its input's first line."""
    raw = raw.strip()
    try:
        doc = json.loads(raw) if raw.startswith("{") else None
    except ValueError:
        doc = None
    if isinstance(doc, dict):
        for k in _KEYS:
            v = doc.get(k)
            if isinstance(v, str) and v.strip():
                v = v.strip().splitlines()[0]
                return _short_path(v) if k.endswith("path") else v
        raw = " ".join(f"{k}={v}" for k, v in doc.items() if isinstance(v, str | int | float))
    return raw.splitlines()[0] if raw else ""


def error_line(output: str) -> str:
    """The first line of ``output`` that names an error (the most specific one of a traceback)."""
    found = [m.group(0).strip() for m in _ERROR_LINE.finditer(output[:20000])]
    for line in found:
        if not line.startswith("Traceback"):
            return line
    return found[0] if found else ""


def actions_text(calls: list[dict[str, Any]]) -> str:
    """What the 'actions' vector sees: per call its name, target and first error line."""
    lines: list[str] = []
    for c in calls:
        name = str(c.get("name") or "").strip()
        target = cap(_SPACE.sub(" ", _target(str(c.get("input") or ""))), TARGET_BUDGET)
        line = f"{name}: {target}".strip(": ")
        err = cap(error_line(str(c.get("output") or "")), ERROR_BUDGET)
        if err:
            line += " → " + err
        elif c.get("is_error"):
            line += " [error]"
        if line and line not in lines:
            lines.append(line)
    # whole lines while they fit (a call cut in half says less than the next whole one)
    kept: list[str] = []
    used = 0
    for line in lines:
        w = weight(line) + 1
        if used + w <= ACTIONS_BUDGET:
            kept.append(line)
            used += w
    return "\n".join(kept) if kept else cap(lines[0], ACTIONS_BUDGET) if lines else ""


def actions_from_row(actions_json: str, actions: str) -> str:
    """:func:`actions_text` of a stored turn: its tool calls, or, when they are not stored as
    JSON, the start of its rendered actions and their first error line."""
    try:
        calls = json.loads(actions_json or "[]")
    except ValueError:
        calls = None
    if isinstance(calls, list) and calls and all(isinstance(c, dict) for c in calls):
        return actions_text(calls)
    if not actions.strip():
        return ""
    err = cap(error_line(actions), ERROR_BUDGET)
    head = cap(_SPACE.sub(" ", actions).strip(), ACTIONS_BUDGET - weight(err) - 1)
    return (head + "\n" + err).strip() if err and err not in head else head

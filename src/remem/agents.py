"""Canonical agent ids and the aliases accepted on input."""

from __future__ import annotations

import re

CANONICAL = ("claude-code", "codex", "cursor", "opencode", "openclaw", "hermes", "gemini",
             "workbuddy", "pi", "qwenwork")

_ALIASES = {
    "claude": "claude-code", "claudecode": "claude-code", "claude-code-cli": "claude-code",
    "codex-cli": "codex", "openai-codex": "codex",
    "gemini-cli": "gemini", "geminicli": "gemini",
    "open-code": "opencode", "open-claw": "openclaw",
    "hermes-agent": "hermes", "work-buddy": "workbuddy", "qwen-work": "qwenwork",
    "pi-agent": "pi",
}

_ID_RE = re.compile(r"^[a-z0-9][a-z0-9._:-]{0,63}$")


def canonical_agent(name: str) -> str:
    """Map any accepted spelling (``claude_code``, ``Claude Code``) to the canonical id.

    Unknown names become a custom agent id (lower case, spaces and underscores as hyphens).
    Raises ValueError for an empty or unusable name.
    """
    raw = (name or "").strip().lower()
    norm = re.sub(r"[\s_]+", "-", raw)
    if not norm:
        raise ValueError("agent name is empty")
    if norm in CANONICAL:
        return norm
    if norm in _ALIASES:
        return _ALIASES[norm]
    squashed = norm.replace("-", "")
    for cid in CANONICAL:
        if cid.replace("-", "") == squashed:
            return cid
    if squashed in _ALIASES:
        return _ALIASES[squashed]
    if not _ID_RE.match(norm):
        raise ValueError(f"invalid agent name: {name!r}")
    return norm

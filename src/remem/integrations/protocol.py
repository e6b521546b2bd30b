"""Answer a hook in the calling agent's own protocol (pure functions).

- Claude Code, Codex, Gemini CLI: ``{"hookSpecificOutput": {"hookEventName": E, "additionalContext": T}}``
  on session start, turn start and after a tool (FORMATS.md §1.4, §2.4, §7). Nothing to add →
  empty stdout, which every agent reads as "go on".
- Cursor: ``beforeSubmitPrompt`` must answer ``{"continue": true}``; it cannot add context, so a
  ``/remem-resume`` list is shown to the user through ``user_message`` instead (§3.4).
- Plugins (OpenCode, OpenClaw, Hermes) and anything else: ``{"context": T}``, read by the plugin.
"""

from __future__ import annotations

import json
from typing import Any

from .events import Event, event_key, native_name

JSON_CONTEXT_AGENTS = ("claude-code", "codex", "gemini")
CONTEXT_KINDS = ("session_start", "turn_start", "tool_after")
# agents whose post-tool hook can add context for the model (Claude Code PostToolUse, Codex PostToolUse
# and Gemini AfterTool hookSpecificOutput.additionalContext; the OpenCode plugin appends it to the
# tool's output in tool.execute.after); the others get a repair packet at the next turn start
TOOL_CONTEXT_AGENTS = ("claude-code", "codex", "gemini", "opencode")


def tool_context(agent: str) -> bool:
    """Whether ``agent``'s answer to a tool event reaches the model."""
    return agent in TOOL_CONTEXT_AGENTS


def answer(ev: Event, context: str, *, extra: dict[str, Any] | None = None) -> str:
    """The stdout text for ``ev`` given the ``context`` to inject ("" = none)."""
    if ev.agent == "cursor":
        if ev.kind == "turn_start":
            out: dict[str, Any] = {"continue": True}
            if context and (extra or {}).get("show_user"):
                out = {"continue": False, "user_message": context}
            return json.dumps(out, ensure_ascii=False)
        return ""
    if ev.agent in JSON_CONTEXT_AGENTS:
        if not context or ev.kind not in CONTEXT_KINDS:
            return ""
        # Claude Code checks the name against the event it ran: a failed call's is PostToolUseFailure
        name = "PostToolUseFailure" if event_key(ev.name) == "posttoolusefailure" else native_name(ev.kind, ev.agent)
        return json.dumps({"hookSpecificOutput": {"hookEventName": name, "additionalContext": context}},
                          ensure_ascii=False)
    if ev.kind == "op":
        return json.dumps(extra or {}, ensure_ascii=False, default=str)
    if not context and not extra:
        return ""
    return json.dumps({"context": context, **(extra or {})}, ensure_ascii=False, default=str)

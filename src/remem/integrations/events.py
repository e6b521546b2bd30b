"""One event type for every agent's hook payload (pure functions, stdlib only).

Each agent names its events differently (``UserPromptSubmit``, ``BeforeAgent``,
``beforeSubmitPrompt`` …) and puts the session, working directory and prompt under different
keys. :func:`normalize` maps ``(agent, event name, stdin JSON)`` to one :class:`Event` whose
``kind`` is one of :data:`KINDS`. Unknown events become ``kind="ignore"``; nothing here raises
on a missing or mistyped field.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ..model import ToolCall

KINDS = ("session_start", "turn_start", "response", "tool_before", "tool_after", "turn_end",
         "compact", "session_end", "op", "ignore")

# agent-neutral spelling of an event name: lower case, no separators
_EVENT_KINDS = {
    "sessionstart": "session_start",
    "userpromptsubmit": "turn_start", "beforeagent": "turn_start", "beforesubmitprompt": "turn_start",
    "turnstart": "turn_start", "chatmessage": "turn_start", "prefetch": "turn_start",
    "beforepromptbuild": "turn_start",
    "afteragentresponse": "response",
    "pretooluse": "tool_before", "beforetool": "tool_before", "toolexecutebefore": "tool_before",
    "posttooluse": "tool_after", "aftertool": "tool_after", "posttoolusefailure": "tool_after",
    "toolexecuteafter": "tool_after",
    "stop": "turn_end", "afteragent": "turn_end", "stopfailure": "turn_end", "turnend": "turn_end",
    "sessionidle": "turn_end", "agentend": "turn_end", "syncturn": "turn_end",
    "precompact": "compact", "precompress": "compact",
    "sessionend": "session_end",
    "search": "op", "get": "op", "add": "op", "resume": "op",
}

# the name each agent's own protocol expects back in hookSpecificOutput.hookEventName
NATIVE_NAMES: dict[str, str | dict[str, str]] = {
    "session_start": "SessionStart",
    "turn_start": {"gemini": "BeforeAgent", "default": "UserPromptSubmit"},
    "tool_after": {"gemini": "AfterTool", "default": "PostToolUse"},
}

_HOOK_CONTEXT = re.compile(r"<hook_context>.*?</hook_context>\s*", re.S)
_EXIT_CODE = re.compile(r"(?:exit(?:ed)?(?: with)? code|exit status|Exit Code:)\s*(-?\d+)", re.I)


@dataclass(slots=True)
class Event:
    """A hook call, agent-neutral. ``raw`` keeps the payload for anything not lifted out."""

    agent: str
    kind: str
    name: str                     # the event name as the agent sent it
    session_id: str = ""
    cwd: str = ""
    prompt: str = ""
    reply: str = ""
    status: str = ""              # succeeded | failed | cancelled ("" = unknown yet)
    transcript_path: str = ""
    turn_id: str = ""
    model: str = ""
    source: str = ""              # session start: startup | resume | clear | compact
    tool: ToolCall | None = None
    tools: list[ToolCall] = field(default_factory=list)   # a whole trajectory (plugins send one)
    op: str = ""
    args: dict[str, Any] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict)


def event_key(name: str) -> str:
    return re.sub(r"[^a-z]", "", (name or "").lower())


def event_kind(name: str) -> str:
    return _EVENT_KINDS.get(event_key(name), "ignore")


def native_name(kind: str, agent: str) -> str:
    got = NATIVE_NAMES.get(kind, "")
    if isinstance(got, dict):
        return str(got.get(agent, got["default"]))
    return str(got)


def _s(value: Any) -> str:
    """A payload value as text: strings as is, None as "", anything else as compact JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float, bool)):
        return str(value)
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return str(value)


def clean_prompt(text: str) -> str:
    """The request as the user typed it: Gemini prefixes SessionStart context as <hook_context>."""
    return _HOOK_CONTEXT.sub("", text or "").strip()


def tool_failed(response: Any) -> bool:
    """Best-effort error flag for a tool result in any agent's shape."""
    if isinstance(response, dict):
        for key in ("is_error", "isError", "error"):
            v = response.get(key)
            if v:
                return True
        if response.get("interrupted") is True:
            return True
        for key in ("exit_code", "exitCode", "returncode", "code"):
            v = response.get(key)
            if isinstance(v, int) and not isinstance(v, bool) and v != 0:
                return True
        if response.get("success") is False:
            return True
        text = _s(response.get("llmContent") or response.get("output") or "")
        return _nonzero_exit(text)
    if isinstance(response, str):
        return _nonzero_exit(response) or response.lstrip().startswith(("Error:", "error:"))
    return False


def _nonzero_exit(text: str) -> bool:
    m = _EXIT_CODE.search(text or "")
    return bool(m and m.group(1) != "0")


def tool_output(response: Any) -> str:
    if isinstance(response, dict):
        if "stdout" in response or "stderr" in response:
            parts = [_s(response.get("stdout")), _s(response.get("stderr"))]
            return "\n".join(p for p in parts if p)
        for key in ("llmContent", "output", "content", "result", "returnDisplay"):
            if key in response:
                return _s(response[key])
    return _s(response)


def _cwd(agent: str, p: dict[str, Any]) -> str:
    cwd = p.get("cwd") or p.get("directory") or p.get("project") or ""
    if not cwd and isinstance(p.get("workspace_roots"), list) and p["workspace_roots"]:
        cwd = p["workspace_roots"][0]
    return _s(cwd)


def normalize(agent: str, name: str, payload: Any) -> Event:
    """Map one hook call to an :class:`Event`. ``payload`` is the parsed stdin (any JSON value)."""
    p: dict[str, Any] = payload if isinstance(payload, dict) else {}
    kind = event_kind(name)
    if name in ("search", "get", "add", "resume"):
        return Event(agent=agent, kind="op", name=name, op=name, args=p, session_id=_s(p.get("session_id")),
                     cwd=_cwd(agent, p), raw=p)
    ev = Event(
        agent=agent, kind=kind, name=name,
        session_id=_s(p.get("session_id") or p.get("sessionID") or p.get("conversation_id") or ""),
        cwd=_cwd(agent, p),
        transcript_path=_s(p.get("transcript_path") or ""),
        turn_id=_s(p.get("turn_id") or p.get("prompt_id") or p.get("generation_id") or ""),
        model=_s(p.get("model") or ""),
        source=_s(p.get("source") or p.get("trigger") or ""),
        raw=p,
    )
    if kind == "turn_start":
        ev.prompt = clean_prompt(_s(p.get("prompt") or p.get("query") or p.get("text") or ""))
    elif kind == "response":
        ev.reply = _s(p.get("text") or "")
    elif kind in ("tool_before", "tool_after"):
        resp = p.get("tool_response", p.get("tool_output"))
        failed = event_key(name) == "posttoolusefailure" or (kind == "tool_after" and tool_failed(resp))
        out = tool_output(resp)
        if event_key(name) == "posttoolusefailure" and not out:
            out = _s(p.get("error") or "")
        ev.tool = ToolCall(name=_s(p.get("tool_name") or p.get("tool") or "tool"),
                           input=_s(p.get("tool_input") if "tool_input" in p else p.get("args")),
                           output=out, is_error=failed,
                           call_id=_s(p.get("tool_use_id") or p.get("callID") or p.get("call_id") or ""))
    elif kind == "turn_end":
        ev.reply = _s(p.get("last_assistant_message") or p.get("prompt_response") or p.get("reply") or "")
        ev.prompt = clean_prompt(_s(p.get("prompt") or ""))
        ev.status = _status(name, p)
        ev.tools = [ToolCall.from_dict(t) for t in p.get("tools") or [] if isinstance(t, dict)]
    return ev


def _status(name: str, p: dict[str, Any]) -> str:
    if event_key(name) == "stopfailure":
        return "failed"
    raw = _s(p.get("status") or "").lower()
    if raw in ("succeeded", "failed", "cancelled"):
        return raw
    if raw in ("completed", "complete", "success", "ok", "done"):
        return "succeeded"
    if raw in ("aborted", "cancelled", "canceled", "interrupted"):
        return "cancelled"
    if raw in ("error", "failure", "errored"):
        return "failed"
    if p.get("error"):
        return "failed"
    return ""

"""Generic chat JSONL: WorkBuddy, Pi, qwenwork and custom agents.

None of these has a verified schema, so one tolerant line recogniser handles the shapes
seen across agents (each line one JSON object):

* Claude-Code-like envelopes: ``{type: "user"|"assistant", uuid, sessionId, timestamp, cwd,
  isSidechain, message: {role, content, model}}`` with ``tool_use``/``tool_result`` blocks;
* Pi/OpenClaw-style entries: ``{type: "session", id, cwd}`` then ``{type: "message", id,
  timestamp, message: {role: user|assistant|toolResult, content: [text|thinking|toolCall]}}``;
* plain chat lines: ``{role, content, timestamp}`` with OpenAI-style ``tool_calls`` and
  ``{role: "tool", tool_call_id, content}`` results.

Session id: the record's ``sessionId``/``session_id``, else a ``session`` line's id, else the
file stem. Source id: the record's ``uuid``/``id``, else ``<session>@<byte offset>``; a
repeated id is dropped. User texts are classified like Claude Code's (meta, slash commands,
interrupts and ``<system-reminder>`` blocks are not prompts). Assistant lines that share an
API message id are kept as separate messages (turn assembly joins them). Lines without a
usable timestamp are counted and skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from remem.agents import canonical_agent
from remem.model import Message, ToolCall

from .base import (
    ParseStats,
    Unit,
    as_dict,
    as_text,
    content_text,
    existing_dirs,
    file_unit,
    glob_paths,
    home_dir,
    iter_jsonl,
    parse_ts,
    register_source,
)
from .claude_code import prompt_kind, strip_injected

_ROLES = {
    "user": "user", "human": "user",
    "assistant": "assistant", "ai": "assistant", "model": "assistant", "gemini": "assistant", "bot": "assistant",
    "tool": "tool", "toolresult": "tool", "tool_result": "tool", "function": "tool",
    "system": "system", "developer": "system",
}
_IGNORED_TYPES = frozenset({
    "summary", "file-history-snapshot", "system", "queue-operation", "progress", "model_change",
    "thinking_level_change", "compaction", "branch_summary", "label", "custom", "custom_message",
    "session_info", "meta", "title", "tag",
})
_SESSION_TYPES = frozenset({"session", "session_meta", "session_start", "metadata"})

#: extra rule for an agent's user texts: returns a kind ("harness", …) when it is not a prompt
Classifier = Callable[[str], str]


class ChatLineParser:
    """Turns chat JSONL records into messages, keeping session id, cwd and model state."""

    def __init__(self, session_id: str, *, classify: Classifier | None = None) -> None:
        self.session_id = session_id
        self.cwd = ""
        self.model = ""
        self.classify = classify
        self.seen: set[str] = set()

    def parse(self, offset: int, rec: dict[str, Any], stats: ParseStats, where: str = "") -> Message | None:
        rtype = str(rec.get("type") or "")
        role_raw = rec.get("role")
        if rtype in _SESSION_TYPES or role_raw in _SESSION_TYPES:
            self.session_id = str(rec.get("id") or rec.get("session_id") or rec.get("sessionId") or self.session_id)
            self.cwd = str(rec.get("cwd") or self.cwd)
            self.model = str(rec.get("model") or self.model)
            stats.ignore("session")
            return None
        inner = rec.get("message")
        if isinstance(inner, dict):
            role_raw = inner.get("role") or rtype
        elif role_raw is not None:
            inner = rec
        elif rtype in _IGNORED_TYPES:
            stats.ignore(rtype)
            return None
        else:
            stats.unknown_type(rtype or None)
            return None
        role = _ROLES.get(str(role_raw).lower().replace("-", "_"))
        if role is None:
            stats.unknown_type(role_raw, "role")
            return None
        ts = (parse_ts(rec.get("timestamp")) or parse_ts(inner.get("timestamp"))
              or parse_ts(rec.get("created_at")) or parse_ts(rec.get("ts")))
        if ts is None:
            stats.error("missing timestamp", where)
            return None
        session = str(rec.get("sessionId") or rec.get("session_id") or self.session_id)
        sid = str(rec.get("uuid") or rec.get("id") or "") or f"{session}@{offset}"
        if sid in self.seen:
            stats.ignore("duplicate id")
            return None
        self.seen.add(sid)
        m = Message(source_id=sid, session_id=session, role=role, ts=ts,
                    cwd=str(rec.get("cwd") or self.cwd), sidechain=bool(rec.get("isSidechain")))
        if role == "assistant":
            m.model = str(inner.get("model") or rec.get("model") or self.model)
            if m.model == "<synthetic>":
                stats.ignore("synthetic assistant")
                return None
        self._content(m, rec, inner)
        return m

    def _content(self, m: Message, rec: dict[str, Any], inner: dict[str, Any]) -> None:
        content = inner.get("content")
        images: list[str] = []
        texts: list[str] = []
        blocks = content if isinstance(content, list) else []
        for b in blocks:
            if not isinstance(b, dict):
                if isinstance(b, str):
                    texts.append(b)
                continue
            btype = b.get("type")
            if btype in ("tool_use", "toolCall", "tool_call", "function_call"):
                m.tool_calls.append(ToolCall(
                    name=str(b.get("name") or ""), input=as_text(b.get("input", b.get("arguments"))),
                    call_id=str(b.get("id") or b.get("call_id") or "")))
            elif btype == "tool_result":
                out = content_text(b.get("content"), images=[])
                m.tool_results[str(b.get("tool_use_id") or "")] = (out, bool(b.get("is_error")))
            else:
                t = content_text([b], images=images)
                if t:
                    texts.append(t)
        text = content if isinstance(content, str) else "\n\n".join(texts)
        for call in inner.get("tool_calls") or []:     # OpenAI style
            if isinstance(call, dict):
                fn = as_dict(call.get("function")) or call
                m.tool_calls.append(ToolCall(name=str(fn.get("name") or ""), input=as_text(fn.get("arguments")),
                                             call_id=str(call.get("id") or "")))
        call_id = inner.get("tool_call_id") or inner.get("toolCallId")
        if m.role == "tool" and call_id:
            is_error = bool(inner.get("isError") or inner.get("is_error"))
            m.tool_results[str(call_id)] = ("\n".join([text, *images]) if images else text, is_error)
            text = ""
        if m.tool_results:
            m.role = "tool"
            m.extra["kind"] = "tool_result"
            return
        if m.role == "assistant":
            m.text = text.strip()
            stop = str(inner.get("stopReason") or inner.get("stop_reason") or inner.get("finish_reason") or "")
            if stop == "error" or inner.get("errorMessage"):
                m.status = "failed"
            elif stop in ("aborted", "cancelled"):
                m.status = "cancelled"
            return
        if m.role != "user":
            m.text = text.strip()
            return
        text = strip_injected(text)
        kind = prompt_kind(rec, text) or (self.classify(text) if self.classify and text else "")
        if kind == "interrupt":
            m.status = "cancelled"
        if kind:
            m.extra["kind"] = kind
            if self.classify is not None and kind == self.classify(text):
                m.extra["barrier"] = True       # the agent's own harness prompt: not part of a turn
        if not text and images:
            m.extra["kind"] = kind or "attachment"
            m.text = "\n".join(images)
            return
        m.text = "\n".join([text, *images]) if images else text
        m.real_user = not kind


def iter_chat_jsonl(path: Path, stats: ParseStats, *, session_id: str = "",
                    classify: Classifier | None = None) -> Iterator[Message]:
    """Stream one chat JSONL file as messages (see the module docstring for the shapes)."""
    parser = ChatLineParser(session_id or path.stem, classify=classify)
    for offset, rec in iter_jsonl(path, stats):
        m = parser.parse(offset, rec, stats, f"{path}@{offset}")
        if m is not None:
            stats.messages += 1
            yield m


class JsonlChatSource:
    """A chat-JSONL source rooted at fixed places under HOME (or an absolute directory)."""

    format = "chat-jsonl"

    def __init__(self, agent: str, roots: tuple[str, ...], pattern: str = "*/*.jsonl", *,
                 env_var: str = "", classify: Classifier | None = None) -> None:
        self.agent = canonical_agent(agent)
        self.roots = roots          # relative to HOME, or absolute
        self.pattern = pattern
        self.env_var = env_var      # optional variable naming the root directly
        self.classify = classify

    def discover(self, env: Mapping[str, str]) -> list[Path]:
        home = home_dir(env)
        candidates = []
        if self.env_var and (env.get(self.env_var) or "").strip():
            candidates.append(Path(env[self.env_var].strip()))
        for r in self.roots:
            p = Path(r)
            if r.startswith("~/"):
                p = home / r[2:]
            elif not p.is_absolute():
                p = home / r
            candidates.append(p)
        return existing_dirs(candidates)

    def list_units(self, root: Path, stats: ParseStats | None = None) -> list[Unit]:
        units = []
        for p in glob_paths(root, self.pattern, stats):
            if p.is_file() and ".deleted." not in p.name:
                u = file_unit(self.agent, p, session_id=p.stem)
                if u is not None:
                    units.append(u)
        return units

    def read(self, unit: Unit, stats: ParseStats | None = None) -> Iterator[Message]:
        stats = stats if stats is not None else ParseStats()
        yield from iter_chat_jsonl(unit.path, stats, session_id=unit.session_id, classify=self.classify)


WORKBUDDY = JsonlChatSource("workbuddy", ("~/.workbuddy/projects",))
PI = JsonlChatSource("pi", ("~/.pi/agent/sessions",), env_var="PI_CODING_AGENT_SESSIONS_DIR")
QWENWORK = JsonlChatSource("qwenwork", ("~/.qwenworkcn/projects",))


def custom_source(name: str, root: str | Path, pattern: str = "**/*.jsonl") -> JsonlChatSource:
    """A chat-JSONL source for an agent added by name (``root`` absolute or ``~/…``)."""
    return JsonlChatSource(name, (str(root),), pattern)


def register_custom(name: str, root: str | Path, pattern: str = "**/*.jsonl", *,
                    replace: bool = False) -> JsonlChatSource:
    """Create and register a custom chat-JSONL source; returns it (ValueError if taken)."""
    src = custom_source(name, root, pattern)
    register_source(src, replace=replace)
    return src

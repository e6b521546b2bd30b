"""Read the lines an agent appended to its transcript since the last processed offset.

At turn start the hook remembers the transcript's size; at turn end it reads only what came
after, so one turn's tool calls, their results and the final reply are recovered even when the
hook payload carries none of them. Claude Code, Codex and Gemini CLI JSONL are understood
(FORMATS.md §1.2, §2.2, §7). A partial last line (still being written) is left for later.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..model import ToolCall
from .events import _s, tool_failed

MAX_READ = 16 * 1024 * 1024   # one turn's new lines; a larger delta is read from its last 16 MiB
_INTERRUPT = re.compile(r"^\[Request interrupted by user")


@dataclass
class Delta:
    tools: list[ToolCall] = field(default_factory=list)
    reply: str = ""
    status: str = ""
    model: str = ""
    offset: int = 0
    lines: int = 0


def size_of(path: str) -> int:
    try:
        return Path(path).stat().st_size
    except (OSError, ValueError):
        return 0


def read_delta(path: str, offset: int = 0) -> Delta:
    """Parse the complete lines of ``path`` after byte ``offset`` (never raises)."""
    out = Delta(offset=offset)
    if not path:
        return out
    try:
        with open(path, "rb") as f:
            size = f.seek(0, 2)
            if offset > size:          # file was rewritten or truncated: start over
                offset = 0
            start = max(offset, size - MAX_READ)
            f.seek(start)
            data = f.read(size - start)
    except (OSError, ValueError):
        return out
    end = data.rfind(b"\n")
    if end < 0:
        return out
    out.offset = start + end + 1
    records: list[dict[str, Any]] = []
    for line in data[: end + 1].splitlines():
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict):
            records.append(rec)
    out.lines = len(records)
    _Parser(out).run(records)
    return out


class _Parser:
    def __init__(self, out: Delta) -> None:
        self.out = out
        self.calls: dict[str, ToolCall] = {}
        self.gemini: dict[str, dict[str, Any]] = {}   # Gemini upserts records by id: last wins

    def run(self, records: list[dict[str, Any]]) -> None:
        for rec in records:
            t = rec.get("type")
            if t in ("user", "assistant") and isinstance(rec.get("message"), dict):
                self._claude(rec)
            elif t in ("response_item", "event_msg"):
                self._codex(rec)
            elif t in ("gemini", "user") and "id" in rec:
                self.gemini[str(rec["id"])] = rec
        for rec in self.gemini.values():
            self._gemini(rec)
        self.out.tools = list(self.calls.values())

    def _add(self, call_id: str, name: str, inp: Any) -> None:
        key = call_id or f"_{len(self.calls)}"
        self.calls[key] = ToolCall(name=name or "tool", input=_s(inp), call_id=call_id)

    def _result(self, call_id: str, output: str, is_error: bool) -> None:
        tc = self.calls.get(call_id)
        if tc is None:
            tc = self.calls[call_id or f"_{len(self.calls)}"] = ToolCall(name="tool", call_id=call_id)
        tc.output = output
        tc.is_error = is_error

    # Claude Code: assistant content[] tool_use / text; user content[] tool_result
    def _claude(self, rec: dict[str, Any]) -> None:
        if rec.get("isSidechain"):
            return
        msg = rec["message"]
        content = msg.get("content")
        if rec["type"] == "assistant":
            if msg.get("model") and msg["model"] != "<synthetic>":
                self.out.model = msg["model"]
            texts = []
            for block in content if isinstance(content, list) else []:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "tool_use":
                    self._add(_s(block.get("id")), _s(block.get("name")), block.get("input"))
                elif block.get("type") == "text" and _s(block.get("text")).strip():
                    texts.append(_s(block["text"]))
            if texts:
                self.out.reply = "\n".join(texts)
        else:
            if isinstance(content, str):
                if _INTERRUPT.match(content):
                    self.out.status = "cancelled"
                return
            for block in content if isinstance(content, list) else []:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "tool_result":
                    self._result(_s(block.get("tool_use_id")), _block_text(block.get("content")),
                                 bool(block.get("is_error")))
                elif block.get("type") == "text" and _INTERRUPT.match(_s(block.get("text"))):
                    self.out.status = "cancelled"

    # Codex: response_item function_call(_output) / custom_tool_call(_output) / message
    def _codex(self, rec: dict[str, Any]) -> None:
        p = rec.get("payload")
        if not isinstance(p, dict):
            return
        pt = p.get("type")
        if rec["type"] == "event_msg":
            if pt == "turn_aborted":
                self.out.status = "cancelled"
            elif pt == "task_complete" and _s(p.get("last_agent_message")).strip():
                self.out.reply = _s(p["last_agent_message"])
            return
        if pt in ("function_call", "custom_tool_call", "local_shell_call"):
            args = p.get("arguments", p.get("input", p.get("action")))
            if isinstance(args, str):
                try:
                    args = json.loads(args)
                except ValueError:
                    pass
            self._add(_s(p.get("call_id")), _s(p.get("name") or pt), args)
        elif pt in ("function_call_output", "custom_tool_call_output"):
            raw = p.get("output")
            if isinstance(raw, dict):
                text = _s(raw.get("content") or raw.get("output") or raw)
                failed = raw.get("success") is False or tool_failed(text)
            else:
                text = _s(raw)
                failed = tool_failed(text)
            self._result(_s(p.get("call_id")), text, failed)
        elif pt == "message" and p.get("role") == "assistant":
            texts = [_s(c.get("text")) for c in p.get("content") or [] if isinstance(c, dict)
                     and c.get("type") in ("output_text", "text")]
            text = "\n".join(t for t in texts if t.strip())
            if text:
                self.out.reply = text

    # Gemini CLI: gemini records with toolCalls[] and content
    def _gemini(self, rec: dict[str, Any]) -> None:
        if rec.get("type") != "gemini":
            return
        if rec.get("model"):
            self.out.model = _s(rec["model"])
        for call in rec.get("toolCalls") or []:
            if not isinstance(call, dict):
                continue
            cid = _s(call.get("id"))
            self._add(cid, _s(call.get("name")), call.get("args"))
            result = _gemini_result(call.get("result"))
            self._result(cid, result, _s(call.get("status")).lower() in ("error", "cancelled")
                         or tool_failed(result))
        text = _block_text(rec.get("content"))
        if text.strip():
            self.out.reply = text


def _block_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for c in content:
            if isinstance(c, dict):
                if isinstance(c.get("text"), str):
                    parts.append(c["text"])
            elif isinstance(c, str):
                parts.append(c)
        return "\n".join(parts)
    return _s(content)


def _gemini_result(result: Any) -> str:
    parts = []
    for r in result if isinstance(result, list) else [result]:
        if isinstance(r, dict) and isinstance(r.get("functionResponse"), dict):
            resp = r["functionResponse"].get("response")
            parts.append(_s(resp.get("output") if isinstance(resp, dict) and "output" in resp else resp))
        elif r is not None:
            parts.append(_s(r))
    return "\n".join(parts)

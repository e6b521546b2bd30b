"""Plain value types shared by every layer: what a source yields and what the pipeline writes.

Kept dependency-free (stdlib only) so the hook runtime can import it cheaply.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ROLES = ("user", "assistant", "tool", "system")
STATUSES = ("succeeded", "failed", "cancelled")


@dataclass(slots=True)
class ToolCall:
    """One tool use inside a turn: name, input, output (shortened per call), error flag."""

    name: str
    input: str = ""
    output: str = ""
    is_error: bool = False
    call_id: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "input": self.input, "output": self.output,
                "is_error": self.is_error, "call_id": self.call_id}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ToolCall:
        return cls(name=str(d.get("name", "")), input=str(d.get("input", "")),
                   output=str(d.get("output", "")), is_error=bool(d.get("is_error", False)),
                   call_id=str(d.get("call_id", "")))


@dataclass(slots=True)
class Message:
    """One normalized raw record read from a source.

    ``source_id`` is stable within its source (a uuid, a message id, a row id) so that a
    re-read yields the same id. ``ts`` is epoch seconds (None when the record has none).
    ``real_user`` is True only for user messages a human typed (not injected context, meta
    records, compaction summaries, slash-command wrappers or tool results).
    """

    source_id: str
    session_id: str
    role: str
    text: str = ""
    ts: float | None = None
    real_user: bool = False
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_results: dict[str, tuple[str, bool]] = field(default_factory=dict)  # call_id -> (output, is_error)
    cwd: str = ""
    model: str = ""
    status: str = ""          # "failed"/"cancelled" when the record says so
    sidechain: bool = False   # sub-agent work, folded into the parent's turn
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class TurnIn:
    """A write request for one L1 memory (one complete turn).

    ``source_key`` identifies the turn stably across re-imports (e.g. agent + session + id of the
    opening user message). When empty the pipeline derives one from the content.
    """

    request: str
    reply: str = ""
    actions: list[ToolCall] = field(default_factory=list)
    owner: str = "default"
    agent: str = "unknown"
    project: str = ""
    session_id: str = ""
    source_key: str = ""
    source_name: str = ""
    status: str = "succeeded"
    started_at: float | None = None
    ended_at: float | None = None
    model: str = ""
    message_ids: list[str] = field(default_factory=list)
    importance: float = 0.5
    tags: list[str] = field(default_factory=list)
    summary: str = ""
    kind: str = "turn"

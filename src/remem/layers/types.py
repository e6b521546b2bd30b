"""Plain inputs and outputs of the learning layer (stdlib only).

The lead feeds ``Turn`` values from the store (one L1 turn each); the extractors turn them into
``Observation`` values; the lifecycle folds observations into ``Memory`` values. Nothing here does I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

KINDS = ("preference", "convention", "correction", "decision", "procedure", "fact", "working_state", "skill")
STATUSES = ("candidate", "active", "superseded", "archived", "rejected", "deleted")
L3_KINDS = ("fact",)


@dataclass(slots=True)
class Action:
    """One tool call of a turn. ``tool`` is "shell", "edit", "read", "search" or the agent's own name.

    ``command`` is the shell command (for shell calls), ``path`` the file an edit or read touched,
    ``status`` "ok" / "failed" / "" (unknown: the learner then judges the output).
    """

    tool: str
    command: str = ""
    path: str = ""
    output: str = ""
    status: str = ""


@dataclass(slots=True)
class Turn:
    """One complete turn: the user's request, the assistant's reply, its tool calls.

    ``id`` is the stable turn id the learned memories cite; ``index`` the 1-based position in
    its session; ``ts`` epoch seconds (None when unknown: then the input order is the time order).
    """

    id: str
    session: str
    request: str
    reply: str = ""
    actions: list[Action] = field(default_factory=list)
    project: str = ""
    ts: float | None = None
    index: int = 0


@dataclass(slots=True)
class Evidence:
    """Where a memory comes from: the turn it cites and how strongly that turn says it."""

    turn_id: str
    session: str
    ts: float | None = None
    source: str = "user"          # "user" (said by the user) | "inferred" (from the agent's actions)
    explicit: bool = False        # a generaliser ("always", 以后) or memory cue ("remember", 记住)
    polarity: int = 1             # +1 holds, -1 contradicts (a correction against the memory)


@dataclass(slots=True)
class Observation:
    """What one extractor saw in one turn: a candidate statement with its identity.

    ``key`` identifies the same memory across turns (a slot such as ``cmd.test``, or a rule's
    normalized anchor words); ``slot``/``value`` are set when the memory fills a slot, so that a
    new value contradicts the old one.
    """

    kind: str
    key: str
    text: str
    evidence: Evidence
    project: str = ""
    slot: str = ""
    value: str = ""
    polarity: int = 1             # +1 "use X", -1 "do not use X"
    terms: frozenset[str] = frozenset()
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Memory:
    """A learned memory (L2 rule / procedure or L3 fact) with its evidence and lifecycle state."""

    id: str
    kind: str
    key: str
    text: str
    project: str = ""
    layer: str = "L2"
    status: str = "candidate"
    confidence: float = 0.0
    scope: str = "project"
    slot: str = ""
    value: str = ""
    polarity: int = 1
    terms: frozenset[str] = frozenset()
    evidence: list[Evidence] = field(default_factory=list)
    against: list[Evidence] = field(default_factory=list)
    created_at: float | None = None
    updated_at: float | None = None
    locked: bool = False
    superseded_by: str = ""
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def sessions(self) -> set[str]:
        return {e.session for e in self.evidence}

    @property
    def explicit(self) -> bool:
        return any(e.explicit for e in self.evidence)

    @property
    def from_user(self) -> bool:
        return any(e.source == "user" for e in self.evidence)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "layer": self.layer, "kind": self.kind, "text": self.text,
                "status": self.status, "confidence": round(self.confidence, 3), "scope": self.scope,
                "project": self.project, "slot": self.slot, "value": self.value,
                "evidence": [e.turn_id for e in self.evidence],
                "sessions": sorted(self.sessions), "created_at": self.created_at,
                "updated_at": self.updated_at, "locked": self.locked,
                "superseded_by": self.superseded_by or None, "data": dict(self.data)}

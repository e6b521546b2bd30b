"""Rows the layers above hand to any engine: plain values, no engine types."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class TurnRow:
    """A prepared, redacted turn ready to persist (built by the ingest pipeline)."""

    id: str
    source_key: str
    owner: str
    agent: str
    project: str
    session_id: str
    source_name: str
    kind: str
    request: str
    reply: str
    actions: str
    actions_json: str
    status: str
    started_at: float | None
    ended_at: float | None
    model: str
    size: int
    content_hash: str
    request_hash: str
    summary: str
    tags: str
    error_sigs: str
    importance: float
    cjk: str
    message_ids: list[str]
    live: bool = False        # captured by a hook (may later meet its imported twin)
    time_fixed: bool = False  # the pipeline replaced an implausible time (counted, not stored)

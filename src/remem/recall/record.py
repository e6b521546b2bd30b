"""What a packet record keeps (issue 18, feedback): ids and a hash, never text.

A packet handed to an agent is recorded so that what happens next (the user correcting the agent,
the agent following an injected preference, a thumbs up or down in the viewer) can be joined to
what it contained. The record holds the entry point, the session, the owner and project, a hash of
the prompt (to find the turn it was for; the prompt itself is never stored twice) and the ids of
its items: L1 turn ids and learned memory ids. Stdlib only: this runs on the hook's path.
"""

from __future__ import annotations

import hashlib
from typing import Any


def prompt_hash(prompt: str) -> str:
    """sha1 of the whitespace-normalised prompt (the same for a stored turn's request)."""
    return hashlib.sha1(" ".join((prompt or "").split()).encode("utf-8", "replace")).hexdigest()


def packet_record(packet: dict[str, Any], prompt: str, *, entry: str, owner: str, project: str | None, session: str | None,
                  agent: str | None, now: float) -> dict[str, Any] | None:
    """The row for one packet, or None when it carried nothing (no item: nothing to judge)."""
    items = [i for i in packet.get("items") or () if isinstance(i, dict) and i.get("id")]
    if not items or not packet.get("text"):
        return None
    learned = [str(i["id"]) for i in items if i.get("layer") in ("L2", "L3") or str(i["id"]).startswith("m_")]
    turns = [str(i["id"]) for i in items if str(i["id"]) not in learned]
    return {"owner": owner, "project": project or "", "agent": agent or "", "session_id": session or "",
            "entry": entry, "prompt_hash": prompt_hash(prompt),
            "turn_ids": turns, "learned_ids": learned, "created_at": now}

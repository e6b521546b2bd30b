"""Packets and their feedback over the store (issue 18): the learn job joins each recorded packet
(``store.packets``) to the turn it was for and the user's next message, and the viewer lists recent
packets with their items and takes a thumb up or down on any of them.

A thumb on a learned item is that memory's explicit verdict (good → approve, bad → reject, as
``remem learned good|bad``); a thumb on a past turn is kept on the packet (``votes``) for review. Every
read is scoped: a packet, and the memories and turns it names, are read inside the caller's owners.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..ingest.normalize import InputError
from ..scope import Scope
from . import feedback as fbk
from .types import Turn

if TYPE_CHECKING:
    from ..core import Remem

THUMBS = ("good", "bad")


SESSION_IDLE = 6 * 3600.0     # a session with no new turn for this long is over (an open error: abandoned)
MATCH_WINDOW = 600.0          # a packet's turn started at most this long before the packet was built


def _packet_turn(p: dict[str, Any], seq: list[tuple[dict[str, Any], Turn]]) -> int | None:
    """Which turn of its session a packet was built for: the one whose request has the prompt's hash,
    else the first that started after it (hooks recall before the turn is written). A repair packet
    (its "prompt" is the error) is for the turn it came in: the one open when it was built — a tool
    hook's mid-turn, or the turn a turn start opened with it."""
    from ..recall.record import prompt_hash

    start = float(p["created_at"]) - MATCH_WINDOW
    times = [float(r.get("started_at") or r.get("ended_at") or r.get("created_at") or 0.0) for r, _ in seq]
    if p.get("entry") == "repair":
        for i in range(len(seq) - 1, -1, -1):
            end = float(seq[i][0].get("ended_at") or times[i])
            if times[i] - 5.0 <= float(p["created_at"]) <= end + 5.0:
                return i
    for i, (r, _) in enumerate(seq):
        if times[i] >= start and prompt_hash(r.get("request") or "") == p["prompt_hash"]:
            return i
    for i in range(len(seq)):
        if times[i] >= float(p["created_at"]) - 5.0:
            return i
    return None


def judge_packets(mem: Remem, owner: str, project: str, rows: list[dict[str, Any]], turns: list[Turn],
                  stored: dict[str, dict[str, Any]], now: float
                  ) -> tuple[list[tuple[int, str, str, list[str], float]],
                             dict[str, list[tuple[fbk.Verdict, int, str]]]]:
    """The open packets of one owner's project joined to their turns: (packet id, outcome, turn id,
    the learned ids it carried, its time) to mark judged, and per injected memory of this owner the
    verdicts (with packet and turn)."""
    area = getattr(mem.store, "packets", None)
    if area is None or not mem.config.get("learn.feedback"):
        return [], {}
    pending = area.open(Scope.of([owner], project=project))
    if not pending:
        return [], {}
    by_session: dict[str, list[tuple[dict[str, Any], Turn]]] = {}
    for r, t in zip(rows, turns, strict=True):
        by_session.setdefault(r.get("session_id") or "", []).append((r, t))
    judged: list[tuple[int, str, str, list[str], float]] = []
    verdicts: dict[str, list[tuple[fbk.Verdict, int, str]]] = {}
    for p in pending:
        seq = by_session.get(p["session_id"]) or []
        i = _packet_turn(p, seq) if seq else None
        if i is None:
            if now - float(p["created_at"]) > SESSION_IDLE:
                judged.append((p["id"], "unknown", "", [], float(p["created_at"])))   # its turn never arrived
            continue
        row, turn = seq[i]
        nxt = seq[i + 1][1] if i + 1 < len(seq) else None
        last = max(float(r.get("ended_at") or r.get("started_at") or 0.0) for r, _ in seq)
        over = nxt is None and now - max(last, float(p["created_at"])) > SESSION_IDLE
        result = fbk.turn_outcome(turn, nxt, status=str(row.get("status") or ""), session_over=over)
        if not result:
            continue                                          # wait for the next message
        judged.append((p["id"], result, turn.id, [str(x) for x in p["learned_ids"]], float(p["created_at"])))
        injected = [stored[x] for x in p["learned_ids"] if x in stored]
        for v in fbk.judge(injected, turn, nxt, result):
            verdicts.setdefault(v.memory_id, []).append((v, p["id"], turn.id))
    return judged, verdicts


class PacketNotFound(InputError):
    """No packet with that id in this scope, or no such item in it."""


def _area(mem: Remem) -> Any:
    area = getattr(mem.store, "packets", None)
    if area is None:
        raise PacketNotFound("this store keeps no packet records")
    return area


def _items(mem: Remem, scope: Scope, packets: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each packet with its items resolved inside the scope: learned memories (kind, text, status)
    and turns (their request, shortened); an item gone since (forgotten, dropped) says so."""
    learned_ids = sorted({i for p in packets for i in p["learned_ids"]})
    turn_ids = sorted({i for p in packets for i in p["turn_ids"]})
    area = mem.store.learned  # type: ignore[attr-defined]
    mems = {m["id"]: m for m in area.list(Scope.of(list(scope.owners)), ids=learned_ids)} if learned_ids else {}
    turns = area.turn_requests(scope, turn_ids) if turn_ids else {}
    out = []
    for p in packets:
        items = []
        for i in p["learned_ids"]:
            m = mems.get(i)
            items.append({"id": i, "layer": "learned", "vote": p["votes"].get(i, ""), "gone": m is None
                          or m["decided"] == "forgotten",
                          **({"kind": m["kind"], "text": m["text"], "status": m["status"]}
                             if m is not None and m["decided"] != "forgotten" else {})})
        for i in p["turn_ids"]:
            t = turns.get(i)
            text = " ".join((t["request"] or "").split()) if t else ""
            items.append({"id": i, "layer": "turn", "vote": p["votes"].get(i, ""), "gone": t is None,
                          "text": text if len(text) <= 160 else text[:159] + "…"})
        out.append({k: v for k, v in p.items() if k not in ("learned_ids", "turn_ids", "votes")} | {"items": items})
    return out


def recent(mem: Remem, scope: Scope, *, session: str | None = None, limit: int = 20) -> list[dict[str, Any]]:
    """The newest packets in scope with their items (the viewer's list)."""
    return _items(mem, scope, _area(mem).recent(scope, session=session, limit=limit))


def thumb(mem: Remem, scope: Scope, packet_id: int, item_id: str, verdict: str, note: str = "") -> dict[str, Any]:
    """A thumb up (good) or down (bad) on one item of a packet: kept on the packet, and for a learned
    memory its verdict (``service.feedback``). Returns the packet with its items."""
    from . import service

    if verdict not in THUMBS:
        raise InputError(f"unknown verdict {verdict!r}: good or bad")
    area = _area(mem)
    p = area.get(scope, packet_id)
    if p is None:
        raise PacketNotFound(f"no packet {packet_id} in this scope")
    if item_id not in p["learned_ids"] and item_id not in p["turn_ids"]:
        raise PacketNotFound(f"packet {packet_id} has no item {item_id!r}")
    if item_id in p["learned_ids"]:
        service.feedback(mem, scope, item_id, verdict, note, actor="user")
    with mem.store.transaction():
        area.vote(p["owner"], packet_id, item_id, verdict)
    got = area.get(scope, packet_id)
    return _items(mem, scope, [got])[0]

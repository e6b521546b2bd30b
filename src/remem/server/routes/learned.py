"""Learned memories (issue 16): list, show with quoted evidence, history, the user's decisions, rollback;
and the packets handed to agents with a thumb up or down on their items (issue 18)."""

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Query
from pydantic import BaseModel, Field

from ...core import Remem
from ...layers import packets, service
from .. import deps

router = APIRouter(tags=["learned"])
Mem = Annotated[Remem, Depends(deps.mem)]
Action = Literal["approve", "reject", "archive", "lock", "unlock", "forget"]


class EditBody(BaseModel):
    text: str = Field(min_length=1, max_length=2000)


class FeedbackBody(BaseModel):
    verdict: Literal["good", "bad", "outdated"]
    note: str = Field("", max_length=500)


class ThumbBody(BaseModel):
    item: str = Field(min_length=1, max_length=200)
    verdict: Literal["good", "bad"]
    note: str = Field("", max_length=500)


def _changes(who: deps.Principal, owner: str | None) -> str | list[str] | None:
    """The owners a decision (approve, reject, archive, edit, lock, soft delete, restore, rollback, a
    verdict, a thumb) may touch: what the caller reads — for a user its own and its teams', so a team's
    members curate the team's learned memories; each event names the member (``_actor``)."""
    return deps.owners(who, owner)


def _own(who: deps.Principal, owner: str | None) -> str | list[str] | None:
    """The owners a learn run or a deletion for good may touch: a user's own only (a team's memories
    are learned by its server and deleted for good by its home; a member can soft-delete them)."""
    return deps.owners(who, owner) if who.is_home else deps.own(who, owner)


def _actor(who: deps.Principal) -> str:
    return "user" if who.is_home else str(who.owner)


def _call(fn: Any, *args: Any, **kw: Any) -> Any:
    try:
        return fn(*args, **kw)
    except (service.LearnedNotFound, packets.PacketNotFound) as e:
        raise HTTPException(404, str(e)) from None


@router.get("/packets", summary="The newest packets handed to agents, with their items (ids resolved in scope)")
def list_packets(mem: Mem, who: deps.Who, project: str | None = None, session: str | None = None, owner: str | None = None,
                 limit: int = Query(20, ge=1, le=200)) -> dict[str, Any]:
    scope = mem.scope(deps.owners(who, owner), project=project or None)
    return {"items": _call(packets.recent, mem, scope, session=session or None, limit=limit)}


@router.post("/packets/{packet_id}/feedback", summary="A thumb up or down on one item of a packet")
def thumb_packet(mem: Mem, who: deps.Who, packet_id: Annotated[int, deps.Path(ge=1, le=deps.INT64)], body: ThumbBody,
                 owner: str | None = None) -> dict[str, Any]:
    return _call(packets.thumb, mem, mem.scope(_changes(who, owner)), packet_id,  # type: ignore[no-any-return]
                 body.item, body.verdict, body.note)


@router.get("/learned", summary="Learned memories in scope (status: a lifecycle state, review or all)")
def list_learned(mem: Mem, who: deps.Who, project: str | None = None, status: str = "active", kind: str | None = None,
                 owner: str | None = None, limit: int = Query(500, ge=1, le=5000)) -> dict[str, Any]:
    items = mem.learned(project=project or None, status=status, kind=kind or None, owner=deps.owners(who, owner))
    return {"items": items[:limit], "total": len(items)}


@router.post("/learned/learn", summary="Run the learner now (what `remem learn` does)")
def learn_now(mem: Mem, who: deps.Who, project: str | None = None, rebuild: bool = False, owner: str | None = None
              ) -> dict[str, Any]:
    return mem.learn(project=project or None, rebuild=rebuild, owner=_own(who, owner))


@router.get("/learned/{memory_id}", summary="One learned memory with its evidence turns quoted")
def show_learned(mem: Mem, who: deps.Who, memory_id: str, owner: str | None = None) -> dict[str, Any]:
    return _call(service.show, mem, mem.scope(deps.owners(who, owner)), memory_id)  # type: ignore[no-any-return]


@router.get("/learned/{memory_id}/history", summary="Every change of one learned memory, oldest first")
def learned_history(mem: Mem, who: deps.Who, memory_id: str, owner: str | None = None) -> dict[str, Any]:
    return {"events": _call(service.history, mem, mem.scope(deps.owners(who, owner)), memory_id)}


@router.post("/learned/{memory_id}/edit", summary="Rewrite a learned memory's text (locks it)")
def edit_learned(mem: Mem, who: deps.Who, memory_id: str, body: EditBody, owner: str | None = None) -> dict[str, Any]:
    return _call(service.act, mem, mem.scope(_changes(who, owner)), memory_id,  # type: ignore[no-any-return]
                 "edit", text=body.text, actor=_actor(who))


@router.post("/learned/{memory_id}/feedback", summary="A verdict: good → approve, bad → reject, outdated → archive")
def feedback_learned(mem: Mem, who: deps.Who, memory_id: str, body: FeedbackBody, owner: str | None = None) -> dict[str, Any]:
    return _call(service.feedback, mem, mem.scope(_changes(who, owner)), memory_id,  # type: ignore[no-any-return]
                 body.verdict, body.note, actor=_actor(who))


@router.post("/learned/{memory_id}/delete", summary="Delete a learned memory: soft (restorable for "
             "learn.retention.deleted_days) or, with hard=true, for good (never learned again)")
def delete_learned(mem: Mem, who: deps.Who, memory_id: str, hard: bool = False,
                   owner: str | None = None) -> dict[str, Any]:
    scope = mem.scope(_own(who, owner) if hard else _changes(who, owner))
    return _call(service.delete, mem, scope, memory_id, hard=hard, actor=_actor(who))  # type: ignore[no-any-return]


@router.post("/learned/{memory_id}/restore", summary="Undo a soft delete (within learn.retention.deleted_days) "
             "or an archive (the memory is approved: decay leaves it be)")
def restore_learned(mem: Mem, who: deps.Who, memory_id: str, owner: str | None = None) -> dict[str, Any]:
    return _call(service.act, mem, mem.scope(_changes(who, owner)), memory_id,  # type: ignore[no-any-return]
                 "restore", actor=_actor(who))


@router.post("/learned/events/{event_id}/rollback", summary="Put a memory back as it was before this event")
def rollback_learned(mem: Mem, who: deps.Who, event_id: Annotated[int, deps.Path(ge=1, le=deps.INT64)],
                     owner: str | None = None) -> dict[str, Any]:
    return _call(service.rollback, mem, mem.scope(_changes(who, owner)), event_id,  # type: ignore[no-any-return]
                 actor=_actor(who))


@router.post("/learned/{memory_id}/{action}", summary="approve, reject, archive, lock, unlock or forget")
def decide_learned(mem: Mem, who: deps.Who, memory_id: str, action: Action, owner: str | None = None) -> dict[str, Any]:
    scope = mem.scope(_own(who, owner) if action == "forget" else _changes(who, owner))   # forget: for good
    return _call(service.act, mem, scope, memory_id, action, actor=_actor(who))  # type: ignore[no-any-return]

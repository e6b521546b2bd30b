"""A laptop's sync with this server (``remem team join``; ``remem.teamsync`` is the other end):
push a shared project's turns to a team, pull a readable owner's changed turns, forgets and learned
memories. Every route acts as the request's user (``team.Principal``): it pushes only to its own
teams and reads only the owners it may read."""

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, Field

from ... import team
from ...core import Remem
from ...model import ToolCall, TurnIn
from .. import deps
from .memories import TurnBody

router = APIRouter(tags=["team sync"])
Mem = Annotated[Remem, Depends(deps.mem)]


class PushTurn(TurnBody):
    source_key: str = Field(min_length=1, max_length=400)
    summary: str = ""
    importance: float = Field(0.5, ge=0.0, le=1.0)


class PushBody(BaseModel):
    team: str = Field(min_length=1, max_length=100)
    turns: list[PushTurn] = Field(min_length=1, max_length=500)


@router.post("/sync/push", summary="Write a laptop's turns of a shared project as the team's (idempotent by source_key)")
def push(mem: Mem, who: deps.Who, body: PushBody) -> dict[str, Any]:
    turns = [TurnIn(request=t.request, reply=t.reply, agent=t.agent,
                    actions=[ToolCall(name=a.name, input=a.input, output=a.output, is_error=a.is_error,
                                      call_id=a.call_id) for a in t.actions],
                    project=t.project, session_id=t.session_id, source_key=t.source_key, status=t.status,
                    started_at=t.started_at, ended_at=t.ended_at, model=t.model, tags=list(t.tags),
                    summary=t.summary, importance=t.importance)
             for t in body.turns]
    return team.receive_push(mem, who, body.team, turns)


class PushLearned(BaseModel):
    local_id: str = Field("", max_length=100)
    project: str = Field(min_length=1, max_length=500)
    kind: str = Field(min_length=1, max_length=40)
    text: str = Field(min_length=1, max_length=2000)
    slot: str = Field("", max_length=200)
    value: str = Field("", max_length=500)
    edited: bool = False
    locked: bool = False
    evidence: list[str] = Field(default_factory=list, max_length=200)


class PushLearnedBody(BaseModel):
    team: str = Field(min_length=1, max_length=100)
    items: list[PushLearned] = Field(min_length=1, max_length=500)


@router.post("/sync/learned", summary="A laptop's curated learned memories of a shared project, onto the team's "
             "(the server's decisions win)")
def push_learned(mem: Mem, who: deps.Who, body: PushLearnedBody) -> dict[str, Any]:
    return team.receive_learned(mem, who, body.team, [i.model_dump() for i in body.items])


class ForgetBody(BaseModel):
    team: str = Field(min_length=1, max_length=100)
    turns: list[Annotated[str, Field(max_length=400)]] = Field(default_factory=list, max_length=5000)
    sessions: list[Annotated[str, Field(max_length=400)]] = Field(default_factory=list, max_length=500)


@router.post("/sync/forget", summary="Forget the team's copies of turns a member forgot on the laptop (its own pushes only)")
def push_forget(mem: Mem, who: deps.Who, body: ForgetBody) -> dict[str, Any]:
    return team.receive_forget(mem, who, body.team, turns=body.turns, sessions=body.sessions)


@router.get("/sync/turns", summary="One page of an owner's turns changed after a cursor, and its forgets")
def pull_turns(mem: Mem, who: deps.Who, owner: Annotated[str, Query(min_length=1, max_length=200)],
               after_ts: float = 0.0, after_id: Annotated[str, Query(max_length=100)] = "",
               forgotten_since: float = -1.0,
               limit: Annotated[int, Query(ge=1, le=team.SYNC_PAGE)] = team.SYNC_PAGE) -> dict[str, Any]:
    return team.changes(mem, who, owner, after=(after_ts, after_id), forgotten_since=forgotten_since, limit=limit)


@router.get("/sync/learned", summary="An owner's learned memory ids, and the records changed since a time")
def pull_learned(mem: Mem, who: deps.Who, owner: Annotated[str, Query(min_length=1, max_length=200)],
                 after: float = 0.0) -> dict[str, Any]:
    return team.learned_state(mem, who, owner, after=after)

"""Memories: list with filters, hybrid search with per-channel details, get, add, delete, timelines."""

import time
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query, Request, Response
from pydantic import BaseModel, Field

from ...core import Remem
from ...model import ToolCall, TurnIn
from .. import deps

router = APIRouter(tags=["memories"])
Mem = Annotated[Remem, Depends(deps.mem)]
PREVIEW = 400  # characters of request / reply in lists; the detail view has everything


def preview(row: dict[str, Any]) -> dict[str, Any]:
    keep = ("id", "owner", "agent", "project", "session_id", "source_name", "kind", "status", "started_at",
            "ended_at", "created_at", "updated_at", "model", "tags", "importance", "embed_state", "size")
    out = {k: row.get(k) for k in keep}
    out["request"] = _cut(row.get("request") or "")
    out["reply"] = _cut(row.get("reply") or "")
    actions = row.get("actions") or []
    out["actions_count"] = len(actions)
    out["tools"] = sorted({a.get("name", "") for a in actions if isinstance(a, dict)})[:12]
    out["errors"] = sum(1 for a in actions if isinstance(a, dict) and a.get("is_error"))
    return out


def _cut(text: str) -> str:
    return text if len(text) <= PREVIEW else text[: PREVIEW - 1] + "…"


class SearchBody(BaseModel):
    query: str = Field(min_length=1, max_length=10_000)
    k: int = Field(10, ge=1, le=200)
    owner: str | None = None
    agent: str | None = None
    project: str | None = None


class AddBody(BaseModel):
    text: str = Field(min_length=1)
    reply: str = ""
    agent: str = "api"
    project: str = ""
    session: str = ""
    owner: str | None = None
    tags: list[str] = []
    importance: float = Field(0.5, ge=0.0, le=1.0)


class ActionIn(BaseModel):
    name: str
    input: str = ""
    output: str = ""
    is_error: bool = False
    call_id: str = ""


class TurnBody(BaseModel):
    request: str
    reply: str = ""
    actions: list[ActionIn] = []
    agent: str
    owner: str | None = None
    project: str = ""
    session_id: str = ""
    source_key: str = ""
    status: str = "succeeded"
    started_at: float | None = None
    ended_at: float | None = None
    model: str = ""
    tags: list[str] = []


class TurnsBody(BaseModel):
    turns: list[TurnBody] = Field(min_length=1, max_length=500)
    live: bool = True
    # False: answer at once even when another writer (an import, a sync) holds the database; the
    # turns then wait in the daemon's queue, in order, and the answer says "queued" (a hook's opening
    # capture, whose answer nobody reads)
    wait: bool = True


def _search(mem: Remem, who: deps.Principal, query: str, k: int, owner: str | None, agent: str | None,
            project: str | None) -> dict[str, Any]:
    if not query.strip():
        raise HTTPException(400, "query is empty")
    t0 = time.perf_counter()
    scope = mem.scope(deps.owners(who, owner), agent=agent or None, project=project or None)
    results = mem.search(query, scope=scope, k=k, explain=True)
    took = round((time.perf_counter() - t0) * 1000, 2)
    # the viewer shows when a turn happened and which tools it used; fill those in one scoped read
    # (one get per id: ``store.turns.get_many``'s IN-list lets SQLite pick the owner index and scan)
    for r in results:
        if "started_at" in r and "tools" in r:
            continue
        row = mem.get(r["id"], scope=scope)
        if row is not None:
            p = preview(row)
            for key in ("started_at", "tools", "actions_count", "errors", "request", "reply"):
                r.setdefault(key, p[key])
    return {"query": query, "results": results, "took_ms": took}


@router.get("/memories", summary="List memories, newest first")
def list_memories(mem: Mem, who: deps.Who, owner: str | None = None, agent: str | None = None, project: str | None = None,
                  since: float | None = None, until: float | None = None, kind: str | None = None,
                  limit: Annotated[int, Query(ge=1, le=500)] = 50,
                  offset: deps.Offset = 0) -> dict[str, Any]:
    rows = mem.list(owner=deps.owners(who, owner), agent=agent or None, project=project or None, since=since,
                    until=until, kind=kind or None, limit=limit, offset=offset)
    return {"items": [preview(r) for r in rows], "limit": limit, "offset": offset,
            "next_offset": offset + len(rows) if len(rows) == limit else None}


@router.get("/memories/search", summary="Hybrid search (with why each result matched)")
def search_get(mem: Mem, who: deps.Who, q: Annotated[str, Query(min_length=1, max_length=10_000)],
               k: Annotated[int, Query(ge=1, le=200)] = 10, owner: str | None = None, agent: str | None = None,
               project: str | None = None) -> dict[str, Any]:
    return _search(mem, who, q, k, owner, agent, project)


@router.post("/memories/search", summary="Hybrid search with a JSON body")
def search_post(mem: Mem, who: deps.Who, body: SearchBody) -> dict[str, Any]:
    return _search(mem, who, body.query, body.k, body.owner, body.agent, body.project)


@router.post("/memories", status_code=201, summary="Store one memory")
def add_memory(mem: Mem, who: deps.Who, body: AddBody) -> dict[str, Any]:
    res = mem.add(body.text, owner=deps.own(who, body.owner), agent=body.agent, project=body.project, session=body.session,
                  reply=body.reply, tags=body.tags, importance=body.importance)
    return res.to_dict()


@router.post("/turns", summary="Capture complete turns (hooks and plugins)")
def add_turns(mem: Mem, who: deps.Who, body: TurnsBody, request: Request, response: Response) -> dict[str, Any]:
    turns = []
    for t in body.turns:
        turns.append(TurnIn(
            request=t.request, reply=t.reply, agent=t.agent, owner=mem.owner_for(t.agent, deps.own(who, t.owner)),
            actions=[ToolCall(name=a.name, input=a.input, output=a.output, is_error=a.is_error, call_id=a.call_id)
                     for a in t.actions],
            project=t.project, session_id=t.session_id, source_key=t.source_key, status=t.status,
            started_at=t.started_at or time.time(), ended_at=t.ended_at, model=t.model, tags=t.tags))
    writer = deps.state(request).writer
    if writer is None:
        res = mem.add_turns(turns, live=body.live)
    else:
        got = writer.write(turns, live=body.live, wait=body.wait)
        if got is None:      # another writer holds the database: written as soon as it lets go
            response.status_code = 202
            return {"results": [], "counts": {}, "queued": len(turns)}
        res = got
    return {"results": [r.to_dict() for r in res.results], "counts": res.counts}


@router.get("/memories/{memory_id}", summary="One whole memory with its tool trajectory")
def get_memory(mem: Mem, who: deps.Who, memory_id: str, owner: str | None = None) -> dict[str, Any]:
    rec = mem.get(memory_id, owner=deps.owners(who, owner))
    if rec is None:
        raise HTTPException(404, f"no memory {memory_id} in this scope")
    return rec


@router.delete("/memories/{memory_id}", summary="Forget a memory and what was derived from it")
def delete_memory(mem: Mem, who: deps.Who, memory_id: str, owner: str | None = None) -> dict[str, Any]:
    asked = deps.owners(who, owner) if who.is_home else deps.own(who, owner)  # a user forgets its own only
    gone = mem.forget(ids=[memory_id], owner=asked)
    if not gone:
        raise HTTPException(404, f"no memory {memory_id} in this scope")
    return {"forgotten": len(gone), "ids": gone,
            "kept_out": "later syncs, hooks and imports keep it out (undo: remem forget --undo ID)"}


@router.get("/sessions", summary="Sessions in scope, most recently active first")
def list_sessions(mem: Mem, who: deps.Who, owner: str | None = None, agent: str | None = None, project: str | None = None,
                  limit: int = Query(100, ge=1, le=1000), offset: deps.Offset = 0) -> dict[str, Any]:
    items = mem.sessions(owner=deps.owners(who, owner), agent=agent or None, project=project or None, limit=limit,
                         offset=offset)
    for s in items:
        s["turns"] = s.pop("turn_count")
        s["last_at"] = s.pop("updated_at")
        s["first_at"] = s.pop("started_at")
        s["title"] = _cut(s["title"])[:120]
    return {"items": items}


@router.get("/sessions/{session_id}/timeline", summary="A session's turns in order")
def session_timeline(mem: Mem, who: deps.Who, session_id: str, owner: str | None = None,
                     limit: Annotated[int, Query(ge=1, le=2000)] = 500) -> dict[str, Any]:
    rows = mem.timeline(session_id, owner=deps.owners(who, owner), limit=limit)
    return {"session_id": session_id, "items": [preview(r) for r in rows]}


class ShareBody(BaseModel):
    id: str = Field(min_length=1, max_length=200)
    team: str = Field(min_length=1, max_length=100)
    owner: str | None = None


@router.post("/share", summary="Share one of your turns (t_…) or active learned memories (m_…) with a team")
def share(mem: Mem, who: deps.Who, body: ShareBody) -> dict[str, Any]:
    from ... import team

    return team.share(mem, body.id, body.team, principal=who, owner=body.owner)


@router.get("/me", summary="Who this token acts as: the home, or a user with its owners and teams")
def whoami(mem: Mem, who: deps.Who) -> dict[str, Any]:
    if who.is_home:
        return {"user": None, "home": True, "owner": mem.owner_for(), "teams": [], "reads": "every owner"}
    return {"user": who.user, "home": False, "owner": who.owner, "teams": list(who.teams),
            "reads": list(who.readable)}


@router.get("/owners", summary="Owners (profiles) known from settings, and the teams this home mirrors")
def list_owners(mem: Mem, who: deps.Who) -> dict[str, Any]:
    if not who.is_home:  # a user's own owner first (where its writes go), then its teams'
        return {"default": who.owner, "owners": list(who.readable)}
    settings = mem.config.settings
    out = [settings.owner]
    for agent, s in settings.agents.items():
        if s.owner:
            out.append(s.owner)
        elif s.isolated:
            out.append(f"agent:{agent}")
    from ...teamsync import mirrored_owners

    out += mirrored_owners(mem.home)       # the teams a joined laptop mirrors (remem team join)
    return {"default": out[0], "owners": list(dict.fromkeys(out))}

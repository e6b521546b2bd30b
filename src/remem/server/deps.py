"""Shared pieces for route modules: the daemon state, the memory handle, who the request acts as,
and the owners it reads and writes (team use: a user's token reads its own and its teams' owners,
writes its own; see ``remem.team.Principal``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from fastapi import Depends, HTTPException, Path, Query, Request

from ..team import Principal

if TYPE_CHECKING:
    from ..core import Remem
    from .jobs import JobRunner
    from .state import DaemonState


INT64 = 2 ** 63 - 1  # SQLite's largest integer: ids and offsets beyond it are refused with 422, not 500
JobId = Annotated[int, Path(ge=1, le=INT64, description="A job id")]
Offset = Annotated[int, Query(ge=0, le=INT64)]


def state(request: Request) -> DaemonState:
    return request.app.state.daemon  # type: ignore[no-any-return]


def mem(request: Request) -> Remem:
    st = state(request)
    if st.mem is None:
        raise HTTPException(503, "remem is starting; try again in a moment" if st.status == "starting"
                            else f"remem failed to start: {st.error}")
    return st.mem


def runner(request: Request) -> JobRunner:
    st = state(request)
    if st.runner is None:
        raise HTTPException(503, "the job runner is starting; try again in a moment")
    return st.runner


def principal(request: Request) -> Principal:
    """Who this request acts as, set by the gate (``security.Guard``); a route reached without one
    is refused rather than read as the home."""
    who = request.scope.get("remem.principal")
    if not isinstance(who, Principal):
        raise HTTPException(401, "missing or invalid token")
    return who


Who = Annotated[Principal, Depends(principal)]


def parse_owners(owner: str | None) -> str | list[str] | None:
    """``owner=a,b`` names several owners; empty names none."""
    if not owner:
        return None
    parts = [p.strip() for p in owner.split(",") if p.strip()]
    return parts[0] if len(parts) == 1 else parts or None


def owners(who: Principal, owner: str | None) -> str | list[str] | None:
    """The owners a read covers: for the home what was asked (empty: the configured default); for a
    user what was asked if it may read all of it (else 403), empty: its own and its teams'."""
    return who.reads(parse_owners(owner))


def own(who: Principal, owner: str | None) -> str | None:
    """The owner a write (or a change, a forget) goes to: for a user its own only (asking for
    another is 403); for the home what was asked (empty: the configured default)."""
    return who.writes(owner or None)


def mem_or_none(st: DaemonState) -> Remem | None:
    return st.mem

"""Shared pieces for route modules: the daemon state, the memory handle, owner parsing."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from fastapi import HTTPException, Path, Query, Request

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


def owners(owner: str | None) -> str | list[str] | None:
    """``owner=a,b`` reads several owners; empty means the configured default."""
    if not owner:
        return None
    parts = [p.strip() for p in owner.split(",") if p.strip()]
    return parts[0] if len(parts) == 1 else parts or None


def mem_or_none(st: DaemonState) -> Remem | None:
    return st.mem

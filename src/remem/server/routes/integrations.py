"""Integrations: install / remove / status of each agent's hook, plugin or skill."""

from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException

from ...agents import canonical_agent
from ...core import Remem
from .. import deps, optional

router = APIRouter(tags=["integrations"])
Mem = Annotated[Remem, Depends(deps.mem)]


def _module() -> Any:
    try:
        return optional.integrations()
    except optional.Unavailable as e:
        raise HTTPException(503, str(e)) from None


def _agent(name: str) -> str:
    try:
        return canonical_agent(name)
    except ValueError as e:
        raise HTTPException(400, str(e)) from None


def _plain(value: Any) -> Any:
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


@router.get("/integrations", summary="Integration status of every (or the given) agent")
def status(mem: Mem, agent: str | None = None) -> dict[str, Any]:
    mod = _module()
    agents = [_agent(a) for a in agent.split(",")] if agent else None
    return {"integrations": _plain(mod.status(mem, agents=agents))}


def _outcome(agent: str, result: Any) -> dict[str, Any]:
    """Installer results carry their own status; failures become HTTP errors with the reason."""
    res = _plain(result)
    status = res.get("status") if isinstance(res, dict) else None
    if status == "error":
        raise HTTPException(422, f"{agent}: {res.get('error') or 'the installer failed'}")
    if status == "not_supported":
        raise HTTPException(400, f"{agent}: {res.get('error') or 'not supported on this machine'}")
    return {"agent": agent, "result": res}


@router.post("/integrations/{agent}/install", summary="Install remem's hook, plugin or skill into an agent")
def install(mem: Mem, agent: str, replace: bool | None = None) -> dict[str, Any]:
    """``replace`` answers "take over another memory provider?" where an agent has one; without it such an
    install stops at ``status: needs_confirmation`` with notes saying what would change."""
    mod = _module()
    name = _agent(agent)
    try:
        result = mod.install(mem, name, replace=replace)
    except TypeError:  # an installer API without the replace question
        result = mod.install(mem, name)
    return _outcome(name, result)


@router.post("/integrations/{agent}/remove", summary="Remove remem from an agent's configuration")
def remove(mem: Mem, agent: str) -> dict[str, Any]:
    mod = _module()
    name = _agent(agent)
    return _outcome(name, mod.remove(mem, name))

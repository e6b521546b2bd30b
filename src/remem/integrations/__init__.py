"""Integrations: the hook runtime agents call, and one installer per agent.

The daemon, the viewer and the CLI use these four functions; ``python -m remem.hook`` (the hook
runtime, :mod:`remem.integrations.runtime`) is what the agents run. This module stays light: the
installers (and the plugin contract that registers them) are imported only when one of the
functions is called.

    install(mem, "codex")          -> {"agent", "action", "status", "changed", "notes", ...}
    remove(mem, "codex")           -> the same shape
    status(mem, ["codex"])         -> [{"agent", "detected", "installed", "hooks", "files", ...}]
    detected_agents(os.environ)    -> ["claude-code", "codex", ...]
    refresh_launcher(mem)          -> True if $REMEM_HOME/bin/remem-hook was rewritten

Every hook config an installer writes runs the launcher ``$REMEM_HOME/bin/remem-hook`` (installers/common.py),
which execs the interpreter remem was installed with; ``install`` writes it, ``remem up`` keeps it current.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..agents import canonical_agent

if TYPE_CHECKING:
    from ..core import Remem
    from .installers.common import Context

__all__ = ["AGENTS", "detected_agents", "install", "refresh_launcher", "remove", "status"]

AGENTS = ("claude-code", "codex", "cursor", "opencode", "openclaw", "hermes", "gemini",
          "workbuddy", "pi", "qwenwork")


def _context(mem: Remem | None, env: Mapping[str, str] | None) -> Context:
    from .installers.common import Context

    env = dict(os.environ if env is None else env)
    if mem is not None:
        home = Path(mem.home)
    else:
        from .. import config as configmod

        home = configmod.home_dir(env.get("REMEM_HOME"))
    # pin the home in hook commands unless it is the default one the hook would find anyway
    default = Path(env.get("HOME") or Path.home()).expanduser() / ".remem"
    pin = home.expanduser().resolve() != default.resolve() or bool(env.get("REMEM_HOME"))
    return Context(env=env, remem_home=home, pin_home=pin)


def _installers() -> dict[str, Any]:
    """Every integration (built-in and from plugins; ``remem.plugins``)."""
    from .. import plugins

    return plugins.installers()


def _installer(agent: str) -> Any:
    known = _installers()
    cid = canonical_agent(agent)
    if cid not in known:
        raise ValueError(f"no integration for agent {agent!r}; known: {', '.join(known)}")
    return known[cid]


def install(mem: Remem | None, agent: str, *, replace: bool | None = None,
            env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Install remem into ``agent`` (idempotent). ``replace`` answers "take over another memory
    provider?" for OpenClaw and Hermes (None = ask: install the skill only, status needs_confirmation)."""
    from .installers.common import InstallError, Result, write_launcher

    inst = _installer(agent)
    ctx = _context(mem, env)
    try:
        launcher = Result(inst.agent, "install")
        write_launcher(ctx, launcher)          # first: a hook that fires mid-install finds it
        res = inst.install(ctx, replace=replace)
        res.changed[:0] = launcher.changed
        return res.to_dict()
    except (InstallError, OSError) as e:
        res = Result(inst.agent, "install", status="error", error=str(e))
        return res.to_dict()


def refresh_launcher(mem: Remem | None, *, env: Mapping[str, str] | None = None) -> bool:
    """Point an existing hook launcher at the interpreter running now (``remem up``). True if rewritten."""
    from .installers.common import write_launcher

    ctx = _context(mem, env)
    if not ctx.launcher.is_file():
        return False                           # hooks were never installed through the launcher
    try:
        return write_launcher(ctx)
    except OSError:
        return False


def remove(mem: Remem | None, agent: str, *, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Remove exactly what :func:`install` added; other configuration and memories stay."""
    from .installers.common import InstallError, Result

    inst = _installer(agent)
    try:
        return inst.remove(_context(mem, env)).to_dict()
    except (InstallError, OSError) as e:
        return Result(inst.agent, "remove", status="error", error=str(e)).to_dict()


def status(mem: Remem | None, agents: list[str] | None = None, *,
           env: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """Per agent: detected on this machine, installed (fully / partly), hooks and files found."""
    ctx = _context(mem, env)
    names = [canonical_agent(a) for a in agents] if agents else list(_installers())
    out = []
    for name in names:
        inst = _installer(name)
        info = inst.status(ctx)
        out.append({"agent": inst.agent, "label": inst.label, "detected": inst.detect(ctx), **info})
    return out


def detected_agents(env: Mapping[str, str] | None = None) -> list[str]:
    """Agents that look present here (config dir exists or binary on PATH), in canonical order."""
    ctx = _context(None, env)
    return [name for name, inst in _installers().items() if inst.detect(ctx)]

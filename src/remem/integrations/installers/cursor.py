"""Cursor: entries appended to ``~/.cursor/hooks.json`` plus remem's hook script, and the skill.

Cursor's ``beforeSubmitPrompt`` cannot add context (FORMATS.md §3.4), so Cursor's hooks capture
turns (prompt, ``afterAgentResponse`` text, ``stop`` status) and answer ``/remem-resume`` with a list
shown to the user; ordinary recall goes through the ``remem-memory`` skill.
"""

from __future__ import annotations

import shlex
from typing import Any

from .base import HookAgent, OwnedFile, skill_file
from .common import Context, merge_hooks, template

SCRIPT = "hooks/remem-hook.sh"


def _script(ctx: Context, agent: str) -> str:
    return template("cursor/remem-hook.sh.txt", HOOK=" ".join(shlex.quote(a) for a in ctx.hook_argv()))


class Cursor(HookAgent):
    agent = "cursor"
    label = "Cursor"
    dir_var = "CURSOR_CONFIG_DIR"
    dir_default = ".cursor"
    binaries = ("cursor", "cursor-agent")
    hooks_file = "hooks.json"
    timeout = None
    events = [("beforeSubmitPrompt", "beforeSubmitPrompt", None),
              ("afterAgentResponse", "afterAgentResponse", None),
              ("stop", "stop", None)]
    owned = [OwnedFile("script", SCRIPT, _script, mode=0o755), skill_file()]

    def hook_groups(self, ctx: Context) -> dict[str, list[dict[str, Any]]]:
        script = shlex.quote(str(self.root(ctx) / SCRIPT))
        return {event: [{"command": f"{script} {arg}"}] for event, arg, _ in self.events}

    def merged_config(self, ctx: Context, cfg: dict[str, Any]) -> dict[str, Any]:
        merged = merge_hooks(cfg, self.hook_groups(ctx))
        return {"version": merged.pop("version", 1), **merged}

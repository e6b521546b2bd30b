"""OpenCode: a native plugin in ``plugins/``, ``commands/remem-resume.md``, an AGENTS.md note, the skill.

Config dir: ``$OPENCODE_CONFIG_DIR``, else ``$XDG_CONFIG_HOME/opencode``, else ``~/.config/opencode``
(FORMATS.md §4.4). OpenCode loads every ``plugins/*.js`` at start; there are no shell hooks.
"""

from __future__ import annotations

import json
from pathlib import Path

from .base import HookAgent, OwnedFile, skill_file
from .common import Context, template


def _plugin(ctx: Context, agent: str) -> str:
    return template("opencode/remem.js", HOOK_ARGV=json.dumps(ctx.hook_argv()))


class OpenCode(HookAgent):
    agent = "opencode"
    label = "OpenCode"
    binaries = ("opencode",)
    events = []
    owned = [
        OwnedFile("plugin", "plugins/remem.js", _plugin),
        OwnedFile("command", "commands/remem-resume.md",
                  lambda ctx, agent: template("opencode/remem-resume.md", REMEM=ctx.cli_command(),
                                                        AGENT=agent)),
        OwnedFile("incognito", "commands/remem-incognito.md",
                  lambda ctx, agent: template("opencode/remem-incognito.md")),
        skill_file(),
    ]
    note_file = "AGENTS.md"

    def root(self, ctx: Context) -> Path:
        if ctx.env.get("OPENCODE_CONFIG_DIR"):
            return Path(ctx.env["OPENCODE_CONFIG_DIR"]).expanduser()
        xdg = ctx.env.get("XDG_CONFIG_HOME")
        return (Path(xdg).expanduser() if xdg else ctx.home / ".config") / "opencode"

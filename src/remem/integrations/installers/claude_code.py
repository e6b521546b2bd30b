"""Claude Code: hooks in ``settings.json``, ``/remem-resume``, a CLAUDE.md note, the skill.

Config dir: ``$CLAUDE_CONFIG_DIR`` or ``~/.claude`` (FORMATS.md §1.4). Hooks: SessionStart (a
short project digest), UserPromptSubmit (recall), PostToolUse / PostToolUseFailure (trajectory and
the repair recall), Stop (capture), SessionEnd (close an unfinished turn). Timeouts in seconds.
"""

from __future__ import annotations

from .base import HookAgent, OwnedFile, skill_file
from .common import template


class ClaudeCode(HookAgent):
    agent = "claude-code"
    label = "Claude Code"
    dir_var = "CLAUDE_CONFIG_DIR"
    dir_default = ".claude"
    binaries = ("claude",)
    hooks_file = "settings.json"
    timeout = 60          # seconds: Claude's default; remem's own budget per call is far below it
    events = [
        ("SessionStart", "SessionStart", "startup|resume|clear|compact"),
        ("UserPromptSubmit", "UserPromptSubmit", None),
        ("PostToolUse", "PostToolUse", "*"),
        ("PostToolUseFailure", "PostToolUseFailure", "*"),
        ("Stop", "Stop", None),
        ("SessionEnd", "SessionEnd", None),
    ]
    owned = [
        OwnedFile("command", "commands/remem-resume.md",
                  lambda ctx, agent: template("claude/remem-resume.md", REMEM=ctx.cli_command(),
                                                        AGENT=agent)),
        OwnedFile("incognito", "commands/remem-incognito.md",
                  lambda ctx, agent: template("claude/remem-incognito.md")),
        skill_file(),
    ]
    note_file = "CLAUDE.md"

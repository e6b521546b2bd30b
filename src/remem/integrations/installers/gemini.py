"""Gemini CLI: ``BeforeAgent`` / ``AfterAgent`` / ``AfterTool`` hooks in ``~/.gemini/settings.json``
(timeouts there are milliseconds, FORMATS.md §7), a GEMINI.md note, the skill.

No SessionStart hook: Gemini prepends SessionStart context to the user's prompt text, which would
then be stored as part of the request.
"""

from __future__ import annotations

from .base import HookAgent, skill_file


class Gemini(HookAgent):
    agent = "gemini"
    label = "Gemini CLI"
    dir_var = "GEMINI_CLI_HOME_DIR"
    dir_default = ".gemini"
    binaries = ("gemini",)
    hooks_file = "settings.json"
    timeout = 60_000      # milliseconds
    events = [
        ("BeforeAgent", "BeforeAgent", None),
        ("AfterTool", "AfterTool", "*"),
        ("AfterAgent", "AfterAgent", None),
        ("SessionEnd", "SessionEnd", None),
    ]
    owned = [skill_file()]
    note_file = "GEMINI.md"

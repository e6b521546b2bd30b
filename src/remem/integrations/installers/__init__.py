"""One installer per agent, registered here (the integration extension point).

Each installer follows :class:`~remem.integrations.installers.base.Installer`: ``detect``,
``install(replace=)``, ``remove``, ``status``. Add an agent by writing a module and listing its
installer in ``INSTALLERS``.
"""

from __future__ import annotations

from .base import Installer
from .claude_code import ClaudeCode
from .codex import Codex
from .cursor import Cursor
from .gemini import Gemini
from .hermes import Hermes
from .openclaw import OpenClaw
from .opencode import OpenCode
from .skill_only import PI, QWENWORK, WORKBUDDY

INSTALLERS: dict[str, Installer] = {i.agent: i for i in (
    ClaudeCode(), Codex(), Cursor(), OpenCode(), OpenClaw(), Hermes(), Gemini(), WORKBUDDY, PI, QWENWORK)}

__all__ = ["INSTALLERS", "Installer"]

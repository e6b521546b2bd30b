"""One installer per agent, registered here (the integration extension point).

Each installer follows :class:`~remem.integrations.installers.base.Installer`: ``detect``,
``install(replace=)``, ``remove``, ``status``. Add an agent by writing a module and listing its
installer in ``BUILTIN`` (``remem.builtins`` registers them); a package adds one with the
``register_installers`` hook (docs/plugins.md). ``INSTALLERS`` is the live registry of both.
"""

from __future__ import annotations

from collections.abc import MutableMapping

from ...plugins import Registry
from .base import Installer
from .claude_code import ClaudeCode
from .codex import Codex
from .cursor import Cursor
from .gemini import Gemini
from .hermes import Hermes
from .openclaw import OpenClaw
from .opencode import OpenCode
from .skill_only import PI, QWENWORK, WORKBUDDY

#: the built-in integrations, in listing order
BUILTIN: tuple[Installer, ...] = (
    ClaudeCode(), Codex(), Cursor(), OpenCode(), OpenClaw(), Hermes(), Gemini(), WORKBUDDY, PI, QWENWORK)

#: every integration by canonical agent id (built-in and from plugins)
INSTALLERS: MutableMapping[str, Installer] = Registry("installers")

__all__ = ["BUILTIN", "INSTALLERS", "Installer"]

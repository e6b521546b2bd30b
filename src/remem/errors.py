"""The one exception root: every error remem raises on purpose is a ``RememError``.

A face (CLI, REST, MCP, hook) catches ``RememError`` and shows its message as one clear line; anything
else is a bug and keeps its traceback.
"""

from __future__ import annotations


class RememError(Exception):
    """An expected failure with a message meant for the user."""


class ConfigError(RememError, ValueError):
    """A setting that cannot be read, parsed or written (``remem.config`` re-exports it)."""


class UndeclaredSetting(Exception):
    """Code read a settings key that ``settings.py`` does not declare: a bug, never the user's mistake
    (deliberately neither a RememError nor a LookupError, so every face shows it as the bug it is)."""

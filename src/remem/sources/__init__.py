"""Importers of the history agents already write to disk: one module per format.

The sync engine uses this package through a small surface:

* :data:`SOURCES` — every known source by canonical agent id: :data:`BUILTIN` and the plugins'
  (the ``register_sources`` hook, :mod:`remem.plugins`); :func:`register_source` /
  :func:`register_custom` add more in one process.
* ``source.discover(env)`` → history roots; ``source.list_units(root, stats)`` → units with a
  stable ``key`` and a ``fingerprint`` (size, mtime); ``source.read(unit, stats)`` → a stream
  of :class:`~remem.model.Message`. :func:`scan` does discover + list for one source.
* :func:`assemble_turns` turns one unit's messages into complete :class:`~remem.model.TurnIn`;
  :class:`TurnAssembler` is the same, fed one message at a time.

Parsers never raise on bad input; they count it in a :class:`ParseStats`.
"""

from __future__ import annotations

from . import aider, claude_code, codex, cursor, gemini, hermes, jsonl_chat, openclaw, opencode, specstory
from .base import (
    SOURCES,
    ParseStats,
    Source,
    SourceSpec,
    Unit,
    get_source,
    read_all,
    register_source,
    scan,
)
from .jsonl_chat import JsonlChatSource, custom_source, register_custom
from .turns import AssembleResult, TurnAssembler, assemble_turns

#: the built-in sources, in listing order; ``remem.builtins`` registers them through the plugin contract
BUILTIN: tuple[Source, ...] = (
    claude_code.SOURCE, codex.SOURCE, cursor.SOURCE, opencode.SOURCE, openclaw.SOURCE,
    hermes.SOURCE, gemini.SOURCE, jsonl_chat.WORKBUDDY, jsonl_chat.PI, jsonl_chat.QWENWORK,
    specstory.SOURCE, aider.SOURCE)   # the two kept inside project folders sync last

__all__ = [
    "BUILTIN", "SOURCES", "AssembleResult", "JsonlChatSource", "ParseStats", "Source", "SourceSpec", "TurnAssembler", "Unit",
    "assemble_turns", "custom_source", "get_source", "read_all", "register_custom", "register_source", "scan",
]

"""remem: one long-term memory for all of a developer's AI coding agents.

    import remem
    mem = remem.open()            # REMEM_HOME or ~/.remem
    mem.add("use uv, not pip", agent="claude-code", project="myapp")
    mem.search("package manager")

The core library is imported lazily, so light entry points (the hook runtime) stay cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["Message", "Remem", "Scope", "ToolCall", "TurnIn", "open"]

if TYPE_CHECKING:
    from .core import Remem, open
    from .model import Message, ToolCall, TurnIn
    from .scope import Scope

_LAZY = {"Remem": ".core", "open": ".core", "Message": ".model", "ToolCall": ".model", "TurnIn": ".model",
         "Scope": ".scope"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'remem' has no attribute {name!r}")

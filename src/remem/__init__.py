"""remem: one long-term memory for all of a developer's AI coding agents.

    import remem
    mem = remem.open()            # REMEM_HOME or ~/.remem
    mem.add("use uv, not pip", agent="claude-code", project="myapp")
    mem.search("package manager")
"""

from .core import Remem, open
from .model import Message, ToolCall, TurnIn
from .scope import Scope

__version__ = "0.1.0"
__all__ = ["Message", "Remem", "Scope", "ToolCall", "TurnIn", "open"]

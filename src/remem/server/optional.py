"""Parts of remem the daemon uses when they are installed: the sync engine and the integrations.

They are imported lazily so the daemon runs (and answers 503 for those routes) without them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

from ..errors import RememError

SYNC_MODULE = "remem.sources.sync"
INTEGRATIONS_MODULE = "remem.integrations"
DEFAULT_PRESETS = ("kimi code", "zcode", "minimax code", "coder")  # the "Add other agent" presets


class Unavailable(RememError, RuntimeError):
    """An optional part of remem is not installed; the API answers 503 with this message."""


def _load(name: str, needs: tuple[str, ...], what: str) -> ModuleType:
    try:
        mod = importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name and name.startswith(e.name):
            raise Unavailable(f"{what} not available") from None
        raise Unavailable(f"{what} not available: {e}") from None
    except ImportError as e:
        raise Unavailable(f"{what} not available: {e}") from None
    missing = [n for n in needs if not hasattr(mod, n)]
    if missing:
        raise Unavailable(f"{what} not available (missing {', '.join(missing)})")
    return mod


def sync_engine() -> ModuleType:
    return _load(SYNC_MODULE, ("run_sync", "SyncControl", "detect_sources"), "sync engine")


def integrations() -> ModuleType:
    return _load(INTEGRATIONS_MODULE, ("install", "remove", "status"), "integrations")


def has(loader: object) -> bool:
    try:
        loader()  # type: ignore[operator]
    except Unavailable:
        return False
    return True


def discovery() -> tuple[Callable[..., dict[str, Any]], list[str]]:
    """The "add another agent" entry point and its presets, wherever the sync engine keeps them."""
    sync = sync_engine()
    for mod in (sync, _maybe("remem.sources.custom")):
        if mod is not None and hasattr(mod, "add_custom_source"):
            presets = getattr(mod, "PRESETS", None) or getattr(sync, "PRESETS", None) or DEFAULT_PRESETS
            return mod.add_custom_source, list(presets)
    raise Unavailable("sync engine not available: it cannot add other agents yet")


def _maybe(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None

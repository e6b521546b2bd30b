"""The daemon's heap after start-up: set aside from the garbage collector's full passes."""

from __future__ import annotations

import gc


def settle() -> int:
    """Collect once, then freeze what is left (``gc.freeze``), and return how many objects that is.

    What start-up loads (modules, the API, recall's caches) lives as long as the daemon. A full
    collection scans every tracked object (and every item of a large container), and one came every
    ~40 prompts at 100k turns and took ~17 ms of that prompt. Frozen objects are never scanned again:
    the same collections took 2–3 ms for 200 prompts in all. The collection first keeps garbage out
    of the frozen set. Objects made later are collected as before."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def unsettle() -> None:
    """Give the frozen objects back to the collector (a benchmark between two stores)."""
    gc.unfreeze()

"""The daemon's heap after start-up (server/heap.py): frozen, and given back on request."""

from __future__ import annotations

import gc

from remem.server import heap


def test_settle_freezes_what_is_alive_and_unsettle_gives_it_back():
    kept = [{"turn": i} for i in range(2000)]          # what start-up loaded
    try:
        frozen = heap.settle()
        assert frozen == gc.get_freeze_count() >= len(kept)
        garbage = [[] for _ in range(100)]
        garbage.append(garbage)                        # a cycle made after start-up …
        del garbage
        assert gc.collect() >= 100                     # … is still collected
        assert gc.get_freeze_count() == frozen
    finally:
        heap.unsettle()
    assert gc.get_freeze_count() == 0
    assert kept[1999] == {"turn": 1999}

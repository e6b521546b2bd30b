"""Document frequencies of words, cached: both engines' text areas read them the same way."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable

MAX_TERMS = 50_000


class DocFreqs:
    """term → how many documents hold it, each read kept for ``ttl`` seconds (frequencies move
    slowly). A word no document holds is not kept: it is cheap to look up again, and may be
    written any moment."""

    def __init__(self, ttl: float) -> None:
        self.ttl = ttl
        self._lock = threading.Lock()
        self._df: dict[str, tuple[int, float]] = {}

    def get(self, terms: Iterable[str], lookup: Callable[[list[str]], dict[str, int]]) -> dict[str, int]:
        """Each term's count; ``lookup(missing)`` reads the ones not cached from the engine."""
        now = time.time()
        out: dict[str, int] = {}
        missing = []
        with self._lock:
            for t in terms:
                got = self._df.get(t)
                if got and now - got[1] < self.ttl:
                    out[t] = got[0]
                else:
                    missing.append(t)
        if missing:
            found = lookup(missing)
            with self._lock:
                if len(self._df) > MAX_TERMS:
                    self._df.clear()
                for t in missing:
                    out[t] = int(found.get(t, 0))
                    if out[t]:
                        self._df[t] = (out[t], now)
        return out

    def clear(self) -> None:
        with self._lock:
            self._df.clear()

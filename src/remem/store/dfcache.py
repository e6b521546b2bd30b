"""Document frequencies of words, cached: both engines' text areas read them the same way."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable

MAX_TERMS = 50_000
GROWTH = 0.02        # a count stays good until the corpus has grown by this share of its size since …
GROWTH_MIN = 50      # … and at least this many turns
MAX_AGE = 86_400.0   # … and for at most a day (a turn's text grows in place when its reply comes)
PRELOAD_DOC = 64     # warm-up keeps the words at least this common: the others cost little to count
PRELOAD_MAX = MAX_TERMS // 2

clock: Callable[[], float] = time.time   # seconds; benchmarks of prompts spread over hours move it


class DocFreqs:
    """term → how many documents hold it, as the engine last counted it.

    Counting is what costs: FTS5's vocabulary and PostgreSQL's turn_terms both count a word's
    postings (7.5 ms for a word in 90 % of 100k turns, ~1 ms for one in 20 %), and a prompt weighs
    each of its words. A count only moves with writes, so it is kept until the corpus has grown by
    GROWTH of the size it was counted at (GROWTH_MIN turns at least), or for MAX_AGE: a clock alone
    (five minutes, before) made every prompt of a user who types every few minutes count its
    words again (turn_start at 100k real-shaped turns: p95 80 → 150 ms). Deleting turns clears
    the cache (``clear``). A word no document holds is not kept: it is cheap to look up again, and
    may be written any moment."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._df: dict[str, tuple[int, float, int]] = {}   # term → (count, read at, corpus size then)

    def _fresh(self, got: tuple[int, float, int], now: float, size: int) -> bool:
        _, at, size_at = got
        return now - at < MAX_AGE and size - size_at <= max(GROWTH_MIN, GROWTH * size_at)

    def get(self, terms: Iterable[str], lookup: Callable[[list[str]], dict[str, int]],
            size: int) -> dict[str, int]:
        """Each term's count; ``lookup(missing)`` reads the ones not cached (or no longer good at a
        corpus of ``size`` turns) from the engine."""
        now = clock()
        out: dict[str, int] = {}
        missing = []
        with self._lock:
            for t in terms:
                got = self._df.get(t)
                if got and self._fresh(got, now, size):
                    out[t] = got[0]
                else:
                    missing.append(t)
        if missing:
            found = lookup(missing)
            with self._lock:
                self._make_room()
                for t in missing:
                    out[t] = int(found.get(t, 0))
                    if out[t]:
                        self._df[t] = (out[t], now, size)
        return out

    def preload(self, counts: dict[str, int], size: int) -> int:
        """Keep ``counts`` (the commonest words, counted in one pass at warm-up) as read now at a corpus
        of ``size`` turns; returns how many were kept."""
        now = clock()
        top = sorted(((t, int(c)) for t, c in counts.items() if c >= PRELOAD_DOC), key=lambda x: -x[1])
        with self._lock:
            for t, c in top[:PRELOAD_MAX]:
                self._df[t] = (c, now, size)
            self._make_room()
        return min(len(top), PRELOAD_MAX)

    def _make_room(self) -> None:
        """Under MAX_TERMS: the rare words go first (cheap to count again), then everything."""
        if len(self._df) <= MAX_TERMS:
            return
        self._df = {t: v for t, v in self._df.items() if v[0] >= PRELOAD_DOC}
        if len(self._df) > MAX_TERMS:
            self._df.clear()

    def clear(self) -> None:
        with self._lock:
            self._df.clear()

"""Exact Okapi BM25 over the turns (or sessions) of one scope, computed in memory.

The product's word channel is SQLite FTS5's bm25 (fast at any size, global statistics).
This module scores like ``rank_bm25.BM25Okapi`` (k1 = 1.5, b = 0.75, negative IDF floored
at ε·mean IDF), with statistics taken from the scope alone: it is what the benchmark's
plain-BM25 configuration uses to reproduce the reference numbers, and what the session
channel uses for small scopes. It refuses scopes larger than ``MAX_DOCS``.
"""

from __future__ import annotations

import logging
import math
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence

log = logging.getLogger("remem.recall")
Row = tuple[str, str, str, str, str, "float | None"]  # id, session key, request, reply, summary, started_at
_WORD = re.compile(r"[a-z0-9]+")
MAX_DOCS = 20_000


# every byte but a-z and 0-9 becomes a space: ``_WORD.findall`` done by str.translate and split, in C,
# about 4x faster on long tool output (non-ASCII letters become "?" first, which separates as before)
_SEPARATE = bytes(c if chr(c) in "abcdefghijklmnopqrstuvwxyz0123456789" else 32 for c in range(256))


def tokenize(text: str) -> list[str]:
    """The ASCII words and numbers of ``text``, lower-cased (``_WORD.findall(text.lower())``)."""
    return text.lower().encode("ascii", "replace").translate(_SEPARATE).decode("ascii").split()


class Okapi:
    """BM25 statistics of ``docs``. Each document keeps its term counts and the vocabulary its
    document frequencies; a term's postings are gathered when a query first asks for it (a
    CLI process asks for a handful of terms once, so building every posting list up front
    cost most of its time: 0.6 s of 0.9 at 5,000 real-shaped turns). Scores are the same."""

    def __init__(self, docs: Sequence[list[str]], k1: float = 1.5, b: float = 0.75, epsilon: float = 0.25) -> None:
        self.k1, self.b = k1, b
        self.lens = [len(d) for d in docs]
        n = len(docs)
        self.avgdl = (sum(self.lens) / n) if n else 0.0
        self.counts = [Counter(d) for d in docs]
        df: Counter[str] = Counter()
        for c in self.counts:
            df.update(c.keys())   # first-seen order, as the posting lists were made
        self._postings: dict[str, list[tuple[int, int]]] = {}
        idf: dict[str, float] = {}
        for w, f in df.items():
            idf[w] = math.log(n - f + 0.5) - math.log(f + 0.5)
        mean = (sum(idf.values()) / len(idf)) if idf else 0.0
        self.idf = {w: (v if v >= 0 else epsilon * mean) for w, v in idf.items()}

    def postings(self, w: str) -> list[tuple[int, int]]:
        """(document, term count) of every document holding ``w``, in document order."""
        got = self._postings.get(w)
        if got is None:
            got = [(i, c[w]) for i, c in enumerate(self.counts) if w in c]
            self._postings[w] = got
        return got

    def scores(self, query: Sequence[str]) -> dict[int, float]:
        """Score of every document sharing a term with ``query`` (repeated terms count again)."""
        k1, b, avgdl = self.k1, self.b, self.avgdl or 1.0
        out: dict[int, float] = {}
        for q in query:
            idf = self.idf.get(q)
            if idf is None:
                continue
            for i, f in self.postings(q):
                out[i] = out.get(i, 0.0) + idf * f * (k1 + 1) / (f + k1 * (1 - b + b * self.lens[i] / avgdl))
        return out

    def top(self, query: Sequence[str], k: int) -> list[tuple[int, float]]:
        """Best ``k`` documents; ties keep document order (as a stable sort does)."""
        s = self.scores(query)
        return sorted(s.items(), key=lambda kv: (-kv[1], kv[0]))[:k]


def session_date_words(ts: float | None) -> str:
    """A session's date in words ("1:56 pm on 8 May, 2023"), so dates are searchable."""
    if not ts:
        return ""
    t = time.localtime(ts)
    hour = t.tm_hour % 12 or 12
    return f"{hour}:{t.tm_min:02d} {'am' if t.tm_hour < 12 else 'pm'} on {t.tm_mday} " \
           f"{time.strftime('%B', t)}, {t.tm_year}"


SPEAKER = re.compile(  # a chat transcript's "Name: …" opening
    r"^\s*([A-Z][\w'.-]{0,30}(?: [A-Z][\w'.-]{0,30})?):\s")
SPEAKER_SHARE = 0.2   # a "Name:" opening at least this share of a scope's turns marks a transcript speaker;
TRANSCRIPT_SHARE = 0.8  # … in a transcript (this share of turns open with a name) every name of
SPEAKER_MIN_SHARE = 0.02  # … at least this share is one (a group chat of many voices)


class ScopeCorpus:
    """Turn and session documents of one scope with their Okapi indexes."""

    def __init__(self, rows: list[Row]) -> None:
        heads: dict[str, int] = {}
        for r in rows:
            if m := SPEAKER.match(r[2] or ""):
                heads[m.group(1)] = heads.get(m.group(1), 0) + 1
        # chat transcripts ("Caroline: …" on every turn): who speaks; not "Error:" or "Fix:" openings
        least = SPEAKER_MIN_SHARE if sum(heads.values()) >= TRANSCRIPT_SHARE * len(rows) else SPEAKER_SHARE
        self.speakers = frozenset(n for n, c in heads.items() if c >= max(2, least * len(rows)))
        self.ids = [r[0] for r in rows]
        self.session_of = {r[0]: r[1] for r in rows}
        texts = ["\n".join(x for x in (r[2], r[3], r[4]) if x) for r in rows]
        self._texts: list[str] | None = texts
        self._turns: Okapi | None = None
        self._turns_lock = threading.Lock()
        sessions: dict[str, list[int]] = {}
        for i, r in enumerate(rows):
            sessions.setdefault(r[1], []).append(i)
        self.session_keys = list(sessions)
        docs = []
        for key in self.session_keys:
            idx = sessions[key]
            start = min((float(rows[i][5] or 0) for i in idx if rows[i][5]), default=None)
            docs.append(session_date_words(start) + " " + " ".join(texts[i] for i in idx))
        self.sessions = Okapi([tokenize(d) for d in docs])

    @property
    def turns(self) -> Okapi:
        """The turn documents' index, built on first use (only exact-bm25 configurations rank
        turns with it; the default ranking uses the session documents and the speakers)."""
        with self._turns_lock:
            if self._turns is None:
                self._turns = Okapi([tokenize(t) for t in self._texts or []])
                self._texts = None
            return self._turns

    def top_turns(self, words: Sequence[str], k: int) -> list[tuple[str, float]]:
        return [(self.ids[i], s) for i, s in self.turns.top(words, k)]

    def top_sessions(self, words: Sequence[str], k: int) -> list[tuple[str, float]]:
        return [(self.session_keys[i], s) for i, s in self.sessions.top(words, k)]


STALE_FROM = 500     # scopes this big rebuild in the background after a few new turns …
STALE_MAX_NEW = 50   # … (at most this many), and rank with the previous corpus meanwhile


class Corpora:
    """The scope corpora of one store (held by its RecallContext): the newest few by key (scope +
    version stamp) and, per scope, the latest one built."""

    def __init__(self) -> None:
        self._cache: dict[tuple[object, ...], ScopeCorpus] = {}
        self._latest: dict[object, tuple[int, ScopeCorpus]] = {}  # scope → (turns, newest corpus)
        self._building: set[object] = set()
        self._lock = threading.Lock()

    def get(self, key: tuple[object, ...], load: Callable[[], list[Row]], *, base: object = None, size: int = 0,
            rebuild: Callable[[], tuple[tuple[object, ...], list[Row]]] | None = None) -> ScopeCorpus:
        """The cached corpus for ``key`` (scope + version stamp), built by ``load()`` when missing.

        Live capture writes a turn before almost every recall, and rebuilding a few thousand
        turns' documents costs 0.1–0.3 s. So for a scope (``base``) of STALE_FROM+ turns that only
        grew by up to STALE_MAX_NEW turns since its last corpus, that corpus answers now and
        ``rebuild()`` (its own connection; returns the new key and rows) runs on a background
        thread. Shrunk scopes (deletions) always rebuild before answering.
        """
        with self._lock:
            got = self._cache.get(key)
            prev = self._latest.get(base) if base is not None else None
        if got is not None:
            return got
        if (prev is not None and rebuild is not None and size >= STALE_FROM
                and 0 <= size - prev[0] <= STALE_MAX_NEW):
            self._rebuild_later(base, rebuild)
            return prev[1]
        built = ScopeCorpus(load())
        self._remember(key, base, size, built)
        return built

    def _remember(self, key: tuple[object, ...], base: object, size: int, built: ScopeCorpus) -> None:
        with self._lock:
            if len(self._cache) >= 8:
                self._cache.pop(next(iter(self._cache)))
            self._cache[key] = built
            if base is not None:
                self._latest[base] = (size, built)
                if len(self._latest) > 64:
                    self._latest.pop(next(iter(self._latest)))

    def _rebuild_later(self, base: object, rebuild: Callable[[], tuple[tuple[object, ...], list[Row]]]) -> None:
        with self._lock:
            if base in self._building:
                return
            self._building.add(base)

        def work() -> None:
            from ..threads import background_priority

            background_priority()
            try:
                key, rows = rebuild()
                self._remember(key, base, len(rows), ScopeCorpus(rows))
            except Exception as e:  # the next recall rebuilds in the foreground instead
                log.debug("background corpus rebuild failed: %s", e)
            finally:
                with self._lock:
                    self._building.discard(base)

        threading.Thread(target=work, name="remem-corpus", daemon=True).start()

    def forget(self) -> None:
        """Drop every cached corpus — after deletions."""
        with self._lock:
            self._cache.clear()
            self._latest.clear()

"""The text index (``store.text``): word / CJK search (FTS5 bm25), trigram substrings, word statistics.

Recall hands in terms from its own query parse (``store.protocols.TextQuery``); the FTS5 syntax is
built here only, every term quoted, so user text is never spliced into a MATCH expression.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from typing import TYPE_CHECKING

from ...scope import Scope
from ...text.segment import bigrams
from ..dfcache import PRELOAD_DOC, DocFreqs
from ..protocols import TextQuery, TextTerm
from .candidates import TURN_TIME

if TYPE_CHECKING:
    from . import SqliteStore

log = logging.getLogger("remem.recall")

# bm25 column weights of turns_fts: request, reply, summary, actions, cjk
BM25 = "bm25(turns_fts, 3.0, 1.5, 0.8, 2.0, 2.0)"
# Ranking the matches first and checking the scope of the best few after is a third of the
# cost of joining every match with its turn (21 → 7 ms for 7,000 matches at 100k turns), when
# the scope holds most of the store (one developer's memory). Per scope, the share of ranked
# matches found in it last time decides whether to try that way first.
FTS_FIRST_SHARE = 0.3
WINDOW_SPAN = 62 * 86400.0  # a time range up to two months narrows the match to its turns' rowids


def quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'



def term_expression(t: TextTerm) -> str:
    """One term as FTS5 syntax: a quoted word (``*`` for a prefix); a CJK term as the phrase of its
    bigrams on the ``cjk`` column (one character: a prefix there)."""
    if t.cjk:
        return f"cjk : {quote(t.text)}*" if len(t.text) == 1 else "cjk : " + quote(" ".join(bigrams(t.text)))
    return f"{quote(t.text)}*" if t.prefix else quote(t.text)


def match_expression(q: TextQuery) -> str:
    """The MATCH expression of a query: its terms OR-ed (AND-ed with ``every``), each once."""
    return (" AND " if q.every else " OR ").join(dict.fromkeys(term_expression(t) for t in q.terms))


UNINDEXED_SCAN = 5000   # newest turns not yet in the trigram index that a substring search scans


def trigram_expression(terms: list[str]) -> str:
    return " OR ".join(quote(t) for t in terms if len(t) >= 3)


class SqliteText:
    """``store.text`` of the SQLite engine (turns_fts, turns_trgm, turns_fts_vocab)."""

    def __init__(self, store: SqliteStore) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._in_scope: dict[Scope, float] = {}               # scope → share of ranked matches in it
        self._df = DocFreqs()

    # -- statistics ------------------------------------------------------------------------------
    def size(self) -> int:
        """Approximate number of turns ever indexed (the newest rowid): cheap, for size thresholds."""
        return int(self.store.conn.execute("SELECT coalesce(max(rowid), 0) FROM turns").fetchone()[0])

    def doc_freqs(self, terms: list[str]) -> tuple[int, dict[str, int]]:
        """(approximate corpus size, documents holding each term) over all turns, cached.

        Statistics only (no memory text, no ids): used to leave very common words out of a query
        and to weigh a prompt's words (recall/coverage.py)."""
        def lookup(missing: list[str]) -> dict[str, int]:
            marks = ",".join("?" * len(missing))
            return dict(self.store.conn.execute(f"SELECT term, doc FROM turns_fts_vocab WHERE term IN ({marks})",
                                                missing).fetchall())

        n = self.size()
        return n, self._df.get(terms, lookup, n)

    def warm_doc_freqs(self) -> int:
        """Count every word once, now (one pass over the word index: ~1 s at 100k real-shaped turns),
        and keep the common ones, so the first prompts after a start do not count their words
        one by one. Returns how many were kept."""
        n = self.size()
        rows = self.store.conn.execute("SELECT term, doc FROM turns_fts_vocab WHERE doc >= ?",
                                       [PRELOAD_DOC]).fetchall()   # not the millions of rare ones in Python
        return self._df.preload(dict(rows), n)

    def forget(self) -> None:
        self._df.clear()
        with self._lock:
            self._in_scope.clear()

    # -- word / CJK search (bm25) ----------------------------------------------------------------
    def search_words(self, scope: Scope, query: TextQuery, limit: int, *, since: float | None = None,
                     until: float | None = None, newest: bool = False) -> list[tuple[str, float]]:
        """bm25 over the word and CJK index inside scope (and a time range), best first (turn id,
        higher is better); a query the index rejects matches nothing.

        ``newest``: rank only the newest ``limit`` matches (FTS5 walks its postings backwards and
        stops), for queries whose words are all so common that scoring every match costs the most
        and tells the least."""
        expr = match_expression(query)
        if not expr:
            return []
        return self._fts(scope, expr, limit, since=since, until=until, newest=newest)

    def _fts(self, scope: Scope, expr: str, limit: int, *, since: float | None = None, until: float | None = None,
             newest: bool = False) -> list[tuple[str, float]]:
        db = self.store.conn
        where, params = scope.sql("t")
        extra, args = "", []
        if since is not None and until is not None and until - since <= WINDOW_SPAN:
            # the rowids of the range's turns, from the (owner, time) index: FTS5 then reads only that
            # stretch of each term's postings (51 → 3 ms for a day at 100k turns; the same rows)
            owners, oparams = Scope(scope.owners).sql()   # the owners only: the index holds no project
            lo, hi = db.execute(f"SELECT min(rowid), max(rowid) FROM turns WHERE {owners} "
                                f"AND {TURN_TIME} >= ? AND {TURN_TIME} < ?", [*oparams, since, until]).fetchone()
            if lo is None:
                return []
            extra, args = " AND turns_fts.rowid BETWEEN ? AND ?", [lo, hi]
        if since is not None:
            extra += f" AND {TURN_TIME} >= ?"
            args.append(since)
        if until is not None:
            extra += f" AND {TURN_TIME} < ?"
            args.append(until)
        sql = (f"SELECT t.id, {BM25} AS s FROM turns_fts "
               f"JOIN turns t ON t.rowid = turns_fts.rowid WHERE turns_fts MATCH ? AND {where} AND t.deleted = 0"
               f"{extra} ORDER BY " + ("turns_fts.rowid DESC" if newest else "s, t.rowid") + " LIMIT ?")
        try:
            if not extra and not newest:
                got = self._fts_first(scope, expr, limit)
                if got is not None:
                    return got
            hits = [(r[0], -float(r[1])) for r in db.execute(sql, [expr, *params, *args, limit])]
            return sorted(hits, key=lambda h: -h[1]) if newest else hits
        except sqlite3.OperationalError as e:
            log.debug("fts query rejected: %s", e)
            return []

    def _fts_first(self, scope: Scope, expr: str, limit: int) -> list[tuple[str, float]] | None:
        """The scope's best ``limit`` matches, from the best matches overall; None when too few of
        those are in scope (the caller then joins every match with its turn)."""
        db = self.store.conn
        share = self._in_scope.get(scope, 1.0)
        if share < FTS_FIRST_SHARE:
            return None
        want = min(8 * limit, int(limit / share * 1.5) + 8)
        ranked = db.execute(f"SELECT rowid, {BM25} AS s FROM turns_fts WHERE turns_fts MATCH ? ORDER BY s, rowid "
                            f"LIMIT ?", (expr, want)).fetchall()
        if not ranked:
            return []
        where, params = scope.sql(by_key=True)
        marks = ",".join("?" * len(ranked))
        ids = dict(db.execute(f"SELECT rowid, id FROM turns WHERE rowid IN ({marks}) AND {where} AND deleted = 0",
                              [r[0] for r in ranked] + list(params)).fetchall())
        with self._lock:
            if len(self._in_scope) > 256:
                self._in_scope.clear()
            self._in_scope[scope] = len(ids) / len(ranked)
        hits = [(ids[r], -float(sc)) for r, sc in ranked if r in ids]
        if len(hits) >= limit or len(ranked) < want:  # enough, or every match was ranked
            return hits[:limit]
        return None

    # -- substrings ------------------------------------------------------------------------------
    def search_substrings(self, scope: Scope, terms: list[str], limit: int) -> list[tuple[str, float]]:
        """Trigram search for any of ``terms`` (identifiers, partial words, CJK runs of ≥ 3 characters)."""
        expr = trigram_expression(terms)
        if not expr:
            return []
        where, params = scope.sql("t")
        sql = (f"SELECT t.id, bm25(turns_trgm) AS s FROM turns_trgm JOIN turns t ON t.rowid = turns_trgm.rowid "
               f"WHERE turns_trgm MATCH ? AND {where} AND t.deleted = 0 ORDER BY s LIMIT ?")
        try:
            hits = [(r[0], -float(r[1])) for r in self.store.conn.execute(sql, [expr, *params, limit])]
        except sqlite3.OperationalError:
            hits = []
        return self._with_unindexed(scope, [t for t in terms if len(t) >= 3], hits, limit)

    def _with_unindexed(self, scope: Scope, terms: list[str], hits: list[tuple[str, float]],
                        limit: int) -> list[tuple[str, float]]:
        """``hits`` and the turns the trigram index does not hold yet (an import leaves them to the
        background index job): the newest ``UNINDEXED_SCAN`` of those are scanned for the terms
        (case-folded as the trigram index folds ASCII), each scored as the best indexed hit times
        the share of the terms it holds, so recall right after a sync misses nothing."""
        if not terms:
            return hits
        where, params = scope.sql("t")
        folded = [t.lower() for t in terms]
        any_of = " OR ".join("instr(lower(t.request), ?) > 0 OR instr(lower(t.actions), ?) > 0" for _ in folded)
        rows = self.store.conn.execute(
            # driven from the backlog (CROSS JOIN keeps that order): an owner's scope index would
            # otherwise lead, and the check walks every turn of the owner (13 ms at 100k, 0.1 with this)
            f"SELECT t.id, lower(t.request), lower(t.actions) FROM "
            f"(SELECT rowid AS r FROM turns WHERE trgm = 0 ORDER BY rowid DESC LIMIT ?) todo "
            f"CROSS JOIN turns t ON t.rowid = todo.r WHERE {where} AND t.deleted = 0 "
            f"AND ({any_of}) ORDER BY t.rowid DESC LIMIT ?",
            [UNINDEXED_SCAN, *params, *[x for t in folded for x in (t, t)], limit]).fetchall()
        if not rows:
            return hits
        top = hits[0][1] if hits else 1.0
        seen = {h[0] for h in hits}
        more = [(tid, top * sum(1 for t in folded if t in req or t in act) / len(folded))
                for tid, req, act in rows if tid not in seen]
        return sorted(hits + more, key=lambda h: -h[1])[:limit]

    def search_short(self, scope: Scope, needle: str, limit: int, scan_limit: int = 3000) -> list[tuple[str, float]]:
        """A plain scan of the newest turns for a needle too short for the trigram index (1–2 characters)."""
        if not needle:
            return []
        where, params = scope.sql()
        sql = (f"SELECT id FROM (SELECT id, request, reply FROM turns WHERE {where} AND deleted = 0 "
               f"ORDER BY rowid DESC LIMIT ?) WHERE instr(request, ?) > 0 OR instr(reply, ?) > 0 LIMIT ?")
        rows = self.store.conn.execute(sql, [*params, scan_limit, needle, needle, limit]).fetchall()
        return [(r[0], 1.0) for r in rows]

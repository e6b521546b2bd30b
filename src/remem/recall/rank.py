"""Ranking maths: weighted RRF, agreement bonus, adaptive threshold, MMR, decay and boosts.

Pure functions of plain values (no database, no numpy), unit-tested with tables of cases.
Every function that changes a score says how in the details it returns, so a result can
always explain itself.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

RRF_K = 60
DAY = 86400.0

Hits = Sequence[tuple[str, float]]


def rrf(channels: Mapping[str, Hits], weights: Mapping[str, float] | None = None,
        k: int = RRF_K) -> tuple[dict[str, float], dict[str, dict[str, dict[str, Any]]]]:
    """Weighted reciprocal rank fusion: ``Σ_c w_c / (k + rank_c)``.

    Returns (fused score by id, details by id → channel → {rank, score, weight}). A channel
    with weight 0 still shows up in the details (it explains), but adds nothing.
    """
    fused: dict[str, float] = {}
    details: dict[str, dict[str, dict[str, Any]]] = {}
    for name, hits in channels.items():
        w = 1.0 if weights is None else float(weights.get(name, 1.0))
        for rank, (item, score) in enumerate(hits, start=1):
            fused[item] = fused.get(item, 0.0) + w / (k + rank)
            details.setdefault(item, {})[name] = {"rank": rank, "score": score, "weight": w}
    return fused, details


def agreement_bonus(fused: Mapping[str, float], details: Mapping[str, Mapping[str, Any]],
                    bonus: float = 0.1, counted: Iterable[str] | None = None) -> dict[str, float]:
    """Multiply an item's score by ``1 + bonus·(n − 1)`` when n ≥ 2 counted channels found it."""
    keep = set(counted) if counted is not None else None
    out = {}
    for item, score in fused.items():
        n = sum(1 for c in details.get(item, {}) if keep is None or c in keep)
        out[item] = score * (1.0 + bonus * max(0, n - 1))
    return out


def adaptive_threshold(scored: Sequence[tuple[str, float]], ratio: float,
                       min_keep: int = 1) -> list[tuple[str, float]]:
    """Keep items scoring at least ``ratio`` × the best (input sorted best first)."""
    if not scored or ratio <= 0:
        return list(scored)
    floor = scored[0][1] * ratio
    return [x for i, x in enumerate(scored) if i < min_keep or x[1] >= floor]


def decay(age_seconds: float, half_life_days: float) -> float:
    """0.5 ** (age / half-life): 1 for now, 0.5 after one half-life. Future times count as now."""
    if half_life_days <= 0:
        return 1.0
    return 0.5 ** (max(0.0, age_seconds) / (half_life_days * DAY))


def boost_factors(*, age_seconds: float | None, importance: float, status: str, access_count: int,
                  recency_weight: float, half_life_days: float, importance_weight: float,
                  failed_penalty: float, access_weight: float = 0.0) -> dict[str, float]:
    """The multiplicative boosts for one item, by name; the product is applied to its score."""
    out: dict[str, float] = {}
    if recency_weight and age_seconds is not None:
        out["recency"] = round(1.0 + recency_weight * decay(age_seconds, half_life_days), 4)
    if importance_weight:
        out["importance"] = round(1.0 + importance_weight * (importance - 0.5), 4)
    if failed_penalty and status == "failed":
        out["failed"] = round(1.0 - failed_penalty, 4)
    if access_weight and access_count > 0:
        out["access"] = round(1.0 + access_weight * math.log1p(access_count) / math.log(10), 4)
    return out


def apply_boosts(score: float, factors: Mapping[str, float]) -> float:
    for f in factors.values():
        score *= f
    return score


def spread(scores: Mapping[str, float], groups: Mapping[str, str], neighbours: Mapping[str, Sequence[str]],
           *, session_weight: float, neighbour_weight: float,
           session_top: int = 2) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """Use a turn's session and neighbours as evidence.

    * session: every candidate gains ``session_weight`` × (mean of its session's best
      ``session_top`` scores), so a turn in a strongly matching session rises;
    * neighbours: a turn gains ``neighbour_weight`` × its best neighbour's score (the turn
      after a question often holds the answer).
    Scores of items that are only neighbours start at 0. Returns (new scores, added parts).
    """
    by_group: dict[str, list[float]] = {}
    for item, s in scores.items():
        g = groups.get(item)
        if g:
            by_group.setdefault(g, []).append(s)
    group_score = {}
    for g, vals in by_group.items():
        vals.sort(reverse=True)
        top = vals[:session_top]
        group_score[g] = sum(top) / session_top
    items = set(scores) | set(neighbours)
    for nb in neighbours.values():
        items.update(nb)
    out: dict[str, float] = {}
    parts: dict[str, dict[str, float]] = {}
    for item in items:
        base = scores.get(item, 0.0)
        add: dict[str, float] = {}
        g = groups.get(item)
        if session_weight and g in group_score:
            add["session"] = session_weight * group_score[g]
        if neighbour_weight:
            best = max((scores.get(n, 0.0) for n in neighbours.get(item, ())), default=0.0)
            if best > 0:
                add["neighbour"] = neighbour_weight * best
        out[item] = base + sum(add.values())
        if add:
            parts[item] = {k: round(v, 6) for k, v in add.items()}
    return out, parts


def mmr(candidates: Sequence[tuple[str, float]], similarity: Callable[[str, str], float], *, k: int,
        lam: float = 0.7, group_of: Callable[[str], str] | None = None, group_cap: int = 0,
        ) -> list[tuple[str, float]]:
    """Maximal marginal relevance: greedily pick ``λ·rel − (1−λ)·max_sim(picked)``.

    Relevance is normalised to the best candidate. ``group_cap`` > 0 keeps at most that
    many items per group (e.g. per session). λ = 1 keeps the relevance order. Returns the
    picked (item, original score) in pick order.
    """
    if not candidates or k <= 0:
        return []
    top = max(s for _, s in candidates) or 1.0
    remaining = list(candidates)
    near = [0.0] * len(remaining)   # each candidate's highest similarity to what is picked so far
    picked: list[tuple[str, float]] = []
    per_group: dict[str, int] = {}
    while remaining and len(picked) < k:
        best_i, best_v = -1, -math.inf
        for i, (item, s) in enumerate(remaining):
            if group_cap and group_of is not None and per_group.get(group_of(item), 0) >= group_cap:
                continue
            rel = s / top
            v = rel if lam >= 1.0 or not picked else lam * rel - (1.0 - lam) * near[i]
            if v > best_v:
                best_i, best_v = i, v
        if best_i < 0:
            break
        item, s = remaining.pop(best_i)
        near.pop(best_i)
        picked.append((item, s))
        if lam < 1.0:  # only the new pick can raise a candidate's highest similarity
            near = [max(n, similarity(other, item)) for (other, _), n in zip(remaining, near, strict=True)]
        if group_of is not None:
            g = group_of(item)
            per_group[g] = per_group.get(g, 0) + 1
    return picked


def jaccard(a: set[str], b: set[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)

"""Ranking maths: tables of plain cases for RRF, agreement, threshold, decay, boosts, evidence, MMR."""

from __future__ import annotations

import pytest

from remem.recall import rank as rk


@pytest.mark.parametrize("channels,weights,k,expect", [
    ({"a": [("x", 9), ("y", 5)]}, None, 60, {"x": 1 / 61, "y": 1 / 62}),
    ({"a": [("x", 1)], "b": [("x", 1)]}, None, 60, {"x": 2 / 61}),
    ({"a": [("x", 1)], "b": [("y", 1)]}, {"a": 2.0, "b": 0.5}, 10, {"x": 2 / 11, "y": 0.5 / 11}),
    ({"a": [("x", 1)], "b": [("y", 1)]}, {"a": 1.0, "b": 0.0}, 10, {"x": 1 / 11, "y": 0.0}),
    ({}, None, 60, {}),
])
def test_rrf(channels, weights, k, expect):
    fused, details = rk.rrf(channels, weights, k=k)
    assert fused == pytest.approx(expect)
    for item in expect:
        assert set(details[item]) == {c for c, hits in channels.items() if any(i == item for i, _ in hits)}


def test_rrf_details_keep_rank_score_weight():
    _, d = rk.rrf({"bm25": [("a", 3.14159), ("b", 1.0)]}, {"bm25": 0.7})
    assert d["b"]["bm25"] == {"rank": 2, "score": 1.0, "weight": 0.7}
    assert d["a"]["bm25"]["score"] == 3.14159  # raw: rounding happens where details are shown


@pytest.mark.parametrize("n_channels,bonus,factor", [(1, 0.1, 1.0), (2, 0.1, 1.1), (3, 0.1, 1.2), (3, 0.0, 1.0)])
def test_agreement_bonus(n_channels, bonus, factor):
    details = {"x": {f"c{i}": {} for i in range(n_channels)}}
    assert rk.agreement_bonus({"x": 1.0}, details, bonus)["x"] == pytest.approx(factor)


def test_agreement_counts_only_listed_channels():
    details = {"x": {"bm25": {}, "recency": {}}}
    assert rk.agreement_bonus({"x": 1.0}, details, 0.5, counted=["bm25"])["x"] == 1.0


@pytest.mark.parametrize("scores,ratio,keep", [
    ([("a", 1.0), ("b", 0.5), ("c", 0.2)], 0.4, ["a", "b"]),
    ([("a", 1.0), ("b", 0.5), ("c", 0.2)], 0.0, ["a", "b", "c"]),
    ([("a", 1.0), ("b", 0.1)], 0.99, ["a"]),
    ([], 0.5, []),
])
def test_adaptive_threshold(scores, ratio, keep):
    assert [x for x, _ in rk.adaptive_threshold(scores, ratio)] == keep


@pytest.mark.parametrize("age_days,half_life,expect", [(0, 30, 1.0), (30, 30, 0.5), (60, 30, 0.25),
                                                       (-5, 30, 1.0), (10, 0, 1.0)])
def test_decay(age_days, half_life, expect):
    assert rk.decay(age_days * rk.DAY, half_life) == pytest.approx(expect)


def test_boost_factors_by_name():
    f = rk.boost_factors(age_seconds=0, importance=1.0, status="failed", access_count=9, recency_weight=0.2,
                         half_life_days=30, importance_weight=0.2, failed_penalty=0.3, access_weight=0.1)
    assert f == {"recency": 1.2, "importance": 1.1, "failed": 0.7, "access": 1.1}
    assert rk.apply_boosts(2.0, {"a": 1.5, "b": 0.5}) == pytest.approx(1.5)
    assert rk.boost_factors(age_seconds=None, importance=0.5, status="succeeded", access_count=0,
                            recency_weight=0.2, half_life_days=30, importance_weight=0.2,
                            failed_penalty=0.3) == {"importance": 1.0}


def test_spread_neighbours_and_sessions():
    scores = {"q": 1.0, "other": 0.2}
    groups = {"q": "s1", "answer": "s1", "other": "s2"}
    out, parts = rk.spread(scores, groups, {"answer": ["q"]}, session_weight=0.0, neighbour_weight=0.5)
    assert out["answer"] == pytest.approx(0.5) and parts["answer"] == {"neighbour": 0.5}
    assert out["q"] == 1.0 and "q" not in parts
    out, parts = rk.spread(scores, groups, {}, session_weight=1.0, neighbour_weight=0.0, session_top=1)
    assert out["q"] == pytest.approx(2.0) and out["other"] == pytest.approx(0.4)


@pytest.mark.parametrize("lam,cap,expect", [
    (1.0, 0, ["a1", "a2", "b1"]),      # relevance order
    (1.0, 1, ["a1", "b1", "c1"]),      # one per session
    (0.3, 0, ["a1", "b1", "c1"]),      # near-duplicates pushed down
])
def test_mmr(lam, cap, expect):
    cands = [("a1", 1.0), ("a2", 0.95), ("b1", 0.9), ("c1", 0.5)]
    text = {"a1": {"x", "y"}, "a2": {"x", "y"}, "b1": {"z"}, "c1": {"w"}}
    picked = rk.mmr(cands, lambda p, q: rk.jaccard(text[p], text[q]), k=3, lam=lam,
                    group_of=lambda t: t[0], group_cap=cap)
    assert [p for p, _ in picked] == expect


def test_mmr_edge_cases():
    assert rk.mmr([], lambda a, b: 0.0, k=3) == []
    assert rk.mmr([("a", 1.0)], lambda a, b: 0.0, k=0) == []
    assert rk.jaccard(set(), {"a"}) == 0.0

"""Benchmark harnesses: the LoCoMo metric reproduces the reference, both harnesses run end to end."""

from __future__ import annotations

import json
import sqlite3

import pytest

from conftest import SHARED
from remem.cli.bench import harness

LOCOMO_DEV = SHARED / "bench" / "locomo-dev.json"


def _locomo_sample():
    def turn(d, s, text, **kw):
        return {"speaker": s, "dia_id": d, "text": text, **kw}
    conv = {
        "speaker_a": "Ann", "speaker_b": "Bo",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [turn("D1:1", "Ann", "I adopted a puppy named Rex yesterday!"),
                      turn("D1:2", "Bo", "Lovely! What breed is Rex?"),
                      turn("D1:3", "Ann", "A beagle. He loves the park.", blip_caption="a dog in a park")],
        "session_2_date_time": "10:00 am on 20 June, 2023",
        "session_2": [turn("D2:1", "Bo", "I started pottery classes in June."),
                      turn("D2:2", "Ann", "Nice, pottery sounds relaxing."),
                      turn("D2:3", "Bo", "My first bowl cracked in the kiln though.")],
    }
    qa = [{"question": "What breed is Ann's puppy Rex?", "answer": "beagle", "evidence": ["D1:3"], "category": 4},
          {"question": "When did Bo start pottery classes?", "answer": "June 2023", "evidence": ["D:2:01"],
           "category": 2},
          {"question": "What did Ann adopt and what happened to Bo's bowl?", "answer": "x",
           "evidence": ["D1:1; D2:3"], "category": 1},
          {"question": "What is Bo's cat called?", "adversarial_answer": "none", "evidence": ["D9:9"],
           "category": 5},
          {"question": "What did Ann say about the park?", "answer": "loves it", "evidence": ["D1:3"],
           "category": 5}]
    return [{"sample_id": "conv-x", "conversation": conv, "qa": qa}]


@pytest.mark.parametrize("raw,expect", [(["D8:6; D9:17"], ["D8:6", "D9:17"]), (["D:11:26"], ["D11:26"]),
                                        (["D30:05"], ["D30:5"]), (["D99:1", "D1:1"], ["D1:1"]),
                                        (["D1:1", "D1:1"], ["D1:1"])])
def test_evidence_normalisation(raw, expect):
    h = harness("locomo")
    valid = {"D8:6", "D9:17", "D11:26", "D30:5", "D1:1"}
    assert h.norm_evidence(raw, valid) == expect


@pytest.mark.parametrize("ranked,gold,expect", [
    (["a", "b", "c"], {"a"}, {"recall_any@1": 1.0, "recall_all@1": 1.0, "ndcg@10": 1.0}),
    (["b", "a"], {"a", "c"}, {"recall_any@1": 0.0, "recall_all@1": 0.0}),
    (["b", "a", "c"], {"a", "c"}, {"recall_any@5": 1.0, "recall_all@5": 1.0}),
])
def test_metric(ranked, gold, expect):
    h = harness("locomo")
    m = h.score(ranked, gold, (1, 5))
    for k, v in expect.items():
        assert m[k] == pytest.approx(v)


def test_locomo_cli_json_shape(tmp_path, cli):
    f = tmp_path / "locomo.json"
    f.write_text(json.dumps(_locomo_sample()))
    r = cli("bench", "locomo", "--data", str(f), "--json")
    assert r.returncode == 0, r.stderr.decode()
    res = json.loads(r.stdout)
    t, s = res["turn"]["cats_1_4"], res["session"]["cats_1_4"]
    assert t["n"] == 3 and set(t) >= {"n", "recall_any@1", "recall_any@5", "recall_all@5", "recall_any@10", "ndcg@10"}
    assert set(s) >= {"n", "recall_any@5", "recall_all@5", "ndcg@10"}
    assert res["turn"]["cat_5"]["n"] == 1 and res["questions_skipped"] == 1
    assert res["session"]["cats_1_4"]["recall_any@5"] == 100.0   # two sessions, top 5 holds both
    assert res["config"]["name"] == "default" and "query_s" in res["timing"]
    assert res["turn"]["by_category"]["single-hop"]["recall_any@5"] == 100.0


def test_locomo_home_keeps_the_store_for_later_runs(tmp_path, cli):
    f = tmp_path / "locomo.json"
    f.write_text(json.dumps(_locomo_sample()))
    home = tmp_path / "kept"
    runs = [cli("bench", "locomo", "--data", str(f), "--home", str(home), "--json") for _ in range(2)]
    assert all(r.returncode == 0 for r in runs), runs[-1].stderr.decode()
    first, second = (json.loads(r.stdout) for r in runs)
    assert (home / "remem.db").exists()
    assert first["turn"] == second["turn"]  # the second run met the same store, not a doubled one
    con = sqlite3.connect(home / "remem.db")
    assert con.execute("SELECT count(*) FROM turns").fetchone()[0] == first["turns"]


def test_locomo_reference_configuration_on_tiny_data(tmp_path):
    """bm25-reference on a tiny file equals plain Okapi BM25 computed by hand."""
    h = harness("locomo")
    f = tmp_path / "locomo.json"
    f.write_text(json.dumps(_locomo_sample()))
    res = h.run(str(f), config="bm25-reference")
    assert res["config"]["lexical"] == "okapi" and res["config"]["weights"] == {"bm25": 1.0}
    assert res["turn"]["by_category"]["temporal"]["recall_any@1"] == 100.0   # "pottery" and "classes"
    assert res["turn"]["by_category"]["single-hop"]["recall_any@5"] == 100.0


@pytest.mark.skipif(not LOCOMO_DEV.exists(), reason="../shared/bench/locomo-dev.json not present")
def test_locomo_reproduces_reference_bm25():
    """The plain BM25 configuration, through the real pipeline and search, gives the reference
    script's numbers on the development split (takes about a minute)."""
    res = harness("locomo").run(str(LOCOMO_DEV), config="bm25-reference")
    t, s = res["turn"]["cats_1_4"], res["session"]["cats_1_4"]
    assert t["n"] == s["n"] == 760
    assert (t["recall_any@5"], t["recall_all@5"], t["ndcg@10"]) == (49.2, 41.3, 38.8)
    assert s["recall_any@5"] == 89.7


def _lme_sample():
    def sess(*pairs, answer=False):
        out = []
        for u, a in pairs:
            out += [{"role": "user", "content": u, **({"has_answer": True} if answer else {})},
                    {"role": "assistant", "content": a}]
        return out
    hay_ids = ["s_a", "answer_1", "s_b", "answer_2"]
    hay = [sess(("I like hiking in the alps", "Sounds great")),
           sess(("My dog is called Biscuit", "Cute name!"), answer=True),
           sess(("Recommend a pasta recipe", "Try carbonara")),
           sess(("What should I cook tonight?", "You mentioned your sister Maya loves tacos"))]
    dates = ["2023/05/20 (Sat) 02:21", "2023/05/21 (Sun) 10:00", "2023/05/22 (Mon) 11:00", "2023/05/23 (Tue) 12:00"]
    base = {"haystack_session_ids": hay_ids, "haystack_sessions": hay, "haystack_dates": dates}
    # q2's evidence is an assistant reply: no user turn carries has_answer in its haystack
    base2 = {**base, "haystack_sessions": [hay[0], sess(("My dog is called Biscuit", "Cute name!")), *hay[2:]]}
    return [
        {"question_id": "q1", "question_type": "single-session-user", "question": "What is my dog called?",
         "answer": "Biscuit", "answer_session_ids": ["answer_1"], **base},
        {"question_id": "q2", "question_type": "single-session-assistant", "question": "Who loves tacos?",
         "answer": "Maya", "answer_session_ids": ["answer_2"], **base2},
        {"question_id": "q3_abs", "question_type": "single-session-user", "question": "What is my cat called?",
         "answer": "unknown", "answer_session_ids": [], **base},
    ]


def test_longmemeval_official_and_lenient(tmp_path, cli):
    f = tmp_path / "lme.json"
    f.write_text(json.dumps(_lme_sample()))
    r = cli("bench", "longmemeval", "--data", str(f), "--json")
    assert r.returncode == 0, r.stderr.decode()
    res = json.loads(r.stdout)
    assert res["skipped"]["abstention"] == 1
    assert res["skipped"]["official: no user-side has_answer turn"] == 1    # q2's evidence is the assistant's
    assert res["official"]["n"] == 1 and res["lenient"]["n"] == 2
    assert res["official"]["recall_any@5"] == 100.0 and res["lenient"]["recall_any@5"] == 100.0
    assert set(res["official"]) >= {"recall_all@5", "recall_all@10", "ndcg@10", "by_type"}


def test_longmemeval_turn_pairing():
    h = harness("longmemeval")
    s = [{"role": "assistant", "content": "hi"}, {"role": "user", "content": "q"},
         {"role": "assistant", "content": "a"}, {"role": "user", "content": "q2"}]
    assert h.pair_turns(s, user_only=False) == [("hi", ""), ("q", "a"), ("q2", "")]
    assert h.pair_turns(s, user_only=True) == [("q", ""), ("q2", "")]
    assert h.parse_date("2023/05/20 (Sat) 02:21") is not None


def test_speed_harness_pure_parts():
    h = harness("recall_speed")
    [turns] = list(h.make_turns(50))
    assert len(turns) == 50 and len({t.source_key for t in turns}) == 50
    parts = list(h.make_turns(50, chunk=20))
    assert [len(p) for p in parts] == [20, 20, 10]
    assert [t.request for p in parts for t in p] == [t.request for t in turns]  # chunking changes nothing
    pts = [{"turns": 10_000, "turn_start_p50_ms": 10, "turn_start_p95_ms": 20, "search_p50_ms": 10,
            "search_p95_ms": 20, "vector_raw_mb": 20, "vector_index_mb": 22},
           {"turns": 100_000, "turn_start_p50_ms": 20, "turn_start_p95_ms": 40, "search_p50_ms": 19,
            "search_p95_ms": 38, "vector_raw_mb": 200, "vector_index_mb": 215}]
    est = h.estimate(pts, 1_000_000)
    assert est["estimated"] and est["vector_raw_mb"] == 2000 and est["search_p50_ms"] == pytest.approx(109.0)

"""What learning costs in a real home (remem.bench.learn_store) and ``remem bench learn``, which runs the
three learning benchmarks, on a synthesized SpecStory project."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from remem.bench import learn_store
from remem.cli import cli
from specstory_data import turn, two_sessions

PROJECT = "shopcart"


def _data(tmp_path: Path) -> tuple[str, str]:
    raw = tmp_path / "data" / "raw" / PROJECT
    two_sessions(raw)
    last = "2025-04-05_10-00-more.md"
    (raw / last).write_text(
        "# session\n\n" + turn("这个函数是做什么的？它返回什么？", "它计算购物车的总价。")
        + turn("run the tests for the coupons again please", "Ran them: all pass.", "bun test src/coupon-rules"),
        encoding="utf-8")
    labels = tmp_path / "labels"
    labels.mkdir()
    (labels / f"{PROJECT}.json").write_text(json.dumps({
        "items": [{"iid": "t-test", "kind": "fact", "statement": "Tests run with bun test.", "_slot": "cmd.test",
                   "_value": "bun test", "evidence": [{"session": "2025-04-01_10-00-cart-totals.md", "turn": 1}]}],
        "probes": [{"pid": "neg1", "type": "negative", "before": {"session": last, "turn": 1}, "expects": []},
                   {"pid": "lt1", "type": "later_task", "before": {"session": last, "turn": 2},
                    "expects": ["t-test"]}]}), encoding="utf-8")
    return str(tmp_path / "data"), str(labels)


def test_a_project_imported_learned_and_its_packets_measured_before_and_after(tmp_path):
    data, labels = _data(tmp_path)
    rep = learn_store.run(data, labels)
    row = rep["projects"][PROJECT]
    assert row["turns"] == 6 and row["prompts"] == 2
    assert row["active"] >= 1 and row["learned"] >= row["active"]        # the test command, run in 2 sessions
    assert row["db_bytes_after"] >= row["db_bytes_before"] > 0
    assert row["learn_turns_per_s"] > 0 and row["learn_s"] > 0           # a few milliseconds: kept to 0.1 ms
    # before learning no packet holds a learned memory; after it, "run the tests" gets the test command
    assert row["packets_with_learned"] == 0.5
    assert row["packet_tokens_before"] > 0 and row["packet_tokens_after"] > 0
    assert row["session_start_tokens"] > 0                               # the core: the test command
    o = rep["overall"]
    assert o["prompts"] == 2 and o["turns"] == 6 and o["packet_tokens_ratio"] is not None
    assert "packet tokens" in learn_store.render(rep)
    # without labels there are no probe prompts: the import, learn and growth are still measured
    bare = learn_store.run(data, None)["projects"][PROJECT]
    assert bare["prompts"] == 0 and bare["packet_tokens_after"] is None and bare["active"] >= 1


def test_remem_bench_learn_runs_the_three_and_refuses_a_folder_without_histories(tmp_path, remem_home, monkeypatch):
    data, labels = _data(tmp_path)
    monkeypatch.chdir(tmp_path)     # no bench/learn-labels here: without --labels there are none
    r = CliRunner().invoke(cli, ["bench", "learn", "--data", data, "--labels", labels, "--json"])
    assert r.exit_code == 0, r.output
    rep = json.loads(r.output)
    assert rep["extraction"]["overall"]["active"]["items"] == 1
    assert rep["extraction"]["overall"]["active"]["found"] == 1          # the test command, from the store's view too
    assert rep["packets"]["projects"][PROJECT]["later_task"] == "1/1"
    assert rep["store"]["projects"][PROJECT]["turns"] == 6
    r = CliRunner().invoke(cli, ["bench", "learn", "--data", data, "--labels", labels, "--no-packets", "--no-store"])
    assert r.exit_code == 0, r.output
    assert "== extraction" in r.output and "== packets" not in r.output and "== store" not in r.output
    # no labels: extraction counts what it learned, the packets are skipped with the reason
    r = CliRunner().invoke(cli, ["bench", "learn", "--data", data, "--no-store"])
    assert r.exit_code == 0, r.output
    assert "== packets\nno labels: give --labels" in r.output
    assert "== extraction" in r.output and "== store" not in r.output
    r = CliRunner().invoke(cli, ["bench", "learn", "--data", str(tmp_path)])
    assert r.exit_code == 2 and "no raw/ folder" in r.output

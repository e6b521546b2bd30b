"""Turn recall at the labelled probes of a real-history split (remem.bench.learn_recall), on a
synthesized SpecStory project."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remem.bench import learn_recall
from specstory_data import turn, two_sessions

PROJECT = "shopcart"
RULE = "store every coupon amount in integer cents, never as floating point dollars"


def _data(tmp_path: Path) -> tuple[str, str]:
    raw = tmp_path / "data" / "raw" / PROJECT
    two_sessions(raw)
    (raw / "2025-04-03_10-00-money.md").write_text(
        "# session\n\n" + turn(RULE, "Noted: amounts are integer cents."), encoding="utf-8")
    # the probe, and after it the rule said again (a later turn must not count as recalled)
    (raw / "2025-04-05_10-00-discounts.md").write_text(
        "# session\n\n" + turn("add a percentage discount, the amount in integer cents", "Added it.")
        + turn(RULE + " (again)", "Sorry: cents again."), encoding="utf-8")
    labels = tmp_path / "labels"
    labels.mkdir()
    (labels / f"{PROJECT}.json").write_text(json.dumps({
        "items": [{"iid": "cents", "kind": "convention", "statement": "Money is kept in integer cents.",
                   "evidence": [{"session": "2025-04-03_10-00-money.md", "turn": 1},
                                {"session": "2025-04-05_10-00-discounts.md", "turn": 2}]}],
        "probes": [{"pid": "np1", "type": "need_point", "before": {"session": "2025-04-05_10-00-discounts.md",
                                                                   "turn": 1}, "expects": ["cents"]},
                   {"pid": "neg", "type": "negative", "before": {"session": "2025-04-01_10-00-cart-totals.md",
                                                                 "turn": 1}, "expects": []}]}), encoding="utf-8")
    return str(tmp_path / "data"), str(labels)


def test_the_evidence_said_before_a_probe_is_found_and_later_turns_are_not_counted(tmp_path, remem_home):
    data, labels = _data(tmp_path)
    rep = learn_recall.run(data, labels, settings=["RARE_FROM=1,SUBSTRING_FROM=0"])
    assert rep["turns"] == 7 and rep["projects"] == 1
    base, pruned = rep["runs"]
    assert base["setting"] == "defaults" and pruned["setting"] == "RARE_FROM=1,SUBSTRING_FROM=0"
    o = base["overall"]
    # one case (the negative probe has nothing to recall; the restatement after the probe is not evidence
    # for it), found first: the later restatement shares more words but is not a past turn at the probe
    assert o["cases"] == 1 and o["recall_at_5"] == 1.0 and o["mrr"] == 1.0
    assert base["projects"][PROJECT]["cases"] == 1
    assert "recall@10" in learn_recall.render(rep)
    from remem.recall import channels
    assert channels.RARE_FROM == 5_000 and channels.SUBSTRING_FROM == 5_000    # a --set holds for its run only


def test_bad_input_is_refused_clearly(tmp_path, remem_home):
    data, labels = _data(tmp_path)
    with pytest.raises(SystemExit, match="no raw/ folder"):
        learn_recall.run(str(tmp_path), labels)
    with pytest.raises(SystemExit, match="has no NOT_A_KNOB"):
        learn_recall.run(data, labels, settings=["NOT_A_KNOB=1"])


def test_remem_bench_learn_recall_from_the_cli(tmp_path, remem_home):
    from click.testing import CliRunner

    from remem.cli import cli

    data, labels = _data(tmp_path)
    r = CliRunner().invoke(cli, ["bench", "learn-recall", "--data", data, "--labels", labels, "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["runs"][0]["overall"]["recall_at_10"] == 1.0
    bad = CliRunner().invoke(cli, ["bench", "learn-recall", "--data", str(tmp_path), "--labels", labels])
    assert bad.exit_code != 0 and "no raw/ folder" in bad.output

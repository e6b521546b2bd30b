"""The activation-frontier bench (remem.bench.learn_frontier) on a synthesized SpecStory project: a rule
said once is a candidate at the prompt that needed it under the shipped policy, and active under the
policies that admit once-said rules; the need-point misses are told apart by cause."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remem.bench import learn_frontier as frontier
from remem.layers import lifecycle
from specstory_data import turn, two_sessions

LAYOUT = "2025-04-03_10-00-api-layout.md"
COUPONS = "2025-04-04_10-00-coupons.md"


def _project(tmp_path: Path) -> tuple[str, str]:
    raw = tmp_path / "data" / "raw" / "shopcart"
    two_sessions(raw)
    (raw / LAYOUT).write_text("# session\n\n" + turn(
        "the request handlers should live in `src/api/handlers`, one file per resource", "Moved them."),
        encoding="utf-8")
    # the next session: a task in that folder, then the user has to say the rule again
    (raw / COUPONS).write_text("# session\n\n" + turn("add a coupons handler under src/api/handlers", "Added.")
                               + turn("it should be in its own file in `src/api/handlers`, one file per resource",
                                      "Moved."), encoding="utf-8")
    labels = tmp_path / "labels"
    labels.mkdir()
    (labels / "shopcart.json").write_text(json.dumps({
        "items": [{"iid": "api-layout", "kind": "convention",
                   "statement": "Handlers live in src/api/handlers, one file per resource.",
                   "evidence": [{"session": LAYOUT, "turn": 1}, {"session": COUPONS, "turn": 2}]}],
        "probes": [{"pid": "np1", "type": "need_point", "before": {"session": COUPONS, "turn": 1},
                    "expects": ["api-layout"]}]}), encoding="utf-8")
    return str(tmp_path / "data"), str(labels)


def test_a_once_said_rule_waits_as_a_candidate_unless_the_policy_admits_it(tmp_path):
    data, labels = _project(tmp_path)
    rep = frontier.run(data, labels)["policies"]
    shipped, anchored, once = rep["shipped"]["all"], rep["anchored"]["all"], rep["said-once"]["all"]
    # said in two sessions by the end, so every policy learns it; at the need point it was said once
    assert shipped["active_recall"] == anchored["active_recall"] == 1.0
    assert shipped["coverage"] == 0.0 and shipped["missed"] == {"active_not_picked": 0, "candidate_only": 1,
                                                                "not_learned": 0}
    # it names a path: active when said once, and the task in that folder brings it into the packet
    assert anchored["coverage"] == once["coverage"] == 1.0 and anchored["ceiling"] == 1.0
    assert set(rep["shipped"]) == {"all"}             # none of the dev split's tuned, held-out or blind projects
    assert lifecycle.activation.__name__ == "activation"        # the product's own rule is back
    assert "said-once" in frontier.render({"policies": rep})


def test_need_point_misses_are_counted_by_cause():
    packets = {"projects": {
        "a": {"need_point": "1/4", "negative": "1/2", "misses": [
            {"pid": "1", "type": "need_point", "learned_active": True, "learned_candidate": False},
            {"pid": "2", "type": "need_point", "learned_active": False, "learned_candidate": True},
            {"pid": "3", "type": "need_point", "learned_active": False, "learned_candidate": False},
            {"pid": "4", "type": "later_task", "learned_active": False, "learned_candidate": False}]},
        "b": {"need_point": "1/1", "negative": "0/3", "misses": []}}}
    both = frontier.need_points(packets, None)
    assert both["coverage"] == 0.4 and both["ceiling"] == 0.6 and both["need_points"] == 5
    assert both["missed"] == {"active_not_picked": 1, "candidate_only": 1, "not_learned": 1}
    assert both["false_injection"] == 0.2 and both["negatives"] == 5
    assert frontier.need_points(packets, ("b",))["coverage"] == 1.0


def test_the_policy_is_undone_even_when_the_run_fails_and_unknown_ones_are_refused():
    base = lifecycle.activation
    with pytest.raises(RuntimeError), frontier.activation_policy("said-once"):
        assert lifecycle.activation is not base
        raise RuntimeError("boom")
    assert lifecycle.activation is base
    with pytest.raises(ValueError, match="unknown policy"), frontier.activation_policy("eager"):
        pass

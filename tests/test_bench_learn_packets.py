"""The learned-packets bench (remem.bench.learn_packets) on a synthesized SpecStory project: where the
core facts go (with a session's first prompt, or in the SessionStart context) and the tuned / held-out
groups."""

from __future__ import annotations

import json
from pathlib import Path

from remem.bench.learn_packets import run
from specstory_data import turn, two_sessions


def _home(tmp_path: Path, project: str) -> tuple[str, str]:
    raw = tmp_path / "data" / "raw" / project
    two_sessions(raw)
    (raw / "2025-04-05_10-00-question.md").write_text(
        "# session\n\n" + turn("这个函数是做什么的？它返回什么？", "它计算购物车的总价。")
        + turn("it still hangs for a long time after the change", "Looking."), encoding="utf-8")
    labels = tmp_path / "labels"
    labels.mkdir()
    q = "2025-04-05_10-00-question.md"
    (labels / f"{project}.json").write_text(json.dumps({
        "items": [{"iid": "t-test", "kind": "fact", "statement": "Tests run with bun test.", "_slot": "cmd.test",
                   "_value": "bun test", "evidence": [{"session": "2025-04-01_10-00-cart-totals.md", "turn": 1}]}],
        "probes": [{"pid": "neg1", "type": "negative", "before": {"session": q, "turn": 1}, "expects": []},
                   {"pid": "np1", "type": "need_point", "before": {"session": q, "turn": 2},
                    "expects": ["t-test"]}]}), encoding="utf-8")
    return str(tmp_path / "data"), str(labels)


def test_core_facts_placement_moves_false_injection_and_coverage(tmp_path):
    data, labels = _home(tmp_path, "shopcart")
    at_prompt = run(data, labels)
    # today: the core facts ride with the session's first prompt, a question that needs none of them
    assert at_prompt["projects"]["shopcart"]["negative"] == "1/1"
    assert at_prompt["projects"]["shopcart"]["negative_prompt_matched"] == "0/1"
    assert at_prompt["projects"]["shopcart"]["need_point"] == "0/1"     # "it still hangs" brings nothing
    at_start = run(data, labels, core_at="session_start")
    # in the SessionStart context: part of no prompt's packet, but visible to the session's later prompts
    assert at_start["projects"]["shopcart"]["negative"] == "0/1"
    assert at_start["projects"]["shopcart"]["need_point"] == "1/1"
    assert at_start["overall"]["core_at"] == "session_start"
    # a project outside the tuned six counts as held out
    assert at_start["groups"]["heldout"]["counts"]["need_point"] == [1, 1] and "tune" not in at_start["groups"]


def test_a_stale_injection_says_the_replaced_item_not_merely_cites_itsturn():
    """A memory is a stale injection when it says what a replaced label item says (its kind, evidence and
    a keyword) and not what replaced it; a fact that only cites the same turn is not, nor one that says
    the replacement too."""
    from remem.bench.learn_packets import _stale
    from remem.layers.types import Evidence, Memory

    def mem(text: str, kind: str = "fact", turns: tuple[str, ...] = ("s1.md#2",)) -> Memory:
        return Memory(id="m_" + text[:8], kind=kind, key=text, text=text,
                      evidence=[Evidence(turn_id=t, session=t.split("#")[0]) for t in turns])

    items = {"old": {"iid": "old", "kind": "fact", "keywords": ["DiffMore", "app name"], "superseded_by": "new",
                     "evidence": [{"session": "s1.md", "turn": 2}]},
             "new": {"iid": "new", "kind": "fact", "keywords": ["BlastMerge"], "superseded_by": None,
                     "evidence": [{"session": "s3.md", "turn": 1}]}}
    assert _stale(mem("The app is called DiffMore."), items, "old")
    assert not _stale(mem("The build command is `dotnet build`."), items, "old")        # cites the turn only
    assert not _stale(mem("The app DiffMore is now BlastMerge.", turns=("s1.md#2", "s3.md#1")), items, "old")
    assert not _stale(mem("Call it DiffMore.", kind="preference"), items, "old")         # another kind

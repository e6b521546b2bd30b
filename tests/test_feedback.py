"""Feedback (issue 18): packet records, turn outcomes without an LLM, implicit feedback in the learn job
(no collateral blame, "injected but not followed", weak support), and the explicit verdicts of the CLI.
Real SQLite in the test's own home; the CLI runs as a subprocess."""

from __future__ import annotations

import json
import time

import pytest

import remem
from conftest import run_cli
from learned_data import _INSTALL, _PASS, PROJECT, bash, edit, seed
from remem.layers import feedback as fbk
from remem.layers.lifecycle import confidence
from remem.layers.types import Action, Memory, Turn
from remem.model import TurnIn
from remem.recall.record import prompt_hash


def turn(request: str, *actions: Action, tid: str = "t1", session: str = "s") -> Turn:
    return Turn(id=tid, session=session, request=request, actions=list(actions))


def sh(command: str, output: str = "", status: str = "") -> Action:
    return Action(tool="shell", command=command, output=output, status=status)


# -- outcome: a pure function of the turn and the next user message -------------------------

@pytest.mark.parametrize(("actions", "status", "nxt", "over", "want"), [
    ((), "", "no, that's wrong: the total should include tax", False, "corrected"),
    ((), "", "不对，应该用 bun 而不是 npm", False, "corrected"),
    ((), "", "你又忘了跑测试", False, "corrected"),
    ((), "", "you broke the non-json command.", False, "corrected"),
    ((), "", "i still see it happening", False, "corrected"),
    ((), "", "还是不行", False, "corrected"),
    ((sh("bun test", "1 fail", "failed"),), "", "thanks, now add the footer", False, "failed"),
    ((sh("bun test", "1 fail", "failed"), sh("bun test", "41 pass", "ok")), "", "thanks!", False, "succeeded"),
    ((sh("bun test", "1 fail", "failed"),), "", None, True, "abandoned"),
    ((sh("bun test", "1 fail", "failed"),), "", None, False, ""),
    ((), "failed", "ok next: the footer", False, "failed"),
    ((sh("npm run build", "Compiled successfully", "ok"),), "", "great, now deploy it", False, "succeeded"),
    ((sh("npm run build", "Compiled successfully", "ok"),), "", None, True, ""),
])
def test_turn_outcome(actions, status, nxt, over, want):
    t = turn("build the cart", *actions)
    n = turn(nxt, tid="t2") if nxt is not None else None
    assert fbk.turn_outcome(t, n, status=status, session_over=over) == want


def test_an_error_fixed_by_a_clean_run_in_the_next_turn_is_not_failed():
    t = turn("fix it", sh("bun test", "1 fail", "failed"))
    n = turn("looks good, commit", sh("bun test --coverage", "41 pass", "ok"), tid="t2")
    assert fbk.turn_outcome(t, n) == "succeeded"
    other = turn("looks good, commit", sh("git status", "clean", "ok"), tid="t2")
    assert fbk.turn_outcome(t, other) == "failed"


# -- judging a packet's injected memories ---------------------------------------------------

BUN = {"id": "m_bun", "kind": "preference", "slot": "pkg.manager", "value": "bun", "text": "Use bun, not npm.",
       "data": {"avoid": "npm"}, "polarity": 1}
TEST_CMD = {"id": "m_test", "kind": "fact", "slot": "cmd.test", "value": "bun test",
            "text": "The test command is `bun test`.", "data": {}}
CHANGELOG = {"id": "m_log", "kind": "convention", "slot": "", "value": "",
             "text": "Never edit CHANGELOG.md by hand.", "data": {"anchors": ["changelog.md"]}, "polarity": -1}


def verdicts(next_request: str, *actions: Action, result: str = "corrected") -> dict[str, tuple[str, str]]:
    got = fbk.judge([BUN, TEST_CMD, CHANGELOG], turn("add the date picker", *actions), turn(next_request, tid="t2"),
                    result)
    return {v.memory_id: (v.effect, v.reason) for v in got}


def test_a_correction_weakens_only_the_memories_it_touches():
    got = verdicts("no, this repo uses yarn, not npm")
    assert got == {"m_bun": ("weakened", "slot")}           # the test command and the changelog rule: no blame


def test_a_correction_repeating_an_injected_memory_marks_it_not_followed():
    assert verdicts("no, use bun not npm, I told you")["m_bun"] == ("not_followed", "repeated")
    assert verdicts("不对，用 bun 而不是 npm")["m_bun"] == ("not_followed", "repeated")
    assert verdicts("you edited CHANGELOG.md again, don't")["m_log"] == ("not_followed", "repeated")


def test_a_correction_about_something_else_blames_nothing():
    assert verdicts("no, the button should be blue") == {}
    assert verdicts("this is incorrect, i know yarn is installed") == {}          # named, not what to use
    assert verdicts("still happening ❯ bun run src/cli.ts fibers get 1") == {}    # a pasted prompt line
    assert verdicts("still happening.\nBun v1.2.9 (macOS arm64)") == {}            # a pasted version banner


def test_following_an_injected_preference_without_correction_is_weak_support():
    got = verdicts("thanks, now the footer", sh("bun add react-datepicker", "installed", "ok"), result="succeeded")
    assert got == {"m_bun": ("supported", "followed")}
    assert verdicts("thanks", sh("npm install react-datepicker", "ok", "ok"), result="succeeded") == {}


def test_apply_weakens_then_demotes_and_support_counts_half():
    def mem() -> Memory:
        m = Memory(id="m_bun", kind="preference", key="k", text="Use bun, not npm.", status="active")
        m.confidence = confidence(2, 0)
        return m

    one = fbk.apply(mem(), {"weakened": ["a"]})
    assert one.status == "active" and one.confidence == pytest.approx(confidence(0, 1))
    two = fbk.apply(mem(), {"weakened": ["a", "b"]})
    assert two.status == "candidate" and two.data["demoted"] == "feedback"
    kept = fbk.apply(mem(), {"weakened": ["a", "b"], "supported": ["c", "d", "e", "f", "g"]})
    assert kept.status == "active"
    locked = mem()
    locked.locked = True
    assert fbk.apply(locked, {"weakened": ["a", "b", "c"]}).status == "active"
    assert fbk.add(fbk.add(None, "weakened", "a"), "weakened", "a") == {"weakened": ["a"]}


# -- the store: packets recorded, judged in the learn job -----------------------------------

@pytest.fixture
def mem():
    with remem.open() as m:
        seed(m)
        m.learn()
        yield m


def live(m, session: str, request: str, actions: list, at: float) -> None:
    m.add_turns([TurnIn(request=request, reply="done", actions=actions, owner="default", agent="claude-code",
                        project=PROJECT, session_id=session, started_at=at, ended_at=at + 5)])


def by_id(m, mid: str) -> dict:
    return next(x for x in m.learned(project=PROJECT, status="all") if x["id"] == mid)


def test_every_packet_with_items_is_recorded_with_ids_and_a_hash_never_text(mem):
    prompt = "install the date picker dependency"
    got = mem.turn_start(prompt, project=PROJECT, session="s9", agent="claude-code")
    rec = mem.store.packets.get(mem.scope(), got["packet_id"])
    learned = [i["id"] for i in got["items"] if i.get("layer") in ("L2", "L3")]
    turns = [i["id"] for i in got["items"] if i.get("layer") == "L1"]
    assert rec["entry"] == "turn_start" and rec["session_id"] == "s9" and rec["project"] == PROJECT
    assert rec["owner"] == "default" and rec["agent"] == "claude-code"
    assert rec["learned_ids"] == learned and rec["turn_ids"] == turns and learned and turns
    assert rec["prompt_hash"] == prompt_hash(prompt) and prompt not in json.dumps(rec)
    assert rec["outcome"] == "" and rec["judged_at"] is None
    assert mem.store.packets.get(mem.scope("bob"), got["packet_id"]) is None          # scoped
    assert mem.store.packets.get(mem.scope(project="other-app"), got["packet_id"]) is None
    rep = mem.repair("error: Cannot find module 'react'", project=PROJECT)
    if rep.get("items"):
        assert mem.store.packets.get(mem.scope(), rep["packet_id"])["entry"] == "repair"
    empty = mem.turn_start("ok", project="nowhere")
    assert "packet_id" not in empty


def test_the_same_packet_built_twice_moments_apart_is_one_record(mem, monkeypatch):
    """A hook that gave up on a slow daemon builds the packet itself while the daemon records its own:
    one record, so its outcome is judged (and its memories weakened or supported) once."""
    prompt = "install the date picker dependency"
    first = mem.turn_start(prompt, project=PROJECT, session="s10", agent="claude-code")
    again = mem.turn_start(prompt, project=PROJECT, session="s10", agent="claude-code")
    assert first["packet_id"] == again["packet_id"]
    other = mem.turn_start("add the date picker to the checkout form", project=PROJECT, session="s10")
    elsewhere = mem.turn_start(prompt, project=PROJECT, session="s11", agent="claude-code")
    assert len({first["packet_id"], other["packet_id"], elsewhere["packet_id"]}) == 3
    assert len(mem.store.packets.recent(mem.scope(), session="s10")) == 2
    from remem import core

    monkeypatch.setattr(core, "SAME_PACKET_SECONDS", -1.0)   # the same prompt later on is a packet of its own
    later = mem.turn_start(prompt, project=PROJECT, session="s10", agent="claude-code")
    assert later["packet_id"] not in (first["packet_id"], other["packet_id"])


def test_packets_are_pruned_by_age_and_count(mem):
    area = mem.store.packets
    now = time.time()
    with mem.store.transaction():
        for i in range(12):
            area.add({"owner": "default", "project": PROJECT, "entry": "turn_start", "turn_ids": ["t"],
                      "learned_ids": [], "created_at": now - (40 - i) * 86400 if i < 2 else now - i})
        gone = area.prune(before=now - 30 * 86400, keep=5)
    assert gone == 7 and len(area.recent(mem.scope(), limit=100)) == 5


def test_a_correction_after_a_packet_weakens_the_touched_memory_with_an_event(mem):
    got = mem.turn_start("install the date picker dependency", project=PROJECT, session="s9")
    injected = {i["id"]: i for i in got["items"] if i.get("layer") in ("L2", "L3")}
    pref = next(i for i in injected.values() if i["kind"] == "preference" and i["slot"] == "pkg.manager")
    fact = next(i for i in injected.values() if i["kind"] == "fact" and i["slot"] == "pkg.manager")
    others = [i for i in injected if i not in (pref["id"], fact["id"])]
    before = {i: by_id(mem, i)["confidence"] for i in injected}
    now = time.time()
    live(mem, "s9", "install the date picker dependency", [bash("npm install react-datepicker", _INSTALL)], now)
    live(mem, "s9", "no, this repo uses yarn now, not npm", [bash("yarn add react-datepicker", _INSTALL)], now + 30)
    out = mem.learn()
    assert out["packets_judged"] == 1 and out["weakened"] == 2      # the fact and the preference of the slot
    rec = mem.store.packets.get(mem.scope(), got["packet_id"])
    assert rec["outcome"] == "corrected" and rec["judged_at"]
    weak = by_id(mem, fact["id"])
    assert weak["data"]["feedback"]["weakened"] == [rec["turn_id"]] and weak["confidence"] < before[fact["id"]]
    ev = [e for e in mem_history(mem, fact["id"]) if e["action"] == "weakened"]
    assert len(ev) == 1 and ev[0]["actor"] == "feedback" and ev[0]["after"]["packet"] == got["packet_id"]
    assert ev[0]["before"]["confidence"] > ev[0]["after"]["confidence"]
    assert by_id(mem, pref["id"])["data"]["feedback"]["weakened"] == [rec["turn_id"]]   # "yarn" contradicts "bun"
    for i in others:                                   # no collateral blame
        assert "feedback" not in by_id(mem, i)["data"] and by_id(mem, i)["confidence"] == before[i]
    assert mem.learn()["packets_judged"] == 0           # judged once


def mem_history(m, mid: str) -> list[dict]:
    from remem.layers import service

    return service.history(m, m.scope(), mid)


def test_two_corrections_demote_an_active_memory_and_approval_wins(mem):
    mid = None
    now = time.time()
    for k, session in enumerate(("s9", "s10")):
        got = mem.turn_start("install the date picker dependency", project=PROJECT, session=session)
        mid = next(i["id"] for i in got["items"] if i.get("kind") == "fact" and i.get("slot") == "pkg.manager")
        at = now + 100 * k
        live(mem, session, "install the date picker dependency", [bash("npm install react-datepicker", _INSTALL)], at)
        live(mem, session, "no, we use yarn here, not npm", [bash("yarn add react-datepicker", _INSTALL)], at + 30)
        mem.learn()
    rec = by_id(mem, mid)
    assert rec["status"] == "candidate" and rec["data"]["demoted"] == "feedback"
    assert len(rec["data"]["feedback"]["weakened"]) == 2
    again = mem.turn_start("install the date picker dependency", project=PROJECT, session="s11")
    assert mid not in {i["id"] for i in again["items"]}
    r = run_cli("learned", "good", mid, "--note", "bun is right", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["status"] == "active"
    mem.learn(rebuild=True)
    assert by_id(mem, mid)["status"] == "active"        # the user's approval outlives the corrections


def test_a_correction_repeating_an_injected_preference_is_reported_not_weakened(mem):
    got = mem.turn_start("install the date picker dependency", project=PROJECT, session="s9")
    pref = next(i for i in got["items"] if i.get("kind") == "preference")
    before = by_id(mem, pref["id"])["confidence"]
    now = time.time()
    live(mem, "s9", "install the date picker dependency", [bash("npm install react-datepicker", _INSTALL)], now)
    live(mem, "s9", "no, use bun not npm, I told you", [bash("bun add react-datepicker", _INSTALL)], now + 30)
    out = mem.learn()
    assert out["not_followed"] >= 1
    rec = by_id(mem, pref["id"])
    # not weakened (the restatement is even new evidence for it)
    assert rec["data"]["feedback"]["not_followed"] and rec["confidence"] >= before and rec["status"] == "active"
    assert "weakened" not in rec["data"]["feedback"]
    assert any(e["action"] == "not_followed" for e in mem_history(mem, pref["id"]))


def test_following_an_injected_preference_is_weak_support(mem):
    got = mem.turn_start("install the date picker dependency", project=PROJECT, session="s9")
    pref = next(i for i in got["items"] if i.get("kind") == "preference")
    before = by_id(mem, pref["id"])["confidence"]
    now = time.time()
    live(mem, "s9", "install the date picker dependency",
         [bash("bun add react-datepicker", _INSTALL), edit("src/cart/page.tsx")], now)
    live(mem, "s9", "thanks, now style the footer", [bash("bun test", _PASS)], now + 30)
    assert mem.learn()["supported"] >= 1
    rec = by_id(mem, pref["id"])
    assert rec["data"]["feedback"]["supported"] and rec["confidence"] > before


def test_feedback_can_be_turned_off(tmp_path, monkeypatch):
    monkeypatch.setenv("REMEM_LEARN_FEEDBACK", "false")
    with remem.open() as m:
        seed(m)
        m.learn()
        m.turn_start("install the date picker dependency", project=PROJECT, session="s9")
        now = time.time()
        live(m, "s9", "install the date picker dependency", [bash("npm install x", _INSTALL)], now)
        live(m, "s9", "no, this repo uses yarn, not npm", [], now + 30)
        out = m.learn()
        assert out["packets_judged"] == 0 and not out.get("weakened")


# -- explicit: remem learned good | bad | outdated -------------------------------------------

def test_cli_verdicts(mem):
    ids = [x["id"] for x in mem.learned(project=PROJECT) if x["kind"] != "working_state"]
    r = run_cli("learned", "bad", ids[0], "--note", "wrong tool", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["status"] == "rejected" and by_id(mem, ids[0])["data"]["note"] == "wrong tool"
    r = run_cli("learned", "outdated", ids[1])
    assert r.returncode == 0 and "archived" in r.stdout.decode()
    events = mem_history(mem, ids[1])
    assert events[-1]["action"] == "archive" and events[-1]["actor"] == "user"
    r = run_cli("learned", "good", "m_nope")
    assert r.returncode != 0 and b"no learned memory" in r.stderr
    r = run_cli("learned", "good", "--help")
    assert r.returncode == 0 and b"--note" in r.stdout


def test_slot_cue_words_alone_blame_no_slot_memory():
    """"run the tests" / "the format" in a correction are not about which command runs them."""
    assert verdicts("no, actually run the tests") == {}
    lint = {"id": "m_lint", "kind": "fact", "slot": "cmd.lint", "value": "bun run lint", "text": "The lint command "
            "is `bun run lint`.", "data": {}}
    got = fbk.judge([lint], turn("show the deps"), turn("no, this is wrong: remember the old output format?", tid="t2"),
                    "corrected")
    assert got == []
    rival = fbk.judge([TEST_CMD], turn("run them"), turn("no, the tests run with vitest now", tid="t2"), "corrected")
    assert [(v.effect, v.reason) for v in rival] == [("weakened", "slot")]
    told = fbk.judge([TEST_CMD], turn("run them"), turn("wrong, use bun test", tid="t2"), "corrected")
    assert [v.effect for v in told] == ["not_followed"]


def test_using_the_avoided_tool_or_not_following_is_not_followed():
    assert verdicts("no! you used npm again")["m_bun"] == ("not_followed", "repeated")
    rule = {"id": "m_rule", "kind": "convention", "slot": "", "value": "", "data": {"anchors": ["src/config.ts"]},
            "text": "Always read settings through src/config.ts, never from the environment directly."}
    got = fbk.judge([rule], turn("add the flag"), turn("why did you not follow the rule about src/config.ts?",
                                                         tid="t2"), "corrected")
    assert [(v.effect, v.reason) for v in got] == [("not_followed", "repeated")]


def test_a_packet_record_meeting_a_held_lock_is_tried_again_and_never_fails_the_recall(mem, monkeypatch):
    """Another writer (an embedding batch) holding the lock when a packet is recorded: tried again a
    moment later; held throughout, the packet is still answered, only not recorded."""
    from remem import core
    from remem.store.errors import Locked

    real = mem.store.transaction
    busy = {"left": 2, "tries": 0}

    def transaction(*a, **kw):
        if not kw.get("wait", True):
            busy["tries"] += 1
            if busy["left"] > 0:
                busy["left"] -= 1
                raise Locked("database is locked by another writer")
        return real(*a, **kw)

    monkeypatch.setattr(mem.store, "transaction", transaction)
    monkeypatch.setattr(core, "RECORD_RETRY_S", 0.0)
    got = mem.turn_start("install the date picker dependency", project=PROJECT, session="l1")
    assert got["packet_id"] and busy["tries"] >= 3          # two refused, then recorded
    assert mem.store.packets.get(mem.scope(), got["packet_id"])["session_id"] == "l1"
    busy.update(left=99, tries=0)
    held = mem.turn_start("add the date picker to the checkout form", project=PROJECT, session="l2")
    assert held["items"] and held["text"] and "packet_id" not in held
    assert busy["tries"] >= core.RECORD_TRIES

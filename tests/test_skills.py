"""Skills (issue 18): recipes learned from repeated fixes and command sequences, with parameters,
grounded in their evidence, measured by trials (η), archived at a low η, injected like procedures.

Real-shaped histories of one Python service over three sessions: pytest failing on a missing table,
the migration applied, the tests passing (a fix seen three times with a different test file each
time), and a lint → type check → test sequence run after each change. The store tests run on SQLite
and (REMEM_TEST_POSTGRES=1) PostgreSQL."""

from __future__ import annotations

import time

import pytest

import remem
from remem.layers import feedback as fbk
from remem.layers import skills as sk
from remem.layers.learn import learn
from remem.layers.select import pick
from remem.layers.types import Action, Memory, Turn
from skills_data import DAY, ERROR, FILES, MODULES, PROJECT, T0, UPGRADE, failing, history, passing, sh
from skills_data import try_skill as _try
from skills_data import turn_in as _turn_in


def skills_of(mems: list[Memory]) -> list[Memory]:
    return [m for m in mems if m.kind == "skill"]


# -- extraction (pure) ----------------------------------------------------------------------------

def test_a_fix_repeated_in_three_sessions_becomes_a_skill_with_a_parameter():
    turns = history()
    fix = next(m for m in skills_of(learn(turns)) if m.data["trigger"]["signature"])
    steps = fix.data["steps"]
    assert [s["template"] for s in steps] == ["alembic upgrade head", "pytest {path1} -q"]
    assert fix.data["parameters"] == ["path1"]
    assert [u["values"]["path1"] for u in fix.data["uses"]] == list(FILES)
    assert "no such table" in fix.data["trigger"]["signature"] and fix.data["preconditions"]
    assert fix.data["sources"] and fix.data["sources"][0].startswith("proc:")
    assert fix.status == "active" and len(fix.sessions) == 3 and {e.turn_id for e in fix.evidence} == {
        "s1-1", "s2-1", "s3-1"}


def test_a_recurring_command_sequence_becomes_a_skill():
    seq = next(m for m in skills_of(learn(history())) if not m.data["trigger"]["signature"])
    assert [s["template"] for s in seq.data["steps"]] == ["ruff check src", "mypy {path1}", "pytest -q"]
    assert [u["values"]["path1"] for u in seq.data["uses"]] == list(MODULES)
    assert seq.data["name"] == "ruff check then mypy then pytest"


def test_every_command_a_skill_names_occurs_in_its_evidence():
    turns = history()
    found = skills_of(learn(turns))
    assert len(found) == 2
    for m in found:
        assert sk.grounded(m.to_dict(), turns) == []
        for use in m.data["uses"]:                    # and in the very session of that use
            mine = [t for t in turns if t.session == use["session"]]
            assert sk.grounded({"data": {**m.data, "uses": [use]}}, mine) == []
    forged = found[0].to_dict()
    forged["data"]["steps"] = [*forged["data"]["steps"], {"kind": "run", "template": "make deploy", "params": []}]
    assert "make deploy" in sk.grounded(forged, turns)


def test_set_up_around_a_command_is_not_part_of_its_step():
    turns = history()
    for t in turns[1::2][:2]:
        t.actions[1] = sh("cd /srv/billing-api && ruff check src", "All checks passed!")
    seq = next(m for m in skills_of(learn(turns)) if not m.data["trigger"]["signature"])
    assert seq.data["steps"][0]["template"] == "ruff check src" and sk.grounded(seq.to_dict(), turns) == []


def test_too_few_uses_or_one_session_make_no_skill():
    turns = history()
    assert not skills_of(learn(turns[:4]))              # two uses each
    one_session = [Turn(id=f"x{i}", session="s1", request=t.request, reply=t.reply, actions=t.actions,
                        project=PROJECT, ts=t.ts, index=i) for i, t in enumerate(turns)]
    assert not skills_of(learn(one_session))            # six uses, one session


def test_the_failing_command_run_again_with_other_arguments_is_a_procedure_not_a_skill():
    msb = ("MSBuild version 17.8.3+195e7f5a3 for .NET\nMSBUILD : error MSB1009: Project file does not exist.\n"
           "Switch: App.sln\n")
    ok = "  App -> /src/App/bin/Debug/net8.0/App.dll\n\nBuild succeeded.\n    0 Warning(s)\n    0 Error(s)\n"
    turns = [Turn(id=f"d{k}", session=f"d{k}", project=PROJECT, ts=T0 + k * DAY, index=1,
                  request="build it", reply="Built with the project file named explicitly.",
                  actions=[sh("dotnet build App.sln", msb, "failed"),
                           sh(f"dotnet build src/App/App{k}.csproj", ok)]) for k in range(4)]
    mems = learn(turns)
    assert not skills_of(mems), [m.text for m in skills_of(mems)]
    assert [m for m in mems if m.kind == "procedure"], [m.text for m in mems]   # what to do is still learned
    # with a step of another family between, the fix is a recipe again
    for t in turns:
        t.actions.insert(1, sh("dotnet restore src/App", "Restored /src/App/App.csproj (in 212 ms)."))
    assert skills_of(learn(turns))


def test_a_sequence_skill_comes_in_by_the_words_of_the_tasks_it_followed():
    seq = next(m for m in skills_of(learn(history())) if not m.data["trigger"]["signature"])
    assert {"currency", "column", "invoice", "model"} <= set(seq.data["cue"]), seq.data["cue"]
    rec = {"id": seq.id, "kind": "skill", "text": seq.text, "status": "active", "confidence": 0.8,
           "data": seq.data, "sessions": 3, "updated_at": time.time()}
    got = pick([rec], "add a refund_reason column to the invoice model", now=time.time())
    assert [(m["id"], m["why"]) for m in got] == [(seq.id, "cue")]
    assert not pick([rec], "the footer layout looks off on mobile", now=time.time())
    assert not pick([rec], "what is the invoice total for march?", now=time.time())    # one cue word is not enough


def test_a_failed_run_in_the_turn_is_no_sequence_use():
    turns = history()
    for t in turns[1::2]:
        t.actions.insert(2, sh("mypy src", "src/billing/api/x.py:3: error: Name 'Decimal' is not defined", "failed"))
    assert [m.data["trigger"]["signature"] != "" for m in skills_of(learn(turns))] == [True]


def test_parameters_are_the_words_that_differ():
    tmpl, params, vals = sk.template(["pytest tests/a.py -q", "pytest tests/b/c.py -q"], 1)
    assert (tmpl, params, vals) == ("pytest {path1} -q", ["path1"], [["tests/a.py"], ["tests/b/c.py"]])
    assert sk.template(["npm run build", "npm run build"], 3) == ("npm run build", [], [[], []])
    tmpl, params, vals = sk.template(["make release V=1", "make release V=2 FAST=1"], 2)
    assert tmpl == "make release {arg2}" and vals == [["V=1"], ["V=2 FAST=1"]]
    assert sk.fill(tmpl, params, {"arg2": "V=2 FAST=1"}) == "make release V=2 FAST=1"


# -- trials and η (pure) --------------------------------------------------------------------------

def _fix_skill() -> dict:
    return next(m for m in skills_of(learn(history())) if m.data["trigger"]["signature"]).to_dict()


def _trial_turn(ok: bool) -> Turn:
    path = "tests/test_credits.py"
    return Turn(id="t-new", session="s9", request=f"{path} fails again", project=PROJECT, actions=[
        sh(f"pytest {path} -q", failing(path)), sh("alembic upgrade head", UPGRADE),
        sh(f"pytest {path} -q", passing(path) if ok else failing(path))])


def test_a_trial_is_the_trigger_then_the_action():
    m = _fix_skill()
    nxt = Turn(id="t-next", session="s9", request="thanks, now add the credit note endpoint")
    assert sk.trial(m, _trial_turn(True), nxt, "succeeded") == "passed"
    assert sk.trial(m, _trial_turn(False), nxt, "failed") == "failed"
    assert sk.trial(m, _trial_turn(True), nxt, "corrected") == "failed"
    quiet = Turn(id="t-q", session="s9", request="run the tests", actions=[sh("pytest -q", passing("tests"))])
    assert sk.trial(m, quiet, nxt, "succeeded") == ""          # the trigger never held: no trial
    other = Turn(id="t-o", session="s9", request="docs", actions=[Action(tool="edit", path="README.md")])
    assert sk.trial(m, other, nxt, "succeeded") == ""
    verdicts = fbk.judge([m], _trial_turn(True), nxt, "succeeded")
    assert [(v.memory_id, v.effect) for v in verdicts] == [(m["id"], "passed")]


def test_eta_and_archive_at_a_low_eta():
    assert sk.eta(0, 0) == 0.5 and sk.eta(3, 3) == 0.8 and sk.eta(0, 3) == 0.2
    m = next(x for x in skills_of(learn(history())) if x.data["trigger"]["signature"])
    fbk.apply(m, {"passed": ["a"], "failed": ["b"]})
    assert m.data["eta"] == 0.5 and m.data["trials"] == 2 and m.status == "active"
    fbk.apply(m, {"failed": ["a", "b", "c"]})
    assert m.data["eta"] == 0.2 and m.status == "archived" and m.data["archived_by"] == "eta"
    kept = next(x for x in skills_of(learn(history())) if x.data["trigger"]["signature"])
    fbk.apply(kept, {"failed": ["a", "b", "c"]}, approved=True)
    assert kept.status == "active"                              # the user's approval outweighs η


# -- injection (pure) -----------------------------------------------------------------------------

def test_skills_are_injected_by_the_procedures_rules():
    now = T0 + 10 * DAY
    mems = [m.to_dict() | {"last_update": m.updated_at} for m in learn(history())]
    got = pick(mems, f"pytest fails:\n{ERROR}", now=now)
    assert any(m["kind"] == "skill" and m["why"] == "signature" for m in got)
    assert any(m["kind"] == "procedure" for m in got)
    none = pick(mems, "write the changelog entry for the release", now=now)
    assert not [m for m in none if m["kind"] == "skill"]


# -- the store: learned, injected, tried, archived ------------------------------------------------

@pytest.fixture
def mem():
    with remem.open() as m:
        m.add_turns([_turn_in(t, i) for i, t in enumerate(history())])
        m.learn()
        yield m


def _skill_rec(m, signature: bool = True) -> dict:
    return next(x for x in m.learned(project=PROJECT, status="all")
                if x["kind"] == "skill" and bool(x["data"]["trigger"]["signature"]) == signature)


def test_skills_are_stored_grounded_and_injected(mem):
    rec = _skill_rec(mem)
    assert rec["status"] == "active" and rec["layer"] == "L2"
    assert sk.grounded(rec, history()) == []
    got = mem.turn_start(f"pytest fails:\n{ERROR}", project=PROJECT, session="s9")
    assert rec["id"] in {i["id"] for i in got["items"]}
    assert rec["id"] in mem.store.packets.get(mem.scope(), got["packet_id"])["learned_ids"]
    rep = mem.repair(ERROR, project=PROJECT, tool="shell", command="pytest tests/test_credits.py -q")
    kinds = [i["kind"] for i in rep["items"] if i.get("layer") == "L2"]
    assert kinds[:2] == ["skill", "procedure"] and rec["id"] in rep["text"]     # beside the procedure it grew from


def test_trials_move_eta_and_a_failing_skill_is_archived(mem):
    rec = _skill_rec(mem)
    now = time.time()
    got = _try(mem, "s10", now, ok=True)
    assert rec["id"] in {i["id"] for i in got["items"]}
    assert mem.learn()["passed"] == 1
    after = _skill_rec(mem)
    assert after["data"]["eta"] == round(2 / 3, 4) and after["data"]["trials"] == 1
    shown = mem.turn_start(f"pytest fails:\n{ERROR}", project=PROJECT, session="s11")["text"]
    assert "[skill · used in 4 sessions · η 0.67 over 1 trial" in shown     # the trial is a 4th use too
    for k in range(3):
        _try(mem, f"s2{k}", now + 100 * (k + 1), ok=False)
        mem.learn()
    low = _skill_rec(mem)
    assert low["data"]["trials"] == 4 and low["data"]["eta"] == round(2 / 6, 4) and low["status"] == "active"
    _try(mem, "s30", now + 1000, ok=False)
    mem.learn()
    gone = _skill_rec(mem)
    assert gone["data"]["eta"] < sk.ARCHIVE_ETA and gone["status"] == "archived"
    assert gone["id"] not in {i["id"] for i in mem.turn_start(f"pytest fails:\n{ERROR}", project=PROJECT,
                                                                 session="s40")["items"]}
    _approve(mem, gone["id"])
    mem.learn(rebuild=True)
    assert _skill_rec(mem)["status"] == "active"                  # the user's approval moves it back


def test_the_user_can_reject_a_skill(mem):
    from remem.layers import service

    rec = _skill_rec(mem, signature=False)
    service.act(mem, mem.scope(), rec["id"], "reject")
    mem.learn(rebuild=True)
    assert _skill_rec(mem, signature=False)["status"] == "rejected"


def test_the_bench_counts_skills_and_their_grounding():
    from remem.bench.skills import project_report

    got = project_report(history())
    assert (got["active"], got["grounded"], got["grounded_active"]) == (2, 2, 2)
    assert sorted(s["from"] for s in got["skills"]) == ["fix", "sequence"]


def _approve(m, mid: str) -> None:
    from remem.layers import service

    service.act(m, m.scope(), mid, "approve")

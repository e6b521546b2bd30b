"""``remem learn`` and ``remem learned …`` through the real command, on a real-shaped home."""

from __future__ import annotations

import json

import pytest

import remem
from conftest import run_cli
from learned_data import PROJECT, seed


def js(*args: str) -> object:
    r = run_cli(*args, "--json")
    assert r.returncode == 0, r.stderr.decode()
    return json.loads(r.stdout)


@pytest.fixture
def home():
    with remem.open() as m:
        ids = seed(m)
    return ids


def by_text(rows: list[dict], needle: str) -> dict:
    got = [m for m in rows if needle in m["text"]]
    assert got, [m["text"] for m in rows]
    return got[0]


def test_learn_then_list_show_scoped(home):
    d = js("learn")
    assert d["projects"] == 2 and d["created"] >= 8, d
    rows = js("learned", "list", "--project", PROJECT)
    bun = by_text(rows, "Use bun, not npm")
    assert bun["kind"] == "preference" and bun["status"] == "active" and bun["layer"] == "L2"
    assert bun["project"] == PROJECT and bun["scope"] == "project" and 0.5 < bun["confidence"] < 1
    assert len(bun["evidence"]) == 2 and bun["sessions"] == 2          # said in s1 and s2
    assert set(bun["evidence"]) <= set(home)
    by_text(rows, "以后提交前都要先跑 bun test")                          # Chinese convention
    assert by_text(rows, "test command")["layer"] == "L3"
    texts = " ".join(m["text"] for m in rows)
    assert "pnpm" not in texts and "yarn" not in texts                  # other owner / other project
    assert all(m["owner"] == "default" for m in js("learned", "list", "--status", "all"))
    # the review queue holds the error → fix procedure (one session: a candidate)
    proc = js("learned", "list", "--status", "review", "--kind", "procedure")
    assert proc and "bun test" in proc[0]["text"] and proc[0]["evidence"][0] in home
    # show quotes the evidence turns' requests, shortened
    r = run_cli("learned", "show", bun["id"])
    out = r.stdout.decode()
    assert r.returncode == 0 and "Set up the cart page. Use bun, not npm" in out and "use bun not npm" in out
    assert js("learned", "show", bun["id"])["quotes"][0]["turn_id"] == home[0]
    # a second learn finds nothing new
    again = js("learn")
    assert again["projects"] == 0 and again["skipped"] == 2 and again["created"] == 0


def test_clear_errors(home):
    js("learn")
    for args, msg in ((("learned", "show", "m_nope"), "no learned memory 'm_nope'"),
                      (("learned", "list", "--status", "pending"), "unknown status 'pending'"),
                      (("learned", "list", "--kind", "rule"), "unknown kind 'rule'"),
                      (("learned", "reject", "m_nope"), "no learned memory"),
                      (("learned", "rollback", "99999"), "no learned event 99999"),
                      (("learned", "edit", "m_nope", "x"), "no learned memory")):
        r = run_cli(*args)
        assert r.returncode == 1, (args, r.stdout)
        err = r.stderr.decode()
        assert err.startswith("remem: error: ") and msg in err and "Traceback" not in err, err


def test_reject_edit_approve_forget_survive_rebuild(home):
    js("learn")
    rows = js("learned", "list", "--project", PROJECT)
    bun = by_text(rows, "Use bun, not npm")
    conv = by_text(rows, "以后提交前")
    fact = by_text(rows, "test command")
    proc = js("learned", "list", "--status", "review", "--kind", "procedure")[0]

    assert js("learned", "reject", bun["id"])["status"] == "rejected"
    assert js("learned", "edit", conv["id"], "Run bun test before every commit.")["locked"] is True
    assert js("learned", "approve", proc["id"])["status"] == "active"
    assert js("learned", "forget", fact["id"])["status"] == "rejected"

    d = js("learn", "--rebuild")
    assert d["projects"] == 2
    after = {m["id"]: m for m in js("learned", "list", "--status", "all")}
    assert after[bun["id"]]["status"] == "rejected"                   # never re-created from the same evidence
    assert bun["id"] not in {m["id"] for m in js("learned", "list")}
    assert after[conv["id"]]["text"] == "Run bun test before every commit." and after[conv["id"]]["locked"]
    assert after[proc["id"]]["status"] == "active"
    assert fact["id"] not in after                                     # forgotten: gone and not relearned
    r = run_cli("learned", "history", fact["id"])
    assert r.returncode == 0 and "bun test" not in r.stdout.decode()

    # history has an event per change with before / after; rolling the edit back restores the text
    events = js("learned", "history", conv["id"])
    assert [e["action"] for e in events][:2] == ["created", "edit"]
    edit_ev = events[1]
    assert edit_ev["before"]["text"] == conv["text"] and edit_ev["after"]["text"].startswith("Run bun test")
    back = js("learned", "rollback", str(edit_ev["id"]))
    assert back["text"] == conv["text"] and back["locked"] is False
    assert js("learned", "history", conv["id"])[-1]["action"] == "rollback"


def test_new_turns_learn_incrementally(home):
    js("learn")
    with remem.open() as m:
        from learned_data import turns
        extra = turns()[4]
        extra.session_id, extra.source_key, extra.started_at = "s5", "default:s5:new", extra.started_at + 9e5
        extra.ended_at, extra.message_ids = extra.started_at + 10, ["new-m"]
        extra.request = "You ran npm again. Use bun, not npm: I told you in two sessions already."
        m.add_turns([extra])
    d = js("learn")
    assert d["projects"] == 1 and d["skipped"] == 1 and d["turns"] == 8, d
    bun = by_text(js("learned", "list", "--project", PROJECT), "Use bun, not npm")
    assert bun["sessions"] == 3

"""Learned memories in the store: forgetting turns cascades, scopes hold, redaction, the façade."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli
from learned_data import PROJECT, seed
from remem.ingest.normalize import InputError
from remem.model import TurnIn


def everything_learned(mem) -> str:
    """Every learned text, data and event body in the database, as one string."""
    db = mem.store.conn
    parts = [r[0] + r[1] for r in db.execute("SELECT text, data FROM learned")]
    parts += [(r[0] or "") + (r[1] or "") for r in db.execute("SELECT before_json, after_json FROM learned_events")]
    return "\n".join(parts)


def find(mem, needle: str, status: str = "all") -> dict:
    got = [m for m in mem.learned(status=status) if needle in m["text"]]
    assert got, [m["text"] for m in mem.learned(status="all")]
    return got[0]


def test_forgetting_turns_cascades(mem):
    ids = seed(mem)
    mem.learn()
    fact = find(mem, "Next.js 15")                   # said only in the Chinese turn ids[3]
    assert fact["evidence"] == [ids[3]] and fact["layer"] == "L3"
    bun = find(mem, "Use bun, not npm")
    assert bun["evidence"] == [ids[0], ids[4]]
    from remem.layers import service
    service.act(mem, mem.scope(), fact["id"], "lock")          # locked: still goes with its only turn
    service.act(mem, mem.scope(), bun["id"], "reject")         # a decision survives a partial forget
    assert "Supabase" in everything_learned(mem) and "Set up the cart page" in everything_learned(mem)

    mem.forget(ids=[ids[3], ids[0]])
    # at once, before any relearn: nothing quotes the forgotten turns, what only they supported is gone
    left = everything_learned(mem)
    assert "Supabase" not in left and "Next.js" not in left and "Set up the cart page" not in left
    assert fact["id"] not in {m["id"] for m in mem.learned(status="all")}
    kept = mem.store.learned.get(mem.scope(), bun["id"])
    assert kept["decided"] == "rejected" and kept["text"] == "" and [e["turn_id"] for e in kept["evidence"]] == [ids[4]]
    assert mem.store.conn.execute("SELECT count(*) FROM learned_evidence WHERE turn_id IN (?,?)",
                                  (ids[3], ids[0])).fetchone()[0] == 0
    # the next learn recomputes from what remains: still rejected, text from the surviving turn
    d = mem.learn()
    assert d["projects"] == 1, d
    again = mem.store.learned.get(mem.scope(), bun["id"])
    assert again["status"] == "rejected" and again["text"] and again["evidence"][0]["turn_id"] == ids[4]
    left = everything_learned(mem)
    assert "Supabase" not in left and "Set up the cart page" not in left


def test_forget_session_from_the_cli_cascades(mem):
    ids = seed(mem)
    mem.learn()
    assert find(mem, "以后提交前")["evidence"] == [ids[5]]
    r = run_cli("forget", "--session", "s3", "--yes")
    assert r.returncode == 0, r.stderr.decode()
    assert "以后提交前" not in everything_learned(mem)
    mem.learn()
    assert "以后提交前" not in everything_learned(mem)
    assert mem.stats()["learned"] == sum(1 for _ in mem.learned(status="all"))


def test_clear_all_leaves_no_learned_text(mem):
    seed(mem)
    mem.learn()
    assert mem.stats()["learned"] > 5
    mem.clear_all()
    assert everything_learned(mem).strip("\n") == "" or "bun" not in everything_learned(mem)
    assert mem.stats()["learned"] == 0


def test_scopes_owners_and_projects(mem):
    seed(mem)
    mem.learn(owner="bob")
    mem.learn()
    mine = mem.learned(status="all")
    assert mine and all(m["owner"] == "default" for m in mine)
    assert not any("pnpm" in m["text"] for m in mine)
    bobs = mem.learned(status="all", owner="bob")
    assert any("pnpm" in m["text"] for m in bobs) and all(m["owner"] == "bob" for m in bobs)
    only = mem.learned(project="other-app", status="all")
    assert only and all(m["project"] == "other-app" for m in only)
    assert any("yarn" in m["text"] for m in only)
    from remem.layers import service
    with pytest.raises(InputError, match="no learned memory"):
        service.act(mem, mem.scope(), bobs[0]["id"], "approve")   # another owner's id is unknown here
    with pytest.raises(InputError, match="unknown status"):
        mem.learned(status="bogus")


def test_learned_text_is_redacted(mem):
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    for i in range(2):
        mem.add_turns([TurnIn(request=f"Remember that the deploy uses token {secret} and always bun, not npm.",
                              reply="ok", owner="default", agent="codex", project="secret-proj",
                              session_id=f"x{i}", source_key=f"sec{i}", started_at=1.76e9 + i * 86400,
                              ended_at=1.76e9 + i * 86400 + 5, message_ids=[f"sec{i}"])])
    mem.learn()
    assert secret not in everything_learned(mem)
    m = mem.learned(project="secret-proj", status="all")[0]
    from remem.layers import service
    service.act(mem, mem.scope(), m["id"], "edit", text=f"deploy token is {secret}")
    assert secret not in everything_learned(mem)


def test_python_face_shape(mem):
    seed(mem, others=False)
    out = mem.learn(project=PROJECT)
    assert out["projects"] == 1 and out["learned"]["active"] >= 5
    m = mem.learned(project=PROJECT, kind="preference")[0]
    for key in ("id", "layer", "kind", "text", "status", "confidence", "scope", "project", "evidence",
                "created_at", "updated_at"):
        assert key in m
    json.dumps(m)
    assert mem.learn(rebuild=True)["created"] == 0                 # a rebuild of unchanged turns changes nothing


def test_another_learner_version_learns_every_project_again(mem):
    """After an upgrade the learn job learns projects with no new turns too: their cursor names the
    learner that wrote it (``layers.learn.learner_version``)."""
    from remem.layers.learn import learner_version

    seed(mem)
    first = mem.learn()
    assert first["projects"] >= 2
    before = {m["id"]: m["text"] for m in mem.learned(status="all")}
    assert mem.learn()["projects"] == 0                               # nothing changed: skipped
    learners = {r[0] for r in mem.store.conn.execute("SELECT learner FROM learned_cursor")}
    assert learners == {learner_version()}
    with mem.store.transaction():
        mem.store.conn.execute("UPDATE learned_cursor SET learner = 'an-older-remem' WHERE project = ?", (PROJECT,))
    again = mem.learn()
    assert again["projects"] == 1 and again["skipped"] == first["projects"] - 1
    assert {m["id"]: m["text"] for m in mem.learned(status="all")} == before     # same turns, same memories
    assert mem.learn()["projects"] == 0


def _say(mem, text: str, sessions: list[str], t0: float) -> None:
    for i, s in enumerate(sessions):
        mem.add_turns([TurnIn(request=text, reply="ok", owner="default", agent="claude-code", project=PROJECT,
                              session_id=s, source_key=f"say:{s}:{text[:20]}", started_at=t0 + i * 86400,
                              ended_at=t0 + i * 86400 + 5, message_ids=[f"say-{s}-{text[:10]}"])])


def test_a_locked_memory_is_never_superseded(mem):
    seed(mem, others=False)
    mem.learn()
    bun = find(mem, "Use bun, not npm", "active")
    assert bun["slot"], bun
    from remem.layers import service
    service.act(mem, mem.scope(), bun["id"], "lock")
    # later, in two new sessions, the user says the opposite: it would win, but bun is locked
    _say(mem, "Use pnpm, not bun, for this project from now on.", ["s8", "s9"], 1_761_000_000.0)
    mem.learn()
    now = {m["id"]: m for m in mem.learned(status="all")}
    assert now[bun["id"]]["status"] == "active" and now[bun["id"]]["locked"]
    rival = [m for m in now.values() if m["slot"] == bun["slot"] and m["value"] != bun["value"]]
    assert rival and all(r["status"] == "candidate" for r in rival)
    assert rival[0]["data"].get("conflict_with") == bun["id"]
    # unlocked, the newer better-supported value supersedes it, with an event saying so
    service.act(mem, mem.scope(), bun["id"], "unlock")
    mem.learn(rebuild=True)
    after = mem.store.learned.get(mem.scope(), bun["id"])
    assert after["status"] == "superseded" and after["superseded_by"] == rival[0]["id"]
    assert mem.store.learned.events(mem.scope(), bun["id"])[-1]["action"] == "superseded"


def test_writes_queue_one_learn_job_per_owner(mem):
    from learned_data import other_turns, turns
    for t in turns():
        mem.add_turns([t])                        # seven captures, one at a time
    mem.add_turns(other_turns())
    jobs = mem.store.conn.execute("SELECT payload, status, run_after FROM jobs WHERE kind = 'learn'").fetchall()
    assert sorted(json.loads(j[0])["owner"] for j in jobs) == ["bob", "default"]
    assert all(j[1] == "queued" for j in jobs)


def test_a_goal_carried_into_a_continue_session_goes_with_the_turn_that_said_it(mem):
    """A session opening with "continue" carries the previous session's goal on, so its working state
    quotes a turn of another session: it cites that turn, and forgetting it takes the goal along."""
    t0 = 1_760_000_000.0
    said = "Migrate the billing job from cron to the task queue"
    turns = [TurnIn(request=said + ", keep the retries.", reply="I've moved the billing job onto the queue.",
                    project=PROJECT, agent="claude-code", session_id="a", source_key="a0", started_at=t0),
             TurnIn(request="continue working on this", reply="Fixed the retry count; all tests pass now.",
                    project=PROJECT, agent="claude-code", session_id="b", source_key="b0", started_at=t0 + 86400)]
    ids = [r.id for r in mem.add_turns(turns).results]
    mem.learn()
    carried = [m for m in mem.learned(kind="working_state") if ids[1] in m["evidence"]]
    assert len(carried) == 1 and carried[0]["text"].startswith("Goal: " + said), carried
    assert ids[0] in carried[0]["evidence"]                   # it cites the turn it quotes
    mem.forget(ids=[ids[0]])
    left = json.dumps(mem.learned(status="all"), ensure_ascii=False)
    assert "billing job from cron" not in left
    mem.learn()
    left = json.dumps(mem.learned(status="all"), ensure_ascii=False)
    assert "billing job from cron" not in left               # nor after relearning from what remains

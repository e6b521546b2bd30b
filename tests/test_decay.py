"""Decay and forgetting (issue 18): the retention score (pure, tables of cases), the learn job's
archive rule and its exemptions, soft delete / restore / purge, hard delete, forgetting a session,
and owner scoping on the CLI, the REST API and MCP — on a history that spans more than a year."""

from __future__ import annotations

import json
import time

import pytest

from conftest import run_cli
from decay_data import DAY, PROJECT, one, seed_again, seed_early, seed_later
from remem.ingest.normalize import InputError
from remem.layers import retention, select, service
from remem.layers.retention import HalfLives, Rule

NOW = 1_800_000_000.0


def mem_dict(kind="preference", *, age=0.0, confidence=1.0, sessions=1, slot="", uses=0, supports=0,
             status="active", **extra):
    data = {"last_seen": NOW - age * DAY}
    if uses:
        data["use"] = {"injected": uses, "succeeded": uses, "last": 0.0}
    if supports:
        data["feedback"] = {"supported": [f"t{i}" for i in range(supports)]}
    return {"id": f"m_{kind}_{age}_{sessions}", "kind": kind, "slot": slot, "status": status, "confidence": confidence,
            "sessions": sessions, "text": f"a {kind}", "data": data | extra.pop("data", {}), **extra}


# -- the score --------------------------------------------------------------------------------

@pytest.mark.parametrize("kind,slot,age,sessions,uses,supports,confidence,expected", [
    ("preference", "", 0, 1, 0, 0, 1.0, 1.0),                  # fresh
    ("preference", "", 180, 1, 0, 0, 1.0, 0.5),                # one half-life
    ("convention", "", 360, 1, 0, 0, 1.0, 0.25),
    ("preference", "", 180, 1, 0, 0, 0.6, 0.3),                # confidence scales it
    ("preference", "", 360, 2, 0, 0, 1.0, 0.5),                # a second session doubles the half-life
    ("preference", "", 360, 1, 1, 0, 1.0, 0.5),                # ... so does one successful use
    ("preference", "", 360, 1, 0, 1, 1.0, 0.5),                # ... or one feedback support
    ("preference", "", 540, 4, 0, 0, 1.0, 0.5),                # 3 reinforcements: boost 1 + log2(4) = 3
    ("decision", "", 120, 1, 0, 0, 1.0, 0.5),
    ("fact", "cmd.test", 60, 1, 0, 0, 1.0, 0.5),
    ("fact", "layout.hot_dirs", 30, 1, 0, 0, 1.0, 0.5),        # layouts and ports: "other"
    ("procedure", "", 90, 1, 0, 0, 1.0, 0.5),
    ("working_state", "", 2, 1, 0, 0, 1.0, 0.5),
    ("correction", "", 30, 1, 0, 0, 1.0, 0.5),
    ("preference", "", -5, 1, 0, 0, 1.0, 1.0),                 # evidence "after" the clock: not above 1
])
def test_retention_score(kind, slot, age, sessions, uses, supports, confidence, expected):
    got = retention.score(kind=kind, slot=slot, age_days=age, confidence=confidence, sessions=sessions,
                          uses=uses, supports=supports)
    assert got == pytest.approx(expected, abs=1e-9)


def test_retention_of_a_stored_memory_reads_its_data():
    fresh = mem_dict(age=1)
    old = mem_dict(age=400)
    used = mem_dict(age=400, uses=3)
    assert retention.of(fresh, NOW) > retention.of(used, NOW) > retention.of(old, NOW)
    # a successful use is confirmation too: its time counts as the newest
    recent_use = mem_dict(age=400, data={"use": {"injected": 1, "succeeded": 1, "last": NOW - DAY}})
    assert retention.last_confirmed(recent_use) == NOW - DAY
    assert retention.of(recent_use, NOW) > 0.9
    # the half-lives are settings
    short = HalfLives(rules=10.0)
    assert retention.of(mem_dict(age=10), NOW, short) == pytest.approx(0.5)
    # a record without data falls back to updated_at; without any time it is fresh
    assert retention.last_confirmed({"updated_at": 5.0, "data": {}}) == 5.0
    assert retention.of({"kind": "fact", "confidence": 0.8, "data": None}, NOW) == pytest.approx(0.8)


@pytest.mark.parametrize("extra,age,expected", [
    ({"locked": True}, 900, "locked"),
    ({"decided": "active"}, 900, "approved"),                  # no pins in remem: the user's approval pins
    ({"data": {"origin": "user"}}, 900, "written by the user"),
    ({}, 6.9, "young"),                                        # evidence younger than 7 days
    ({}, 900, ""),
])
def test_archive_exemptions(extra, age, expected):
    m = mem_dict("working_state", age=age, **extra)
    assert retention.exempt(m, NOW) == expected
    score, why = retention.archive_reason(m, NOW)
    assert score < 0.1
    assert bool(why) == (expected == ""), why


def test_archive_rule_only_for_active_memories_below_the_threshold():
    old = mem_dict("fact", slot="cmd.test", age=400, confidence=0.75, sessions=2)
    score, why = retention.archive_reason(old, NOW)
    assert score == pytest.approx(0.75 * 0.5 ** (400 / 120)) and why.startswith("retention 0.07")
    assert "400 days" in why
    assert retention.archive_reason({**old, "status": "candidate"}, NOW)[1] == ""
    assert retention.archive_reason(old, NOW, Rule(enabled=False))[1] == ""
    assert retention.archive_reason(old, NOW, Rule(archive_below=0.05))[1] == ""
    # a rule said in two sessions outlives the fact by far
    rule = mem_dict("convention", age=400, confidence=0.75, sessions=2)
    assert retention.archive_reason(rule, NOW)[1] == ""


def test_use_counts():
    use = retention.add_use(None, "corrected", 10.0)
    assert use == {"injected": 1, "succeeded": 0, "last": 0.0}
    use = retention.add_use(use, "succeeded", 20.0)
    use = retention.add_use(use, "succeeded", 15.0)
    assert use == {"injected": 3, "succeeded": 2, "last": 20.0}


def test_fading_memories_sink_in_a_packet_but_are_never_filtered():
    fresh = mem_dict("convention", age=1, confidence=0.8, sessions=3, id="m_fresh",
                     text="Always run ruff format on the api code")
    faded = mem_dict("convention", age=2000, confidence=0.8, sessions=3, id="m_faded",
                     text="Always run ruff check on the api code")
    both = select.pick([faded, fresh], "go ahead and implement it", now=NOW)
    assert [m["id"] for m in both] == ["m_fresh", "m_faded"]          # the reminder of both, the fresh first
    assert both[0]["retention"] > 0.75 > 0.1 > both[1]["retention"]
    alone = select.pick([faded], "go ahead and implement it", now=NOW)
    assert [m["id"] for m in alone] == ["m_faded"]                     # soft: still picked
    # without fading, order is the relevance order (ties keep their input order)
    same = select.pick([mem_dict("convention", age=1, confidence=0.8, sessions=3, id="m_a", text="Always use ruff a"),
                        mem_dict("convention", age=30, confidence=0.8, sessions=3, id="m_b", text="Always use ruff b")],
                       "go ahead", now=NOW)
    assert [m["id"] for m in same] == ["m_a", "m_b"]


# -- the archive rule in the learn job ---------------------------------------------------------

def learn(mem, **kw):
    """Learn for this home's owner and for bob, whose copy of the history must stay his own."""
    mem.learn(owner="bob", **kw)
    return mem.learn(**kw)


def _events(mem, mid):
    return [(e["action"], e["actor"]) for e in service.history(mem, mem.scope(), mid)]


def test_decay_archives_what_work_went_on_without(mem):
    seed_early(mem)
    learn(mem)
    test_cmd = one(mem, lambda m: m["slot"] == "cmd.test")
    assert test_cmd["status"] == "active" and test_cmd["sessions"] == 2
    states = sorted((m for m in mem.learned(project=PROJECT, status="all") if m["kind"] == "working_state"),
                    key=lambda m: m["data"]["last_seen"])
    assert len(states) == 3 and all(s["status"] == "active" for s in states)
    service.act(mem, mem.scope(), states[0]["id"], "approve")       # pinned by the user's approval
    service.act(mem, mem.scope(), states[1]["id"], "lock")

    seed_later(mem)                                                 # 400 days of other work later
    d = mem.learn()
    assert d["decayed"] >= 2, d
    test_cmd = one(mem, lambda m: m["slot"] == "cmd.test")
    assert test_cmd["status"] == "archived"
    assert test_cmd["data"]["decay"]["retention"] < 0.1
    assert _events(mem, test_cmd["id"])[-1] == ("archived", "decay")
    ev = service.history(mem, mem.scope(), test_cmd["id"])[-1]
    assert ev["before"]["status"] == "active" and ev["after"]["status"] == "archived"
    assert "retention 0.0" in ev["after"]["reason"] and "404 days" in ev["after"]["reason"]
    # exempt: approved and locked; the unpinned old working state fades; the newest one is young
    after = {m["id"]: m for m in mem.learned(project=PROJECT, status="all")}
    assert after[states[0]["id"]]["status"] == "active" and after[states[1]["id"]]["status"] == "active"
    assert after[states[2]["id"]]["status"] == "archived"
    newest = max((m for m in after.values() if m["kind"] == "working_state"), key=lambda m: m["data"]["last_seen"])
    assert newest["status"] == "active"
    # restated late, the preference is fresh; the package manager fact kept by its late uv sync
    assert one(mem, lambda m: m["kind"] == "preference")["status"] == "active"
    assert one(mem, lambda m: m["slot"] == "pkg.manager" and m["kind"] == "fact")["status"] == "active"
    # never injected: "run the tests" names the slot, the archived command does not come
    packet = mem.turn_start("please run the tests", project=PROJECT)
    assert test_cmd["id"] not in {i["id"] for i in packet["items"]}
    assert test_cmd["id"] not in {m["id"] for m in mem.learned(project=PROJECT)}

    shown = service.show(mem, mem.scope(), test_cmd["id"])["retention"]
    assert shown["score"] == test_cmd["data"]["decay"]["retention"] and shown["half_life_days"] == 60
    assert service.show(mem, mem.scope(), states[1]["id"])["retention"]["exempt"] == "locked"
    # the same turns again (incremental or rebuild): the same result, no new events
    n = len(service.history(mem, mem.scope(), test_cmd["id"]))
    assert mem.learn(rebuild=True)["decayed"] == 0
    assert len(service.history(mem, mem.scope(), test_cmd["id"])) == n
    assert one(mem, lambda m: m["slot"] == "cmd.test")["status"] == "archived"

    # used again: confirmed, active again by the learner
    seed_again(mem)
    mem.learn()
    test_cmd = one(mem, lambda m: m["slot"] == "cmd.test")
    assert test_cmd["status"] == "active" and "decay" not in test_cmd["data"]
    assert _events(mem, test_cmd["id"])[-1] == ("activated", "learner")

    # another owner's same history decays on its own, never in this scope
    assert all(m["owner"] == "default" for m in mem.learned(status="all"))
    assert any(m["status"] == "active" for m in mem.learned(status="all", owner="bob"))


def test_restore_an_archived_memory_pins_it(mem):
    seed_early(mem)
    seed_later(mem)
    learn(mem)
    test_cmd = one(mem, lambda m: m["slot"] == "cmd.test")
    assert test_cmd["status"] == "archived"
    back = service.act(mem, mem.scope(), test_cmd["id"], "restore")
    assert back["status"] == "active" and back["decided"] == "active"
    mem.learn(rebuild=True)
    assert one(mem, lambda m: m["slot"] == "cmd.test")["status"] == "active"     # approved: exempt
    with pytest.raises(InputError, match="not deleted or archived"):
        service.act(mem, mem.scope(), test_cmd["id"], "restore")


def test_rolling_back_decay_keeps_the_memory(mem):
    seed_early(mem)
    learn(mem)
    seed_later(mem)
    learn(mem)
    ws = one(mem, lambda m: m["kind"] == "working_state" and "Always use uv" in m["text"])
    assert ws["status"] == "archived"
    ev = service.history(mem, mem.scope(), ws["id"])[-1]
    assert (ev["action"], ev["actor"]) == ("archived", "decay")
    back = service.rollback(mem, mem.scope(), ev["id"])
    assert back["status"] == "active" and back["decided"] == "active"      # kept by the user: exempt now
    learn(mem, rebuild=True)
    assert one(mem, lambda m: m["id"] == ws["id"])["status"] == "active"


def test_a_memory_archived_at_its_first_learn_says_why(mem):
    seed_early(mem)
    seed_later(mem)
    learn(mem)                    # a first learn of an old history: created archived, with the reason in data
    ws = one(mem, lambda m: m["kind"] == "working_state" and "Always use uv" in m["text"])
    assert ws["status"] == "archived" and "retention" in ws["data"]["decay"]["reason"]
    assert _events(mem, ws["id"]) == [("created", "learner")]


def test_decay_can_be_switched_off(mem, monkeypatch):
    monkeypatch.setenv("REMEM_LEARN_DECAY", "0")
    import remem

    with remem.open() as m:
        seed_early(m)
        seed_later(m)
        assert m.learn()["decayed"] == 0
        assert one(m, lambda x: x["slot"] == "cmd.test")["status"] == "active"


# -- forgetting modes ---------------------------------------------------------------------------

def _pref(mem, owner=None):
    return one(mem, lambda m: m["kind"] == "preference", owner=owner)


def test_soft_delete_restore_and_purge(mem):
    seed_early(mem)
    seed_later(mem)
    learn(mem)
    pref = _pref(mem)
    assert pref["status"] == "active"
    gone = service.delete(mem, mem.scope(), pref["id"])
    assert gone["status"] == "deleted" and gone["data"]["deleted_at"] == pytest.approx(time.time(), abs=60)
    assert pref["id"] not in {m["id"] for m in mem.learned(project=PROJECT)}           # never injected
    assert [m["id"] for m in mem.learned(project=PROJECT, status="deleted")] == [pref["id"]]
    assert pref["id"] not in {i["id"] for i in mem.turn_start("install the packages", project=PROJECT)["items"]}
    with pytest.raises(InputError, match="already deleted"):
        service.delete(mem, mem.scope(), pref["id"])
    # learning keeps the user's delete, with its time
    mem.learn(rebuild=True)
    kept = _pref(mem)
    assert kept["status"] == "deleted" and kept["data"]["deleted_at"] == gone["data"]["deleted_at"]
    assert kept["text"] == pref["text"] and kept["evidence"] == pref["evidence"]
    # restored as it was
    back = service.act(mem, mem.scope(), pref["id"], "restore")
    assert back["status"] == "active" and not back["decided"] and "deleted_at" not in back["data"]
    assert [a for a, _ in _events(mem, pref["id"])][-3:] == ["delete", "updated", "restore"]
    mem.learn(rebuild=True)
    assert _pref(mem)["status"] == "active" and _pref(mem)["confidence"] == pref["confidence"]

    # deleted 31 days ago: restore refuses and changes nothing; the learn job purges it
    service.delete(mem, mem.scope(), pref["id"])
    area = mem.store.learned
    rec = area.get(mem.scope(), pref["id"])
    rec["data"]["deleted_at"] = time.time() - 31 * DAY
    with mem.store.transaction():
        area.put(rec)
    with pytest.raises(InputError, match="deleted 31 days ago.*nothing was changed"):
        service.act(mem, mem.scope(), pref["id"], "restore")
    assert area.get(mem.scope(), pref["id"])["status"] == "deleted"
    assert area.get(mem.scope(), pref["id"])["text"] == pref["text"]
    d = mem.learn()
    assert d["purged"] == 1, d
    with pytest.raises(service.LearnedNotFound):
        service.show(mem, mem.scope(), pref["id"])
    tomb = area.get(mem.scope(), pref["id"])
    assert tomb["decided"] == "forgotten" and tomb["text"] == ""
    assert [e["action"] for e in area.events(mem.scope(), pref["id"])] == ["forget"]    # its history went
    mem.learn(rebuild=True)                                  # not re-created from the same turns
    assert pref["id"] not in {m["id"] for m in mem.learned(status="all")}
    assert area.get(mem.scope(), pref["id"])["text"] == ""


def test_hard_delete_and_bad_input_on_the_cli(mem):
    seed_early(mem)
    learn(mem)
    pref = _pref(mem)
    r = run_cli("learned", "delete", pref["id"], "--hard")
    assert r.returncode == 0, r.stderr.decode()
    assert "for good" in r.stdout.decode()
    r = run_cli("learned", "restore", pref["id"])
    assert r.returncode != 0 and "no learned memory" in r.stderr.decode()
    r = run_cli("learned", "delete", "m_doesnotexist")
    assert r.returncode != 0 and "no learned memory 'm_doesnotexist'" in r.stderr.decode()
    assert "Traceback" not in r.stderr.decode()
    mem.learn(rebuild=True)
    assert pref["id"] not in {m["id"] for m in mem.learned(status="all")}

    # soft delete and restore through the CLI, with JSON
    fact = one(mem, lambda m: m["slot"] == "cmd.test")
    r = run_cli("learned", "delete", fact["id"], "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["status"] == "deleted"
    r = run_cli("learned", "list", "--status", "deleted")
    assert fact["id"] in r.stdout.decode() and "[deleted just now]" in r.stdout.decode()
    r = run_cli("learned", "restore", fact["id"])
    assert r.returncode == 0 and "is active" in r.stdout.decode()
    # bob's copy of the same history has the same ids in his own rows: this owner's delete never reaches them
    bobs = _pref(mem, owner="bob")
    assert bobs["id"] == pref["id"] and bobs["status"] == "active"
    r = run_cli("learned", "delete", fact["id"])
    assert r.returncode == 0
    assert one(mem, lambda m: m["slot"] == "cmd.test", owner="bob")["status"] == "active"
    r = run_cli("learned", "delete", fact["id"], "--owner", "bob")
    assert r.returncode == 0
    service.act(mem, mem.scope(), fact["id"], "restore")              # this owner's only
    assert one(mem, lambda m: m["slot"] == "cmd.test", owner="bob")["status"] == "deleted"
    assert one(mem, lambda m: m["slot"] == "cmd.test")["status"] == "active"
    assert service.act(mem, mem.scope("bob"), fact["id"], "restore")["status"] == "active"


def test_forgetting_a_session_takes_what_only_it_taught(mem):
    ids = seed_early(mem)
    later = seed_later(mem)
    learn(mem)
    env_rule = one(mem, lambda m: ".env" in m["text"] and m["kind"] == "convention")
    assert {e for e in env_rule["evidence"]} == {ids[3]}                       # said only in session a3
    pref = _pref(mem)
    assert ids[0] in pref["evidence"] and later[-1] in pref["evidence"]       # said in a1 and b5
    pm = one(mem, lambda m: m["slot"] == "pkg.manager" and m["kind"] == "fact")
    mem.store.conn.execute("DELETE FROM jobs")

    mem.forget(session="a3")
    assert env_rule["id"] not in {m["id"] for m in mem.learned(status="all")}
    mem.forget(session="a1")
    everything = "\n".join(m["text"] + json.dumps(m["data"]) for m in mem.learned(status="all"))
    assert "Always use uv, not pip" not in everything and ".env.example" not in everything
    jobs = mem.store.conn.execute("SELECT payload FROM jobs WHERE kind = 'learn'").fetchall()
    assert [json.loads(j[0])["owner"] for j in jobs] == ["default"]          # the relearn is queued
    mem.learn()
    # the memories with other evidence are back, minus the forgotten turns
    pref = _pref(mem)
    assert ids[0] not in pref["evidence"] and later[-1] in pref["evidence"]
    assert pref["status"] == "active" and "Always use uv" not in pref["text"]
    pm_after = one(mem, lambda m: m["slot"] == "pkg.manager" and m["kind"] == "fact")
    assert pm_after["id"] == pm["id"] and not set(pm_after["evidence"]) & {ids[0], ids[1]}
    # and what only the forgotten sessions taught is not learned again
    mem.learn(rebuild=True)
    assert not any(".env" in m["text"] for m in mem.learned(status="all"))
    cited = {t for m in mem.learned(status="all") for t in m["evidence"]}
    assert not cited & {ids[0], ids[1], ids[3]}
    # the other owner's copy of the same history is untouched
    assert any(".env" in m["text"] for m in mem.learned(status="all", owner="bob"))


def test_mcp_delete_and_restore_only_the_agents_own(mem):
    from remem.mcp_server import Tools

    seed_early(mem)
    learn(mem)
    pref = _pref(mem)
    tools = Tools(mem, agent="claude-code")
    assert tools.learned_delete(pref["id"]) == {"id": pref["id"], "status": "deleted", "hard": False}
    assert _events(mem, pref["id"])[-1] == ("delete", "agent:claude-code")
    assert tools.learned_restore(pref["id"])["status"] == "active"
    # bob learned the same history: the same memory id, his own row (owner, id); the agent's owner picks
    bobs = _pref(mem, owner="bob")
    assert bobs["id"] == pref["id"]
    assert tools.learned_delete(pref["id"], hard=True)["status"] == "gone"
    assert _pref(mem, owner="bob")["status"] == "active"
    with pytest.raises(service.LearnedNotFound):
        tools.learned_restore(pref["id"])
    with pytest.raises(service.LearnedNotFound):
        tools.learned_delete("m_0000000000000000")
    bob_tools = Tools(mem, agent="codex", owner="bob")
    assert bob_tools.learned_delete(pref["id"])["status"] == "deleted"
    assert _pref(mem, owner="bob")["status"] == "deleted"


def test_rest_delete_restore_and_errors(tmp_path):
    import httpx

    import remem
    from remem.server.testing import Daemon

    (tmp_path / "home").mkdir()
    with remem.open(tmp_path / "remem", env={"REMEM_EMBEDDING_MODEL": "hash"}) as m:
        seed_early(m)
        seed_later(m)
        learn(m)
        pref, fact = _pref(m), one(m, lambda x: x["slot"] == "cmd.test")
    with Daemon(tmp_path / "remem", env={"HOME": str(tmp_path / "home"), "REMEM_AUTO_SYNC": "0"}) as d, \
            d.client() as c:
        assert httpx.post(d.url + f"/api/v1/learned/{pref['id']}/delete", timeout=5).status_code == 401
        got = c.post(f"/api/v1/learned/{pref['id']}/delete").json()
        assert got["status"] == "deleted" and got["data"]["deleted_at"]
        assert c.post(f"/api/v1/learned/{pref['id']}/delete").status_code == 400          # already deleted
        listed = c.get("/api/v1/learned", params={"status": "deleted", "project": PROJECT}).json()["items"]
        assert [i["id"] for i in listed] == [pref["id"]]
        assert c.post(f"/api/v1/learned/{pref['id']}/restore").json()["status"] == "active"
        assert c.post(f"/api/v1/learned/{pref['id']}/restore").status_code == 400         # nothing to restore
        # decay's archive, restored through the API: approved
        assert fact["status"] == "archived"
        back = c.post(f"/api/v1/learned/{fact['id']}/restore").json()
        assert back["status"] == "active" and back["decided"] == "active"
        # hard: gone, and a restore is a clear 404
        assert c.post(f"/api/v1/learned/{pref['id']}/delete", params={"hard": "true"}).status_code == 200
        r = c.post(f"/api/v1/learned/{pref['id']}/restore")
        assert r.status_code == 404 and "no learned memory" in r.text
        assert c.post("/api/v1/learned/m_nothere/delete").status_code == 404
        # another owner: bob's own row with the same id, untouched by this owner's delete
        bobs = c.get("/api/v1/learned", params={"owner": "bob", "status": "all", "project": PROJECT}).json()["items"]
        assert any(i["id"] == pref["id"] and i["status"] == "active" for i in bobs)


@pytest.mark.sqlite_only("m012_retention copies the SQLite learned table; PostgreSQL widens its CHECK in place")
def test_m012_keeps_every_learned_row_and_the_cascade(monkeypatch):
    import remem
    from remem.store.sqlite import migrations
    from remem.store.sqlite.learned import SqliteLearned

    def old_cursors(self, scope):        # the learned area's cursor SQL of that schema (before m019)
        where, params = _where(scope)
        rows = self._db.execute("SELECT owner, project, turns, last_rowid, last_update, learned_at, dirty "
                                f"FROM learned_cursor WHERE {where}", params)
        return {(r[0], r[1]): dict(r) for r in rows}

    def old_set_cursor(self, owner, project, seen, now, learner=""):
        self._db.execute(
            "INSERT INTO learned_cursor (owner, project, turns, last_rowid, last_update, learned_at, dirty) "
            "VALUES (?,?,?,?,?,?,0) ON CONFLICT (owner, project) DO UPDATE SET turns = excluded.turns, "
            "last_rowid = excluded.last_rowid, last_update = excluded.last_update, "
            "learned_at = excluded.learned_at, dirty = 0", (owner, project, *seen, now))

    from remem.store.sqlite.learned import _where

    older = [f for f in migrations.MIGRATIONS if f.__name__ < "m012"]
    with monkeypatch.context() as mp:
        mp.setattr(migrations, "MIGRATIONS", older)
        mp.setattr(SqliteLearned, "cursors", old_cursors)
        mp.setattr(SqliteLearned, "set_cursor", old_set_cursor)
        with remem.open() as m:
            ids = seed_early(m)
            learn(m)
            before = sorted((r["owner"], r["id"], r["status"], r["text"], r["confidence"], json.dumps(r["data"]))
                            for r in m.learned(status="all") + m.learned(status="all", owner="bob"))
            evidence = m.store.conn.execute("SELECT count(*) FROM learned_evidence").fetchone()[0]
            assert m.store.conn.execute("SELECT count(*) FROM schema_migrations WHERE name = 'm012_retention'"
                                        ).fetchone()[0] == 0
    with remem.open() as m:                                   # migrates to m012
        db = m.store.conn
        assert db.execute("SELECT count(*) FROM schema_migrations WHERE name = 'm012_retention'").fetchone()[0] == 1
        after = sorted((r["owner"], r["id"], r["status"], r["text"], r["confidence"], json.dumps(r["data"]))
                       for r in m.learned(status="all") + m.learned(status="all", owner="bob"))
        assert after == before and len(after) > 10
        assert db.execute("SELECT count(*) FROM learned_evidence").fetchone()[0] == evidence
        names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE tbl_name IN ('learned', 'turns')")}
        assert {"learned_scope", "learned_stale", "learned_turn_forgotten"} <= names
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        # the new status is allowed, the cascade still runs
        pref = _pref(m)
        assert service.delete(m, m.scope(), pref["id"])["status"] == "deleted"
        m.forget(session="a3")
        assert not any(".env" in x["text"] for x in m.learned(status="all"))
        assert ids[3] not in {e[0] for e in db.execute("SELECT turn_id FROM learned_evidence")}


def test_a_switched_package_manager_stops_being_injected(mem):
    """npm in the first three sessions, bun in the two that came 600 days later: the world model still
    counts npm's runs (the most successful runs win), so before decay the packet said "npm" in a bun
    project; now the unconfirmed npm facts fade and nothing misleads the agent."""
    from decay_data import _turn
    from learned_data import bash

    npm_out = "added 120 packages, and audited 121 packages in 3s\n\nfound 0 vulnerabilities"
    rows = [(f"n{k}", k, f"Set up part {k} of the web client", "Done.",
             [bash("npm install", npm_out), bash("npm test", "Tests: 12 passed, 12 total")]) for k in range(3)]
    rows += [(f"w{k}", 600 + k, f"Add the reports page {k}", "Done.",
              [bash("bun install", "bun install v1.1.29\n\n 120 packages installed [2.31s]"),
               bash("bun test", "12 pass\n0 fail")]) for k in range(2)]
    mem.add_turns([_turn("default", *r, i) for i, r in enumerate(rows)])
    mem.learn()
    npm = one(mem, lambda m: m["slot"] == "pkg.manager")
    assert npm["value"] == "npm" and npm["status"] == "archived"
    packet = mem.turn_start("install the date library", project=PROJECT)
    assert not any("npm" in i.get("text", "") for i in packet["items"] if i.get("layer") in ("L2", "L3"))

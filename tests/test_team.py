"""Team use (issue 17): users, their tokens and teams in the store; whose owners a request may read and
write (pure); and the REST API of a real daemon with two users and a team: no face lets alice read bob's
private memory, both read the team's, a removed user's token and cookie stop working, the home token
keeps working as before."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import httpx
import pytest

from learned_data import turns as learned_turns
from remem import team
from remem.model import TurnIn
from remem.server.testing import Daemon

pytestmark = pytest.mark.module_store("rest")


# -- pure: names and the principal's owners ---------------------------------------------------------
@pytest.mark.parametrize("name, ok", [
    ("alice", True), ("a", True), ("ops-team_2.x", True), ("9lives", True),
    ("", False), ("Alice", False), ("-x", False), ("a b", False), ("a:b", False), ("a/b", False),
    ("x" * 63, True), ("x" * 64, False), ("ä", False), ("alice\n", True),  # stripped
])
def test_names(name, ok):
    if ok:
        assert team.check_name(name) == name.strip()
    else:
        with pytest.raises(team.TeamError, match="invalid"):
            team.check_name(name)


ALICE = team.Principal(user="alice", teams=("eng",))


@pytest.mark.parametrize("asked, got", [
    (None, ["user:alice", "team:eng"]),
    ("user:alice", "user:alice"),
    ("team:eng", "team:eng"),
    (["team:eng", "user:alice"], ["team:eng", "user:alice"]),
    ("user:bob", PermissionError),
    (["user:alice", "user:bob"], PermissionError),   # never narrowed quietly to what is allowed
    ("team:ops", PermissionError),
    ("default", PermissionError),
])
def test_user_reads(asked, got):
    if got is PermissionError:
        with pytest.raises(team.OwnerRefused):
            ALICE.reads(asked)
    else:
        assert ALICE.reads(asked) == got


@pytest.mark.parametrize("asked, got", [
    (None, "user:alice"), ("", "user:alice"), ("user:alice", "user:alice"),
    ("team:eng", PermissionError), ("user:bob", PermissionError), ("default", PermissionError),
])
def test_user_writes(asked, got):
    if got is PermissionError:
        with pytest.raises(team.OwnerRefused):
            ALICE.writes(asked)
    else:
        assert ALICE.writes(asked) == got


def test_the_home_reads_and_writes_as_before():
    home = team.Principal()
    assert home.is_home and home.reads(None) is None and home.writes(None) is None
    assert home.reads("user:bob") == "user:bob" and home.writes("team:eng") == "team:eng"
    assert ALICE.shares_to("eng") == "team:eng"
    with pytest.raises(team.OwnerRefused):
        ALICE.shares_to("ops")


@pytest.mark.parametrize("method, path, ok", [
    ("GET", "/", True), ("POST", "/", False), ("GET", "/api/v1/memories", True), ("HEAD", "/api/v1/memories", True),
    ("GET", "/api/v1/memories/t_1", True), ("DELETE", "/api/v1/memories/t_1", True),
    ("GET", "/api/v1/memories/t_1/x", False), ("GET", "/api/v1/memories/", False),
    ("POST", "/api/v1/share", True), ("GET", "/api/v1/me", True),
    ("POST", "/api/v1/learned/m_1/approve", True), ("POST", "/api/v1/learned/m_1/explode", False),
    ("POST", "/api/v1/learned/events/3/rollback", True), ("POST", "/api/v1/packets/7/feedback", True),
    ("POST", "/api/v1/recall/repair", True), ("GET", "/api/v1/recall/repair", False),
    ("GET", "/api/v1/config", False), ("PATCH", "/api/v1/config", False), ("GET", "/api/v1/status", False),
    ("GET", "/api/v1/events", False), ("GET", "/api/v1/export/sqlite", False), ("POST", "/api/v1/data/clear", False),
    ("GET", "/api/v1/openapi.json", False), ("GET", "/api/v1/jobs", False), ("POST", "/api/v1/sources/sync", False),
    ("GET", "/api/v1/memoriesX", False), ("GET", "/api/v2/memories", False),
])
def test_which_routes_a_user_token_reaches(method, path, ok):
    from remem.server.security import user_may

    assert user_may(method, path) is ok


def test_tokens_and_cookies_are_stored_as_hashes():
    tok = team.new_token()
    assert tok.startswith("rmu_") and len(tok) > 40 and tok != team.new_token()
    assert team.token_hash(tok) == hashlib.sha256(tok.encode()).hexdigest()
    from remem.server.security import session_value

    assert team.session_hash(tok) == hashlib.sha256(session_value(tok).encode()).hexdigest()


# -- the store: users, tokens, teams; nothing half-written --------------------------------------------
def test_users_and_teams_in_the_store(store):
    alice = team.add_user(store, "alice")
    team.add_user(store, "bob")
    with pytest.raises(team.TeamError, match="exists already"):
        team.add_user(store, "alice")
    with pytest.raises(team.TeamError, match="invalid"):
        team.add_user(store, "Bad Name")
    assert [u["name"] for u in store.users.users()] == ["alice", "bob"]
    dump = json.dumps(store.users.users())
    assert alice not in dump and team.token_hash(alice) not in dump   # listings show counts, never hashes

    with pytest.raises(team.TeamError, match="no user ghost"):
        team.add_team(store, "eng", ["alice", "ghost"])
    assert store.users.teams() == []                                 # nothing half-written
    assert team.add_team(store, "eng", ["alice", "alice"])["members"] == ["alice"]
    with pytest.raises(team.TeamError, match="exists already"):
        team.add_team(store, "eng", [])
    assert team.change_members(store, "eng", ["bob"], add=True) == 1
    with pytest.raises(team.TeamError, match="no team"):
        team.change_members(store, "ops", ["bob"], add=True)
    assert team.principal_of(store, token=alice) == team.Principal(user="alice", teams=("eng",))
    assert team.principal_of(store, cookie=team.session_of(alice)) == team.Principal(user="alice", teams=("eng",))
    assert team.principal_of(store, token="rmu_wrong") is None
    assert team.principal_of(store, cookie=alice) is None            # the token is not its own cookie

    team.remove_user(store, "alice")
    assert team.principal_of(store, token=alice) is None
    assert [t["members"] for t in store.users.teams()] == [["bob"]]
    with pytest.raises(team.TeamError, match="no user"):
        team.remove_user(store, "alice")
    team.remove_team(store, "eng")
    assert store.users.teams() == []
    assert [a["action"] for a in store.audit.recent(20)][:2] == ["team_remove", "user_remove"]
    assert alice not in json.dumps(store.audit.recent(50))


# -- the daemon's REST API with two users and a team ----------------------------------------------------
SECRET_A, SECRET_B, SHARED = "alice kiwi cache secret", "bob mango deploy secret", "team papaya runbook"


@pytest.fixture(scope="module")
def rest(tmp_path_factory):
    import remem

    base = tmp_path_factory.mktemp("team")
    home, user_home = base / "remem", base / "home"
    user_home.mkdir()
    with remem.open(home, env={"REMEM_EMBEDDING_MODEL": "hash"}) as m:
        toks = {name: team.add_user(m.store, name) for name in ("alice", "bob", "carol", "dave", "erin", "frank")}
        team.add_team(m.store, "eng", ["alice", "bob"])
        team.add_team(m.store, "web", ["erin", "frank"])
        m.add_turns([TurnIn(request=f"{SECRET_B} number {i}", reply="bob reply mango", owner="user:bob",
                             agent="codex", project="shop", session_id=f"bob-s{i}") for i in range(3)])
        m.add_turns(learned_turns("user:bob"))
        m.add_turns(learned_turns("user:erin"))
        m.learn(owner="user:bob")
        m.learn(owner="user:erin")
        assert m.learned(owner="user:bob") and m.learned(owner="user:erin"), "bob and erin have learned memories"
        m.add("the home's own note about papaya", agent="cli")
    with Daemon(home, env={"HOME": str(user_home), "REMEM_AUTO_SYNC": "0"}) as d:
        clients = {n: httpx.Client(base_url=d.url, headers={"Authorization": f"Bearer {t}"}, timeout=30)
                   for n, t in toks.items()}
        a = clients["alice"]
        r = a.post("/api/v1/turns", json={"turns": [
            {"request": f"{SECRET_A} {i}", "reply": "alice reply kiwi", "agent": "claude-code", "project": "shop",
             "session_id": f"alice-s{i}"} for i in range(2)] + [
            {"request": SHARED, "reply": "run make release", "agent": "claude-code", "project": "shop",
             "session_id": "alice-s9"}]})
        assert r.status_code == 200, r.text
        ids = [x["id"] for x in r.json()["results"]]
        copied = a.post("/api/v1/share", json={"id": ids[-1], "team": "eng"})
        assert copied.status_code == 200, copied.text
        yield {"d": d, "c": clients, "tokens": toks, "home": home, "alice_ids": ids, "copied": copied.json()}
        for c in clients.values():
            c.close()


def _bob_ids(rest) -> list[str]:
    with rest["d"].client() as home:
        return [r["id"] for r in home.get("/api/v1/memories", params={"owner": "user:bob", "limit": 100}).json()["items"]]


def test_writes_go_to_the_users_own_owner(rest):
    a = rest["c"]["alice"]
    items = a.get("/api/v1/memories", params={"owner": "user:alice"}).json()["items"]
    assert {i["owner"] for i in items} == {"user:alice"} and len(items) == 3
    assert a.post("/api/v1/memories", json={"text": "x", "owner": "user:bob"}).status_code == 403
    assert a.post("/api/v1/memories", json={"text": "x", "owner": "team:eng"}).status_code == 403
    assert a.post("/api/v1/turns", json={"turns": [{"request": "x", "agent": "codex", "owner": "user:bob"}]}
                  ).status_code == 403
    added = a.post("/api/v1/memories", json={"text": "alice note on plums"})
    assert added.status_code == 201 and a.get(f"/api/v1/memories/{added.json()['id']}").json()["owner"] == "user:alice"


def test_a_users_import_lands_in_its_own_memory(rest):
    a = rest["c"]["alice"]
    line = json.dumps({"request": "imported apricot note", "reply": "ok", "owner": "user:bob", "agent": "codex",
                       "source_key": "imp:apricot"}) + "\n"
    assert a.post("/api/v1/import", params={"owner": "user:bob"}, content=line).status_code == 403
    assert a.post("/api/v1/import", content=line).json()["counts"]["added"] == 1
    hits = a.get("/api/v1/memories/search", params={"q": "apricot"}).json()["results"]
    assert [h["owner"] for h in hits] == ["user:alice"]
    assert rest["c"]["bob"].get("/api/v1/memories/search", params={"q": "apricot"}).json()["results"] == []


def test_alice_cannot_read_bobs_private_memory_on_any_face(rest):
    a = rest["c"]["alice"]
    bob_ids = _bob_ids(rest)
    assert len(bob_ids) >= 3
    listed = a.get("/api/v1/memories", params={"limit": 500}).json()["items"]
    assert {i["owner"] for i in listed} == {"user:alice", "team:eng"}
    assert "mango" not in json.dumps(listed)
    for q in ("mango", "bob deploy secret", "bun"):
        for r in (a.get("/api/v1/memories/search", params={"q": q, "k": 50}),
                  a.post("/api/v1/memories/search", json={"query": q, "k": 50})):
            assert r.status_code == 200
            assert all(x["owner"] in ("user:alice", "team:eng") for x in r.json()["results"]), r.json()
    packet = a.post("/api/v1/recall/turn-start", json={"prompt": "how do we deploy mango? bun or npm?"})
    assert packet.status_code == 200
    shown = json.dumps([packet.json()["text"], packet.json()["items"]])   # the packet echoes the prompt
    assert "mango" not in shown and "bun" not in shown.lower()
    start = a.post("/api/v1/recall/session-start", json={"project": "shop-web"})
    assert start.status_code == 200 and "bun" not in start.text.lower()
    for bid in bob_ids:
        assert a.get(f"/api/v1/memories/{bid}").status_code == 404
        assert a.delete(f"/api/v1/memories/{bid}").status_code == 404
    export = a.get("/api/v1/export/jsonl")
    assert export.status_code == 200 and "mango" not in export.text and "user:bob" not in export.text
    sessions = a.get("/api/v1/sessions").json()["items"]
    assert sessions and {s["owner"] for s in sessions} <= {"user:alice", "team:eng"}
    assert a.get("/api/v1/sessions/bob-s0/timeline").json()["items"] == []
    assert a.get("/api/v1/learned", params={"status": "all"}).json()["items"] == []
    with rest["d"].client() as home:
        bob_learned = home.get("/api/v1/learned", params={"owner": "user:bob", "status": "all"}).json()["items"]
    assert bob_learned
    for item in bob_learned:
        assert a.get(f"/api/v1/learned/{item['id']}").status_code == 404
        assert a.post(f"/api/v1/learned/{item['id']}/approve").status_code == 404
    stats = a.get("/api/v1/stats").json()
    assert "mango" not in json.dumps(stats) and stats["turns"] >= 3 and stats["owners"] == ["user:alice", "team:eng"]
    assert "home" not in stats and "vectors" not in stats             # the installation's facts stay the home's
    # asking for bob's owner is refused, never answered with a narrower or wider scope
    for path in ("/api/v1/memories", "/api/v1/memories/search?q=mango", "/api/v1/sessions", "/api/v1/stats",
                 "/api/v1/export/jsonl", "/api/v1/learned", "/api/v1/packets", f"/api/v1/memories/{bob_ids[0]}"):
        sep = "&" if "?" in path else "?"
        assert a.get(f"{path}{sep}owner=user:bob").status_code == 403, path
        assert a.get(f"{path}{sep}owner=user:alice,user:bob").status_code == 403, path
    assert a.post("/api/v1/recall/turn-start", json={"prompt": "mango", "owner": "user:bob"}).status_code == 403
    # the same reads by bob find what alice's did not (so the checks above can see a leak)
    b = rest["c"]["bob"]
    own = b.post("/api/v1/recall/turn-start", json={"prompt": "how do we deploy mango? bun or npm?"}).json()
    assert "mango" in json.dumps([own["text"], own["items"]])
    assert "bun" in b.post("/api/v1/recall/session-start", json={"project": "shop-web"}).text.lower()
    assert b.get("/api/v1/learned", params={"status": "all"}).json()["items"]
    assert "mango" in b.get("/api/v1/export/jsonl").text


def test_both_members_read_the_team_and_a_non_member_does_not(rest):
    copy = rest["copied"]["shared_id"]
    assert rest["copied"]["team"] == "team:eng" and copy not in rest["alice_ids"]
    for name in ("alice", "bob"):
        c = rest["c"][name]
        got = c.get(f"/api/v1/memories/{copy}")
        assert got.status_code == 200 and got.json()["owner"] == "team:eng" and SHARED in got.json()["request"]
        hits = c.get("/api/v1/memories/search", params={"q": "papaya runbook"}).json()["results"]
        assert copy in [h["id"] for h in hits]
        assert SHARED in c.post("/api/v1/recall/turn-start", json={"prompt": "where is the papaya runbook?"}).text
        assert c.get("/api/v1/memories", params={"owner": "team:eng"}).json()["items"]
    b = rest["c"]["bob"]
    assert "kiwi" not in json.dumps(b.get("/api/v1/memories", params={"limit": 500}).json())  # alice's own stays hers
    assert b.get(f"/api/v1/memories/{rest['alice_ids'][0]}").status_code == 404
    assert b.get(f"/api/v1/memories/{rest['alice_ids'][-1]}").status_code == 404   # shared is a copy
    assert b.delete(f"/api/v1/memories/{copy}").status_code == 404     # members read the team, cannot forget it
    c = rest["c"]["carol"]                                             # not a member of eng
    assert c.get(f"/api/v1/memories/{copy}").status_code == 404
    assert c.get("/api/v1/memories", params={"owner": "team:eng"}).status_code == 403
    assert c.get("/api/v1/memories").json()["items"] == []
    me = rest["c"]["bob"].get("/api/v1/me").json()
    assert me == {"user": "bob", "home": False, "owner": "user:bob", "teams": ["eng"],
                  "reads": ["user:bob", "team:eng"]}
    assert rest["c"]["bob"].get("/api/v1/owners").json()["owners"] == ["user:bob", "team:eng"]


def test_sharing(rest):
    a, b = rest["c"]["alice"], rest["c"]["bob"]
    again = a.post("/api/v1/share", json={"id": rest["alice_ids"][-1], "team": "eng"}).json()
    assert again["shared_id"] == rest["copied"]["shared_id"] and again["status"] == "duplicate"  # stable id
    assert a.post("/api/v1/share", json={"id": _bob_ids(rest)[0], "team": "eng"}).status_code == 404
    assert a.post("/api/v1/share", json={"id": rest["alice_ids"][0], "team": "ops"}).status_code == 403
    assert a.post("/api/v1/share", json={"id": rest["alice_ids"][0], "team": "Bad Team"}).status_code == 400
    assert rest["c"]["carol"].post("/api/v1/share", json={"id": rest["alice_ids"][0], "team": "eng"}
                                   ).status_code == 403
    assert a.post("/api/v1/share", json={"id": rest["alice_ids"][0], "team": "eng", "owner": "user:bob"}
                  ).status_code == 403
    # forgetting the private turn leaves the team's copy (and the other way round)
    note = a.post("/api/v1/memories", json={"text": "alice shares the quince checklist"}).json()["id"]
    copy = a.post("/api/v1/share", json={"id": note, "team": "eng"}).json()["shared_id"]
    assert a.delete(f"/api/v1/memories/{note}").status_code == 200
    assert b.get(f"/api/v1/memories/{copy}").status_code == 200


def test_sharing_a_learned_memory(rest):
    erin, frank = rest["c"]["erin"], rest["c"]["frank"]
    assert frank.get("/api/v1/learned", params={"status": "all"}).json()["items"] == []
    mine = erin.get("/api/v1/learned", params={"status": "all"}).json()["items"]
    bun = next(i for i in mine if "Use bun, not npm" in i["text"] and i["status"] == "active")
    got = erin.post("/api/v1/share", json={"id": bun["id"], "team": "web"})
    assert got.status_code == 200, got.text
    assert got.json()["learned"]["status"] == "active" and len(got.json()["shared_turns"]) == len(bun["evidence"])
    theirs = frank.get("/api/v1/learned").json()["items"]
    assert (bun["id"], "team:web") in [(i["id"], i["owner"]) for i in theirs]
    assert {i["owner"] for i in theirs} == {"team:web"}   # (what else those turns teach comes along: see docs)
    assert "bun" in frank.post("/api/v1/recall/session-start", json={"project": "shop-web"}).text.lower()
    assert frank.get(f"/api/v1/learned/{bun['id']}").json()["quotes"]          # evidence the team can read
    # members curate the team's memories: each decision is theirs in the history; deleting one for good
    # (and learning the team) stays the server home's; someone outside the team reaches none of it
    locked = frank.post(f"/api/v1/learned/{bun['id']}/lock")
    assert locked.status_code == 200 and locked.json()["locked"] is True, locked.text
    assert frank.post(f"/api/v1/learned/{bun['id']}/delete").json()["status"] == "deleted"
    assert frank.post(f"/api/v1/learned/{bun['id']}/restore").json()["status"] == "active"
    events = frank.get(f"/api/v1/learned/{bun['id']}/history").json()["events"]
    assert [e["actor"] for e in events[-3:]] == ["user:frank"] * 3, events[-3:]
    assert frank.post(f"/api/v1/learned/{bun['id']}/delete", params={"hard": "true"}).status_code == 404
    assert frank.post(f"/api/v1/learned/{bun['id']}/forget").status_code == 404
    assert frank.post("/api/v1/learned/learn", params={"owner": "team:web"}).status_code == 403
    assert rest["c"]["alice"].post(f"/api/v1/learned/{bun['id']}/unlock").status_code == 404   # not in web
    assert rest["c"]["alice"].post(f"/api/v1/learned/{bun['id']}/unlock", params={"owner": "team:web"}
                                   ).status_code == 403
    assert frank.post(f"/api/v1/learned/{bun['id']}/unlock").json()["locked"] is False
    other = next((i for i in mine if i["status"] != "active"), None)
    if other is not None:
        assert erin.post("/api/v1/share", json={"id": other["id"], "team": "web"}).status_code == 404
    assert rest["c"]["alice"].post("/api/v1/share", json={"id": bun["id"], "team": "eng"}).status_code == 404
    assert "bun" not in json.dumps(rest["c"]["alice"].get("/api/v1/learned", params={"status": "all"}).json())


def test_users_are_kept_off_the_homes_controls(rest):
    a = rest["c"]["alice"]
    for method, path in (("GET", "/api/v1/status"), ("GET", "/api/v1/config"), ("PATCH", "/api/v1/config"),
                         ("GET", "/api/v1/export/sqlite"), ("POST", "/api/v1/data/clear"), ("GET", "/api/v1/jobs"),
                         ("GET", "/api/v1/logs"), ("GET", "/api/v1/sources"), ("POST", "/api/v1/sources/sync"),
                         ("GET", "/api/v1/doctor"), ("PUT", "/api/v1/privacy"), ("GET", "/api/v1/integrations")):
        r = a.request(method, path, json={})
        assert r.status_code == 403, (method, path, r.status_code)


def test_the_home_token_works_as_before(rest):
    with rest["d"].client() as home:
        assert home.get("/api/v1/status").status_code == 200
        assert home.get("/api/v1/me").json()["home"] is True
        mine = home.get("/api/v1/memories").json()["items"]
        assert mine and {i["owner"] for i in mine} == {"default"}      # the configured owner, as before
        assert home.get("/api/v1/memories", params={"owner": "user:bob"}).json()["items"]
        assert home.get("/api/v1/memories", params={"owner": "team:eng"}).json()["items"]
        copy = home.post("/api/v1/share", json={"id": mine[0]["id"], "team": "eng"})
        assert copy.status_code == 200 and copy.json()["team"] == "team:eng"
        assert home.post("/api/v1/share", json={"id": mine[0]["id"], "team": "nope"}).status_code == 400


def test_wrong_and_revoked_tokens_are_refused(rest):
    import remem

    d = rest["d"]
    assert httpx.get(d.url + "/api/v1/memories", headers={"Authorization": "Bearer rmu_not-a-token"}).status_code == 401
    assert httpx.get(d.url + "/api/v1/memories").status_code == 401
    dave = rest["c"]["dave"]
    assert dave.get("/api/v1/memories").status_code == 200
    with remem.open(rest["home"], env={"REMEM_EMBEDDING_MODEL": "hash"}) as m:
        team.remove_user(m.store, "dave")                          # another process than the daemon
    assert dave.get("/api/v1/memories").status_code == 401
    assert dave.post("/api/v1/memories", json={"text": "x"}).status_code == 401


def test_viewer_login_with_a_user_token(rest):
    d = rest["d"]
    with httpx.Client(base_url=d.url, timeout=30) as v:
        assert v.post("/api/v1/auth/login", json={"token": "rmu_wrong"}).status_code == 401
        assert v.post("/api/v1/auth/login", json={"token": rest["tokens"]["carol"]}).status_code == 200
        cookie = v.cookies.get("remem_session")
        assert cookie and rest["tokens"]["carol"] not in cookie
        assert v.get("/api/v1/me").json()["user"] == "carol"
        assert v.get("/api/v1/memories").json()["items"] == []
        assert v.get("/api/v1/status").status_code == 403
        assert v.post("/api/v1/memories", json={"text": "x"}).status_code == 403           # no CSRF header
        made = v.post("/api/v1/memories", json={"text": "carol's viewer note"}, headers={"X-Remem-Request": "1"})
        assert made.status_code == 201
        assert v.get(f"/api/v1/memories/{made.json()['id']}").json()["owner"] == "user:carol"
        import remem

        with remem.open(rest["home"], env={"REMEM_EMBEDDING_MODEL": "hash"}) as m:
            team.remove_user(m.store, "carol")
        assert v.get("/api/v1/memories").status_code == 401
    with httpx.Client(base_url=d.url, timeout=30) as v:                 # the home's login as before
        assert v.post("/api/v1/auth/login", json={"token": d.token}).status_code == 200
        assert v.get("/api/v1/status").status_code == 200


def test_tokens_never_reach_the_log_or_the_home(rest):
    home: Path = rest["home"]
    assert rest["c"]["alice"].get("/api/v1/memories").status_code == 200   # this worker's log holds a request
    deadline = time.monotonic() + 10                    # (the log line is written as the response ends)
    while True:
        blobs = [p.read_bytes() for p in home.rglob("*") if p.is_file()]   # logs, state files, the SQLite file
        if any(b"GET /api/v1/memories" in b for b in blobs) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert any(b"GET /api/v1/memories" in b for b in blobs)            # the access log is among them
    for tok in rest["tokens"].values():
        assert all(tok.encode() not in b for b in blobs)

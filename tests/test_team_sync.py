"""A laptop joined to a team server (issue 17): ``remem team join URL --token T`` checks the token
and keeps it private; a shared project's turns go up as the team's and the team's come down into the
laptop's own SQLite, where recall ranks them with the laptop's; an interrupted sync (a connection cut
after the server wrote, a killed process) resumes without a duplicate; the team's learned memories
are mirrored with the server's version winning, except over one locked on the laptop; the server's
forgets reach the laptop; a laptop daemon syncs by itself.

The server is a real daemon (PostgreSQL when the suite runs on it); every laptop is a real SQLite
home of its own, named explicitly so that the suite's engine does not reach it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

import remem
from learned_data import turns as learned_turns
from remem import team, teamsync
from remem.layers import service
from remem.model import TurnIn
from remem.server.testing import Daemon, free_port

SHOP_A, SHOP_B = "/home/alice/code/shop-web", "/home/bob/work/shop-web"
PRIVATE = "alice private quokka ledger"


def laptop_env(home: Path, **extra: str) -> dict[str, str]:
    return {"REMEM_EMBEDDING_MODEL": "hash", "REMEM_DATABASE_URL": f"sqlite:///{home / 'remem.db'}",
            "REMEM_AUTO_SYNC": "0", **extra}


def open_laptop(home: Path, **extra: str):
    return remem.open(home, env=laptop_env(home, **extra))


def cli(home: Path, *args: str, timeout: float = 120, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "REMEM_HOME": str(home), **laptop_env(home, **extra)}
    return subprocess.run([sys.executable, "-m", "remem", *args], capture_output=True, text=True, env=env,
                          timeout=timeout)


@pytest.fixture
def server(tmp_path):
    """A team server: users alice, bob (team eng) and carol (team ops), the home's token kept aside."""
    home = tmp_path / "server"
    user_home = tmp_path / "server-user"
    user_home.mkdir()
    with remem.open(home, env={"REMEM_EMBEDDING_MODEL": "hash"}) as m:
        toks = {n: team.add_user(m.store, n) for n in ("alice", "bob", "carol")}
        team.add_team(m.store, "eng", ["alice", "bob"])
        team.add_team(m.store, "ops", ["carol"])
    with Daemon(home, env={"HOME": str(user_home), "REMEM_AUTO_SYNC": "0", "REMEM_LEARN_ENABLED": "0"}) as d:
        with d.client() as admin:
            yield {"d": d, "url": d.url, "tokens": toks, "admin": admin, "home": home}


def team_turns(admin, owner: str = "team:eng") -> list[dict]:
    got = admin.get("/api/v1/memories", params={"owner": owner, "limit": 500})
    assert got.status_code == 200, got.text
    return got.json()["items"]


def alice_laptop(tmp_path: Path, server, **extra: str) -> Path:
    """Alice's laptop: the real-shaped shop-web history in her folder, and a private project."""
    home = tmp_path / "alice"
    with open_laptop(home, **extra) as m:
        rows = learned_turns()
        for t in rows:
            t.project = SHOP_A
        m.add_turns(rows)
        m.add_turns([TurnIn(request=f"{PRIVATE} {i}", reply="kept on this laptop", agent="codex",
                            project="/home/alice/code/taxes", session_id=f"p{i}") for i in range(2)])
        teamsync.join(m, server["url"], server["tokens"]["alice"], projects={SHOP_A: "eng"})
    return home


def bob_laptop(tmp_path: Path, server) -> Path:
    home = tmp_path / "bob"
    with open_laptop(home) as m:
        m.add_turns([TurnIn(request="The checkout button must use the design system's Button, not a raw <button>.",
                            reply="Switched the checkout to <Button variant='primary'>.", agent="cursor",
                            project=SHOP_B, session_id="b1", started_at=1_760_400_000.0)])
        teamsync.join(m, server["url"], server["tokens"]["bob"], projects={SHOP_B: "eng"})
    return home


def both_synced(tmp_path: Path, server) -> tuple[Path, Path]:
    """Alice's laptop synced (her shop-web up), then bob's (his turn up, the team's down)."""
    a_home = alice_laptop(tmp_path, server)
    with open_laptop(a_home) as a:
        teamsync.sync(a)
    b_home = bob_laptop(tmp_path, server)
    with open_laptop(b_home) as b:
        teamsync.sync(b)
    return a_home, b_home


# -- join ------------------------------------------------------------------------------------------
def test_join_checks_the_token_and_keeps_it_private(server, tmp_path):
    home = tmp_path / "lap"
    url, tok = server["url"], server["tokens"]["alice"]
    for args, said in [
        (("--token", "rmu_wrong"), "refused the token"),
        (("--token", server["d"].token), "home token"),
    ]:
        r = cli(home, "team", "join", url, *args, "--no-sync")
        assert r.returncode != 0 and said in r.stderr, (r.stdout, r.stderr)
        assert not (home / "team.json").exists() and not (home / "team-token").exists()
    for bad, said in [("ftp://example.org", "not a server URL"), ("http://u:p@127.0.0.1:1", "credentials"),
                      (f"http://127.0.0.1:{free_port()}", "cannot reach")]:
        r = cli(home, "team", "join", bad, "--token", tok, "--no-sync")
        assert r.returncode != 0 and said in r.stderr, (bad, r.stderr)
        assert not (home / "team.json").exists()
    r = cli(home, "team", "join", url, "--share", f"{SHOP_A}=ops", "--no-sync", REMEM_TEAM_TOKEN=tok)
    assert r.returncode != 0 and "not a member of team ops" in r.stderr, r.stderr
    r = cli(home, "team", "join", url, "--share", f"{SHOP_A}=eng", "--no-sync", "--json", REMEM_TEAM_TOKEN=tok)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["user"] == "alice" and got["teams"] == ["eng"] and got["projects"][SHOP_A]["team"] == "eng"
    for name in ("team.json", "team-token", "team-state.json"):
        p = home / name
        if p.exists():
            assert p.stat().st_mode & 0o777 == 0o600, name
    assert (home / "team-token").read_text().strip() == tok
    assert tok not in (home / "team.json").read_text()
    with open_laptop(home) as m:
        assert tok not in json.dumps(m.store.audit.recent(50))
    st = cli(home, "team", "status", "--json")
    assert st.returncode == 0 and json.loads(st.stdout)["waiting"] == {SHOP_A: 0}
    assert tok not in st.stdout


# -- up and down -------------------------------------------------------------------------------------
def test_a_shared_project_goes_up_and_the_team_comes_down(server, tmp_path):
    admin = server["admin"]
    a_home = alice_laptop(tmp_path, server)
    with open_laptop(a_home) as a:
        assert teamsync.status(a)["waiting"] == {SHOP_A: 7}
        out = teamsync.sync(a)
    assert out["pushed"][SHOP_A]["sent"] == 7 and out["pushed"][SHOP_A]["team"] == "team:eng"
    on_server = team_turns(admin)
    assert len(on_server) == 7
    assert {r["project"] for r in on_server} == {"shop-web"}          # the team's name, not alice's path
    assert all("shared-by:user:alice" in r["tags"] for r in on_server)
    everything = _server_rows(server, ["default", "user:alice", "user:bob", "team:eng", "team:ops"])
    assert len(everything) == 7 and PRIVATE not in json.dumps(everything)
    assert max(len(json.dumps(r)) for r in everything) > 4000     # kilobytes of tool output went up whole

    b_home = bob_laptop(tmp_path, server)
    with open_laptop(b_home) as b:
        got = teamsync.sync(b)
        assert got["pushed"][SHOP_B]["sent"] == 1 and got["pulled"]["team:eng"]["written"] == 7
        mine = b.store.turns.page(b.scope("team:eng"), limit=100)
        assert {r["id"] for r in mine} == {r["id"] for r in on_server}       # the server's ids
        assert {r["project"] for r in mine} == {SHOP_B}                      # under bob's folder
        # bob's recall: his own memory and the team's in one ranking
        hits = b.search("coupon applied after tax", project=SHOP_B)
        assert hits and hits[0]["owner"] == "team:eng"
        assert {h["owner"] for h in b.search("checkout button design system Button")} >= {"default"}
        packet = b.turn_start("the coupon total is wrong again, what did we do last time?", project=SHOP_B)
        assert "coupon" in packet["text"] and packet["items"]
        assert "· team eng, from alice · id t_" in packet["text"], packet["text"]   # whose turn it was
        assert b.turn_start("checkout Button design system", project=SHOP_B)["items"]
        again = teamsync.sync(b)
        assert again["pushed"][SHOP_B]["sent"] == 0 and again["pulled"]["team:eng"]["written"] == 0
    assert len(team_turns(admin)) == 8

    with open_laptop(a_home) as a:
        got = teamsync.sync(a)
        assert got["pulled"]["team:eng"]["written"] == 1 and got["pulled"]["team:eng"]["own"] == 7
        assert [r["request"][:12] for r in a.store.turns.page(a.scope("team:eng"))] == ["The checkout"]
        assert a.store.turns.page(a.scope("team:eng"))[0]["project"] == SHOP_A
        assert a.search(PRIVATE)        # the private project stays here, readable as before
        assert teamsync.status(a)["waiting"] == {SHOP_A: 0}


def test_leave_and_forget(server, tmp_path):
    b_home = bob_laptop(tmp_path, server)
    a_home = alice_laptop(tmp_path, server)
    with open_laptop(a_home) as a:
        teamsync.sync(a)
    with open_laptop(b_home) as b:
        teamsync.sync(b)
        assert b.store.turns.page(b.scope("team:eng"))
    r = cli(b_home, "team", "leave")
    assert r.returncode == 0 and "no longer recalled (team:eng)" in r.stdout, r.stdout
    with open_laptop(b_home) as b:
        assert b.store.turns.page(b.scope("team:eng"))                 # kept ...
        assert not b.search("coupon applied after tax")                # ... and no longer recalled
    r = cli(b_home, "team", "leave", "--forget")                        # after leaving: still finds them
    assert r.returncode == 0 and "7 team turns deleted here" in r.stdout, r.stdout
    assert not any((b_home / n).exists() for n in ("team.json", "team-token", "team-state.json", "team-left.json"))
    r = cli(b_home, "team", "leave")
    assert r.returncode == 0 and r.stdout.strip() == "not joined to a team server", r.stdout
    with open_laptop(b_home) as b:
        assert not b.store.turns.page(b.scope("team:eng"))
        assert b.store.turns.page(b.scope("default"))      # bob's own memory stays
        assert not b.search("coupon applied after tax")
    assert len(team_turns(server["admin"])) == 8             # the team keeps what it has


# -- an interrupted sync ------------------------------------------------------------------------------
class Proxy:
    """A loopback HTTP proxy in front of the server that can, on the Nth push, forward the request
    (the server writes it) and then hold the answer back until released, or cut the connection."""

    def __init__(self, upstream: str, hold: str = "/sync/push") -> None:
        self.upstream, self.pushes, self.hold_at, self.hold = upstream, 0, 0, hold
        self.held, self.release = threading.Event(), threading.Event()
        outer = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):  # noqa: ANN002
                pass

            def _do(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else None
                req = urllib.request.Request(outer.upstream + self.path, data=body, method=self.command,
                                             headers={k: v for k, v in self.headers.items()
                                                      if k.lower() in ("authorization", "content-type", "accept")})
                try:
                    with urllib.request.urlopen(req, timeout=60) as r:
                        status, data, ctype = r.status, r.read(), r.headers.get("Content-Type", "")
                except urllib.error.HTTPError as e:
                    status, data, ctype = e.code, e.read(), e.headers.get("Content-Type", "")
                if outer.hold in self.path:
                    outer.pushes += 1
                    if outer.pushes == outer.hold_at:
                        outer.held.set()                # the server has written this page
                        outer.release.wait(60)
                        self.close_connection = True
                        return                          # ... and its answer never arrives
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _do

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def test_a_killed_sync_resumes_and_the_server_holds_each_turn_once(server, tmp_path):
    proxy = Proxy(server["url"])
    try:
        home = tmp_path / "alice"
        home.mkdir()
        (home / "config.yaml").write_text("team:\n  push_batch: 2\n")
        with open_laptop(home) as m:
            rows = learned_turns()
            for t in rows:
                t.project = SHOP_A
            m.add_turns(rows)
            teamsync.join(m, proxy.url, server["tokens"]["alice"], projects={SHOP_A: "eng"})
        proxy.hold_at = 2
        env = {**os.environ, "REMEM_HOME": str(home), **laptop_env(home)}
        proc = subprocess.Popen([sys.executable, "-m", "remem", "team", "sync", "--no-pull", "--json"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        assert proxy.held.wait(60), proc.communicate(timeout=5)
        time.sleep(0.3)                           # the server answered the proxy: page 2 is written
        assert len(team_turns(server["admin"])) == 4
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        st = json.loads((home / "team-state.json").read_text())
        with open_laptop(home) as m:
            assert teamsync.status(m)["waiting"] == {SHOP_A: 5}     # only page 1 was acknowledged
            assert st["push"][SHOP_A][1] == m.store.turns.changed(m.scope(project=SHOP_A), limit=2)[-1]["id"]
        proxy.release.set()
        proxy.hold_at = 0
        r = cli(home, "team", "sync", "--no-pull", "--json")
        assert r.returncode == 0, r.stderr
        pushed = json.loads(r.stdout)["pushed"][SHOP_A]
        assert pushed["sent"] == 5 and pushed.get("duplicate", 0) == 2, pushed
        keys = [t["source_key"] for t in _server_rows(server)]
        assert len(keys) == len(set(keys)) == 7
        assert len(team_turns(server["admin"])) == 7
        # the network goes away: a clear error, nothing lost, the cursor where it was
        with open_laptop(home) as m:
            m.add_turns([TurnIn(request="新的一轮：购物车总价在优惠券之后还要再算一次税吗？", reply="不用，先减优惠再算税。",
                                agent="claude-code", project=SHOP_A, session_id="s9")])
        before = (home / "team-state.json").read_text()
        proxy.close()
        r = cli(home, "team", "sync", timeout=60)
        assert r.returncode != 0 and "cannot reach" in r.stderr and "nothing was lost" in r.stderr, r.stderr
        assert json.loads((home / "team-state.json").read_text())["push"] == json.loads(before)["push"]
        with open_laptop(home) as m:
            assert teamsync.status(m)["waiting"] == {SHOP_A: 1}
        for args in (("team", "status"), ("status",)):                     # what went wrong, said where users look
            r = cli(home, *args)
            assert r.returncode == 0 and "the last try failed: cannot reach" in r.stdout, (args, r.stdout)
        assert "team: " + proxy.url in cli(home, "status").stdout
    finally:
        proxy.close()


def test_a_pull_killed_midway_resumes_without_a_duplicate_or_a_loss(server, tmp_path):
    a_home = alice_laptop(tmp_path, server)
    with open_laptop(a_home) as a:
        teamsync.sync(a)
    assert server["admin"].post("/api/v1/learned/learn", params={"owner": "team:eng"}).status_code == 200
    proxy = Proxy(server["url"], hold="/sync/learned")
    try:
        home = tmp_path / "bob"
        with open_laptop(home) as b:
            teamsync.join(b, proxy.url, server["tokens"]["bob"])
        proxy.hold_at = 1                          # the team's turns are written here, then the learned
        env = {**os.environ, "REMEM_HOME": str(home), **laptop_env(home)}  # memories' answer never comes
        proc = subprocess.Popen([sys.executable, "-m", "remem", "team", "sync", "--json"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        assert proxy.held.wait(60), proc.communicate(timeout=5)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        with open_laptop(home) as b:
            assert len(b.store.turns.page(b.scope("team:eng"), limit=100)) == 7
            assert not b.learned(owner="team:eng", status="all")
        proxy.release.set()
        proxy.hold_at = 0
        r = cli(home, "team", "sync", "--json")
        assert r.returncode == 0, r.stderr
        got = json.loads(r.stdout)
        assert got["pulled"]["team:eng"]["written"] == 0 and got["pulled"]["team:eng"].get("duplicate") == 7
        with open_laptop(home) as b:
            rows = b.store.turns.page(b.scope("team:eng"), limit=100)
            assert len(rows) == len({r["id"] for r in rows}) == 7
            on_server = server["admin"].get("/api/v1/learned", params={"owner": "team:eng", "status": "all"}).json()
            assert {r["id"] for r in b.learned(owner="team:eng", status="all")} == {r["id"] for r in on_server["items"]}
    finally:
        proxy.close()


def _server_rows(server, owners=("team:eng",)) -> list[dict]:
    with remem.open(server["home"], env={"REMEM_EMBEDDING_MODEL": "hash"}) as s:
        return s.store.turns.changed(s.scope(list(owners)), limit=1000)


# -- the team's learned memories ------------------------------------------------------------------------
def test_learned_memories_mirror_the_server_and_a_local_lock_wins(server, tmp_path):
    admin = server["admin"]
    a_home = alice_laptop(tmp_path, server)
    with open_laptop(a_home) as a:
        teamsync.sync(a)
    learned = admin.post("/api/v1/learned/learn", params={"owner": "team:eng"})
    assert learned.status_code == 200, learned.text
    on_server = admin.get("/api/v1/learned", params={"owner": "team:eng", "status": "all"}).json()["items"]
    assert len(on_server) >= 3 and any("bun" in r["text"] for r in on_server), [r["text"] for r in on_server]

    b_home = bob_laptop(tmp_path, server)
    with open_laptop(b_home) as b:
        teamsync.sync(b)
        here = {r["id"]: r for r in b.learned(owner="team:eng", status="all")}
        assert set(here) == {r["id"] for r in on_server}
        assert {r["project"] for r in here.values()} <= {SHOP_B, ""}
        packet = b.turn_start("install the dependencies for the cart page", project=SHOP_B)
        assert "bun" in packet["text"].lower(), packet["text"]
        assert "ago · team eng · id m_" in packet["text"], packet["text"]            # a team's learned memory
        locked, other, gone = sorted(r["id"] for r in on_server if r["status"] == "active")[:3]
        service.act(b, b.scope("team:eng"), locked, "lock")
        unchanged = teamsync.sync(b)
        assert unchanged["conflicts"] == [] and b.learned(owner="team:eng", status="all")  # a lock alone is no conflict
        # bob's own learner leaves the mirrored team alone
        before = {r["id"]: r["updated_at"] for r in b.learned(owner="team:eng", status="all")}
        assert "mirrored" not in b.learn()          # bob's own owner: the team is not in it
        res = b.learn(owner="team:eng")
        assert res.get("mirrored", 0) >= 1 and res["created"] == 0
        assert {r["id"]: r["updated_at"] for r in b.learned(owner="team:eng", status="all")} == before

    for mid, text in ((locked, "Use bun for every install; the team agreed in review."),
                      (other, "Run bun test before every commit, no exceptions.")):
        r = admin.post(f"/api/v1/learned/{mid}/edit", params={"owner": "team:eng"}, json={"text": text})
        assert r.status_code == 200, r.text
    assert admin.post(f"/api/v1/learned/{gone}/delete", params={"owner": "team:eng", "hard": "true"}).status_code == 200

    with open_laptop(b_home) as b:
        out = teamsync.sync(b)
        assert [c["id"] for c in out["conflicts"]] == [locked]
        assert out["conflicts"][0]["server"]["text"].startswith("Use bun for every install")
        rows = {r["id"]: r for r in b.learned(owner="team:eng", status="all")}
        assert rows[locked]["locked"] and not rows[locked]["text"].startswith("Use bun for every install")
        assert rows[other]["text"] == "Run bun test before every commit, no exceptions."
        assert gone not in rows
        st = teamsync.status(b)
        assert [c["id"] for c in st["conflicts"]] == [locked]
        assert any(e["action"] == "sync" for e in b.store.learned.events(b.scope("team:eng"), other))
        # unlocked here, the server's version arrives at the next sync and the conflict is gone
        service.act(b, b.scope("team:eng"), locked, "unlock")
        out = teamsync.sync(b)
        assert out["conflicts"] == [] and teamsync.status(b)["conflicts"] == []
        rows = {r["id"]: r for r in b.learned(owner="team:eng", status="all")}
        assert rows[locked]["text"].startswith("Use bun for every install")
    r = cli(b_home, "team", "status")
    assert r.returncode == 0 and "no conflicts" in r.stdout.lower(), r.stdout
    # what Claude Code receives on bob's laptop through its real hook (no daemon: the hook reads the store)
    payload = {"session_id": "bob-cc-1", "cwd": SHOP_B, "prompt": "install the dependencies for the cart page"}
    h = subprocess.run([sys.executable, "-m", "remem.hook", "claude-code", "UserPromptSubmit"],
                       input=json.dumps(payload), capture_output=True, text=True, timeout=120,
                       env={**os.environ, "REMEM_HOME": str(b_home), **laptop_env(b_home), "REMEM_PORT": "9"})
    assert h.returncode == 0 and not h.stderr.strip(), h.stderr
    context = json.loads(h.stdout)["hookSpecificOutput"]["additionalContext"]
    assert [i for i in (r["id"] for r in on_server) if i in context], context   # the team's learned memories
    assert SHOP_B in context and "bun" in context                               # and its turns, in bob's folder


def test_the_servers_forgets_reach_the_laptop(server, tmp_path):
    admin = server["admin"]
    a_home, b_home = both_synced(tmp_path, server)
    victim = next(r for r in team_turns(admin) if "Chinese" in r.get("request", "") or "报错" in r["request"])
    assert admin.delete(f"/api/v1/memories/{victim['id']}", params={"owner": "team:eng"}).status_code == 200
    with open_laptop(b_home) as b:
        out = teamsync.sync(b)
        assert out["pulled"]["team:eng"]["forgotten"] == 1
        assert victim["id"] not in {r["id"] for r in b.store.turns.page(b.scope("team:eng"), limit=100)}
        assert not b.search("Cannot read properties of undefined reading price", owner="team:eng")
        teamsync.sync(b)
        assert victim["id"] not in {r["id"] for r in b.store.turns.page(b.scope("team:eng"), limit=100)}


def test_what_a_member_forgets_on_the_laptop_leaves_the_team(server, tmp_path):
    admin = server["admin"]
    a_home = alice_laptop(tmp_path, server)
    b_home = bob_laptop(tmp_path, server)
    with open_laptop(a_home) as a:
        teamsync.sync(a)
        mine = a.store.turns.page(a.scope(project=SHOP_A), limit=100, order="asc")
    with open_laptop(b_home) as b:
        teamsync.sync(b)
        assert len(b.store.turns.page(b.scope("team:eng"), limit=100)) == 7
    # bob cannot forget alice's turns by naming her keys: his keys are his own
    bob = httpx.Client(base_url=server["url"], headers={"Authorization": f"Bearer {server['tokens']['bob']}"})
    with bob:
        hid = json.loads((a_home / "team.json").read_text())["home_id"]
        r = bob.post("/api/v1/sync/forget", json={"team": "eng", "turns": [f"{hid}:{t['id']}" for t in mine],
                                                  "sessions": ["s1", "s2"]})
        assert r.status_code == 200 and r.json()["forgotten"] == 0
        assert bob.post("/api/v1/sync/forget", json={"team": "ops", "turns": ["x"]}).status_code == 403
    assert len(team_turns(admin)) == 8
    chinese = next(t for t in mine if "报错" in t["request"])
    with open_laptop(a_home) as a:
        a.forget(ids=[chinese["id"]])
        a.forget(session="s1")                                     # three turns
        out = teamsync.sync(a)
        assert out["pushed"][SHOP_A]["forgotten"] == 4
        assert teamsync.sync(a)["pushed"][SHOP_A]["forgotten"] == 0          # told once
    left = team_turns(admin)
    assert len(left) == 4 and not [t for t in left if "报错" in t["request"] or t["session_id"] == "s1"]
    assert any(t["session_id"] == "b1" for t in left)                      # bob's own turn stays
    with open_laptop(b_home) as b:
        got = teamsync.sync(b)
        assert got["pulled"]["team:eng"]["forgotten"] == 4
        assert len(b.store.turns.page(b.scope("team:eng"), limit=100)) == 3
    # pushed again (another laptop of alice's still holding it), a forgotten turn stays out of the team
    alice = httpx.Client(base_url=server["url"], headers={"Authorization": f"Bearer {server['tokens']['alice']}"})
    with alice:
        again = alice.post("/api/v1/sync/push", json={"team": "eng", "turns": [{
            "request": chinese["request"], "reply": chinese["reply"], "agent": "claude-code", "project": "shop-web",
            "session_id": "s2", "source_key": f"{hid}:{chinese['id']}"}]})
    assert again.status_code == 200 and again.json()["counts"] == {"skipped_forgotten": 1}, again.text
    assert len(team_turns(admin)) == 4


def test_a_member_removed_from_the_team_stops_reading_it(server, tmp_path):
    a_home, b_home = both_synced(tmp_path, server)
    with open_laptop(b_home) as b:
        assert b.search("coupon applied after tax")
    with remem.open(server["home"], env={"REMEM_EMBEDDING_MODEL": "hash"}) as s:
        team.change_members(s.store, "eng", ["bob"], add=False)
    with open_laptop(b_home) as b:
        b.add_turns([TurnIn(request="bob's new private note on the checkout flow", reply="ok", agent="cursor",
                            project=SHOP_B, session_id="b2")])
        out = teamsync.sync(b)                                  # no error: the share to eng is skipped
        assert out["removed_from"] == {"team:eng": 7}
        assert "no longer a member" in out["pushed"][SHOP_B]["skipped"]
        assert not b.store.turns.page(b.scope("team:eng")) and not b.search("coupon applied after tax")
        assert teamsync.status(b)["teams"] == []
    assert not [t for t in team_turns(server["admin"]) if "private note" in t["request"]]


def test_a_user_pushes_and_pulls_only_their_own_teams(server):
    alice = httpx.Client(base_url=server["url"], headers={"Authorization": f"Bearer {server['tokens']['alice']}"})
    carol = httpx.Client(base_url=server["url"], headers={"Authorization": f"Bearer {server['tokens']['carol']}"})
    turn = {"request": "deploy with make release", "agent": "codex", "source_key": "h1:t_1", "project": "ops"}
    with alice, carol:
        assert alice.post("/api/v1/sync/push", json={"team": "ops", "turns": [turn]}).status_code == 403
        assert alice.post("/api/v1/sync/push", json={"team": "eng", "turns": [{**turn, "source_key": ""}]}
                          ).status_code == 422
        assert alice.post("/api/v1/sync/push", json={"team": "eng", "turns": []}).status_code == 422
        for owner in ("team:ops", "user:bob", "default"):
            assert alice.get("/api/v1/sync/turns", params={"owner": owner}).status_code == 403, owner
            assert alice.get("/api/v1/sync/learned", params={"owner": owner}).status_code == 403, owner
        ok = alice.post("/api/v1/sync/push", json={"team": "eng", "turns": [turn, turn]})
        assert ok.status_code == 200 and ok.json()["team"] == "team:eng", ok.text
        again = alice.post("/api/v1/sync/push", json={"team": "eng", "turns": [turn]}).json()
        assert again["counts"].get("duplicate") == 1
        got = carol.get("/api/v1/sync/turns", params={"owner": "team:ops"}).json()
        assert got["items"] == [] and carol.get("/api/v1/sync/turns", params={"owner": "team:eng"}).status_code == 403
        page = alice.get("/api/v1/sync/turns", params={"owner": "team:eng"}).json()
        assert [r["source_key"] for r in page["items"]] == ["sync:alice:h1:t_1"] and page["more"] is False
        assert httpx.get(f"{server['url']}/api/v1/sync/turns", params={"owner": "team:eng"}).status_code == 401


def test_a_laptop_daemon_syncs_by_itself(server, tmp_path):
    a_home = alice_laptop(tmp_path, server)
    user_home = tmp_path / "alice-user"
    user_home.mkdir()
    with Daemon(a_home, env={**laptop_env(a_home), "HOME": str(user_home), "REMEM_TEAM_SYNC_INTERVAL": "1"}) as d:
        deadline = time.monotonic() + 60
        while len(team_turns(server["admin"])) < 7 and time.monotonic() < deadline:
            time.sleep(0.5)
        assert len(team_turns(server["admin"])) == 7
        r = d.post("/api/v1/turns", json={"turns": [{"request": "captured live: rename total.ts to cart-total.ts",
                                                     "reply": "Renamed and updated the imports.",
                                                     "agent": "claude-code", "project": SHOP_A,
                                                     "session_id": "live-1"}]})
        assert r.status_code == 200, r.text
        deadline = time.monotonic() + 60
        while len(team_turns(server["admin"])) < 8 and time.monotonic() < deadline:
            time.sleep(0.5)
        assert any("cart-total.ts" in t["request"] for t in team_turns(server["admin"]))
        owners = d.get("/api/v1/owners").json()
        assert owners["default"] == "default" and "team:eng" in owners["owners"]     # the viewer's owner picker


# -- what an agent on the laptop receives ------------------------------------------------------------
def _memory(mid: str, owner: str, kind: str, text: str, slot: str = "", value: str = "", **data) -> dict:
    now = time.time()
    return {"id": mid, "owner": owner, "kind": kind, "text": text, "slot": slot, "value": value,
            "status": "active", "confidence": 0.9, "sessions": 3, "turns": 5, "locked": False,
            "created_at": now, "updated_at": now, "data": {"first_seen": now - 86400, "last_seen": now, **data}}


def test_a_memory_held_by_the_home_and_its_team_is_shown_once_and_a_teams_working_state_never():
    from remem.layers.select import pick

    mems = [_memory("m_team1", "team:eng", "fact", "The package manager is bun.", "pkg.manager", "bun"),
            _memory("m_mine1", "default", "fact", "The package manager is bun.", "pkg.manager", "bun"),
            _memory("m_team2", "team:eng", "convention", "以后提交前都要先跑 bun test，不要跳过。"),
            _memory("m_mine2", "default", "convention", "以后提交前都要先跑 bun test, 不要跳过"),
            _memory("m_team3", "team:eng", "convention", "Deploys go through make release, never by hand."),
            _memory("m_team4", "team:eng", "working_state", "Goal: alice's refactor of the cart | Touched: total.ts")]
    got = pick(mems, "install the deps with the package manager, continue", entry="session_start", now=time.time())
    ids = [m["id"] for m in got]
    assert "m_mine1" in ids and "m_team1" not in ids                    # the home's own, once
    assert "m_mine2" in ids and "m_team2" not in ids                    # the same words, another comma
    assert "m_team3" in ids                                             # what only the team knows comes in
    assert not [m for m in pick(mems, "continue where we left off", entry="resume", now=time.time())
                if m["kind"] == "working_state"]                        # where alice left off is not bob's
    mine_state = _memory("m_mine4", "default", "working_state", "Goal: bob's checkout button | Touched: page.tsx")
    assert [m["id"] for m in pick([*mems, mine_state], "continue", entry="resume", now=time.time())
            if m["kind"] == "working_state"] == ["m_mine4"]


def test_what_a_member_curated_goes_up_and_the_servers_decisions_win(server, tmp_path):
    admin = server["admin"]
    a_home = alice_laptop(tmp_path, server)
    with open_laptop(a_home) as a:
        a.learn()
        first = teamsync.sync(a)
        assert first["pushed"][SHOP_A]["learned"] == {}              # nothing curated yet: turns only
    assert admin.post("/api/v1/learned/learn", params={"owner": "team:eng"}).status_code == 200
    team_bun = next(r for r in admin.get("/api/v1/learned", params={"owner": "team:eng"}).json()["items"]
                    if r["kind"] == "preference" and r["slot"] == "pkg.manager")
    with open_laptop(a_home) as a:
        mine = {r["text"]: r for r in a.learned(project=SHOP_A)}
        service.act(a, a.scope(), mine["Use bun, not npm."]["id"], "edit",
                    text="Use bun for everything, never npm or yarn.")
        service.act(a, a.scope(), mine["The test command is `bun test`."]["id"], "lock")
        text = service.export_file(a, a.scope(project=SHOP_A), "md")
        assert "## Decisions" in text
        text = text.replace("## Decisions\n", "## Decisions\n- Prices live in the ledger table as integer "
                                              "cents, never floats.\n", 1)
        [hand] = service.import_file(a, a.scope(), text)["created"]
        out = teamsync.sync(a)
        assert out["pushed"][SHOP_A]["learned"] == {"edited": 1, "locked": 1, "created": 1}, out["pushed"]
        again = teamsync.sync(a)
        assert again["pushed"][SHOP_A]["learned"] == {}                 # sent once
    got = admin.get(f"/api/v1/learned/{team_bun['id']}", params={"owner": "team:eng"}).json()
    assert got["text"] == "Use bun for everything, never npm or yarn." and got["locked"]
    hist = admin.get(f"/api/v1/learned/{team_bun['id']}/history", params={"owner": "team:eng"}).json()["events"]
    assert hist[-1]["actor"] == "team-sync:user:alice"
    items = admin.get("/api/v1/learned", params={"owner": "team:eng"}).json()["items"]
    prices = [r for r in items if r["text"].startswith("Prices live in the ledger")]
    assert len(prices) == 1 and prices[0]["locked"] and prices[0]["id"] != hand["id"]
    # the team's learner keeps what a member decided
    assert admin.post("/api/v1/learned/learn", params={"owner": "team:eng", "rebuild": "true"}).status_code == 200
    items = {r["id"]: r for r in admin.get("/api/v1/learned", params={"owner": "team:eng"}).json()["items"]}
    assert items[team_bun["id"]]["text"] == "Use bun for everything, never npm or yarn." and prices[0]["id"] in items
    # bob receives the team's version; his packet carries it
    b_home = bob_laptop(tmp_path, server)
    with open_laptop(b_home) as b:
        teamsync.sync(b)
        assert "never npm or yarn" in b.turn_start("install the dependencies", project=SHOP_B)["text"]
        assert "integer cents" in b.turn_start("how do we store prices in the ledger table?", project=SHOP_B)["text"]
    # the server decides otherwise (the home edits the team's memory): alice's next edit is kept out, reported
    r = admin.post(f"/api/v1/learned/{team_bun['id']}/edit", params={"owner": "team:eng"},
                   json={"text": "Use bun; pnpm only in the legacy admin app."})
    assert r.status_code == 200, r.text
    with open_laptop(a_home) as a:
        service.act(a, a.scope(), mine["Use bun, not npm."]["id"], "edit", text="Use bun. Never anything else.")
        out = teamsync.sync(a)
        assert out["pushed"][SHOP_A]["learned"] == {"kept_server": 1}
        [c] = [c for c in teamsync.status(a)["conflicts"] if c.get("local_id")]
        assert c["id"] == team_bun["id"] and c["server"]["text"].startswith("Use bun; pnpm only")
        # alice's own memory stays hers; her packet shows it once, not beside the team's
        packet = a.turn_start("install the dependencies", project=SHOP_A)
        assert "Use bun. Never anything else." in packet["text"]
    got = admin.get(f"/api/v1/learned/{team_bun['id']}", params={"owner": "team:eng"}).json()
    assert got["text"] == "Use bun; pnpm only in the legacy admin app."


def test_the_sync_benchmark_measures_a_real_push_and_pull(monkeypatch):
    from remem.bench import team_sync

    for var in ("REMEM_EMBEDDING_ENABLED", "REMEM_AUTO_SYNC", "HOME", "REMEM_DATABASE_URL"):
        monkeypatch.setenv(var, os.environ.get(var, ""))      # restored after: the bench sets them
    got = team_sync.run(150, os.environ.get("REMEM_DATABASE_URL") or None)
    assert got["shared_turns"] > 0 and got["pulled"] == got["shared_turns"]
    assert got["push_turns_per_s"] > 0 and got["pull_turns_per_s"] > 0
    assert got["bob_packets_with_items"] != "0/24"


def test_one_sync_of_a_home_at_a_time(server, tmp_path):
    """The daemon's scheduled sync and `remem team sync` would read and write the same cursors: the
    second waits for the first, and gives up with a clear error when it does not end."""
    import fcntl

    a_home = alice_laptop(tmp_path, server)
    fd = os.open(a_home / teamsync.LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)                 # another sync of this home is running
    with open_laptop(a_home) as a:
        with pytest.raises(teamsync.SyncError, match="another team sync of this home"):
            teamsync._one_at_a_time(a_home, 0.5).__enter__()
        threading.Timer(0.5, lambda: os.close(fd)).start()   # ... and ends
        t0 = time.monotonic()
        out = teamsync.sync(a)
        assert time.monotonic() - t0 >= 0.4 and out["pushed"][SHOP_A]["sent"] == 7
    assert len(team_turns(server["admin"])) == 7

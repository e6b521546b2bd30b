"""``remem team …`` and ``remem share``: names checked before anything is written, a token printed once
(stdout only; the store keeps hashes), membership changes, sharing from the CLI (the home)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from remem import team
from remem.cli import cli as remem_cli


def run(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(remem_cli, list(args))
    return r.exit_code, r.stdout, r.stderr


def test_users_and_teams_from_the_cli(remem_home, mem):
    code, out, _ = run("team", "user", "add", "alice", "--json")
    assert code == 0
    tok = json.loads(out)["token"]
    assert tok.startswith("rmu_") and json.loads(out)["owner"] == "user:alice"
    code, out, _ = run("team", "user", "add", "bob")
    assert code == 0 and "shown only this once" in out
    bob_tok = out.strip().splitlines()[-1]
    assert team.principal_of(mem.store, token=bob_tok) == team.Principal(user="bob")

    code, _, err = run("team", "user", "add", "alice")
    assert code == 1 and "remem: error: user alice exists already" in err
    code, _, err = run("team", "user", "add", "Not Valid")
    assert code == 1 and "invalid user name" in err and "Traceback" not in err

    code, _, err = run("team", "add", "eng", "--member", "alice", "--member", "ghost")
    assert code == 1 and "no user ghost" in err
    assert json.loads(run("team", "list", "--json")[1]) == []                 # nothing half-written
    code, out, _ = run("team", "add", "eng", "--member", "alice")
    assert code == 0 and "team:eng" in out
    assert run("team", "member", "add", "eng", "bob")[0] == 0
    assert run("team", "member", "add", "eng", "ghost")[0] == 1
    assert run("team", "member", "add", "ops", "bob")[0] == 1
    teams = json.loads(run("team", "list", "--json")[1])
    assert [(t["name"], t["members"]) for t in teams] == [("eng", ["alice", "bob"])]
    assert run("team", "member", "remove", "eng", "bob")[0] == 0

    listed = run("team", "user", "list", "--json")[1]
    assert [(u["name"], u["teams"], u["tokens"]) for u in json.loads(listed)] == [("alice", ["eng"], 1), ("bob", [], 1)]
    assert tok not in listed and team.token_hash(tok) not in listed

    code, out, _ = run("team", "user", "token", "alice", "--replace", "--json")
    new = json.loads(out)
    assert code == 0 and new["revoked"] == 1 and new["token"] != tok
    assert team.principal_of(mem.store, token=tok) is None
    assert team.principal_of(mem.store, token=new["token"]) == team.Principal(user="alice", teams=("eng",))

    assert run("team", "user", "remove", "bob")[0] == 0
    assert team.principal_of(mem.store, token=bob_tok) is None
    assert run("team", "user", "remove", "bob")[0] == 1
    assert run("team", "remove", "eng")[0] == 0 and json.loads(run("team", "list", "--json")[1]) == []
    for p in remem_home.rglob("*"):                                         # the token is in no file of the home
        if p.is_file():
            assert new["token"].encode() not in p.read_bytes(), p


def test_share_from_the_cli(mem):
    run("team", "user", "add", "alice")
    run("team", "add", "eng", "--member", "alice")
    tid = mem.add("the release checklist lives in docs/release.md", agent="cli").id
    code, out, _ = run("share", tid, "--team", "eng", "--json")
    got = json.loads(out)
    assert code == 0 and got["team"] == "team:eng" and got["status"] == "added"
    copy = mem.get(got["shared_id"], owner="team:eng")
    assert copy is not None and "docs/release.md" in copy["request"] and "shared-by:default" in copy["tags"]
    assert mem.get(tid, owner="default") is not None                          # a copy: the original stays
    code, out, _ = run("share", tid, "--team", "eng")
    assert code == 0 and "already shared" in out
    code, _, err = run("share", tid, "--team", "ops")
    assert code == 1 and "no team ops" in err
    code, _, err = run("share", "t_missing", "--team", "eng")
    assert code == 1 and "no memory t_missing" in err

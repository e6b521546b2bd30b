"""Decision repair through the running daemon: ``POST /api/v1/recall/repair`` (scoped to the caller
like turn-start: a user's token reads its own owners, asking for another's is refused) and the hook's
repair path asking it first — with the daemon up the packet comes from it (its log shows the call) and
is recorded once; with it down the hook builds the same packet on the database."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import remem
from remem.recall import packet as pk
from test_repair import CLAUDE_FAIL, CWD, TRACE, bash, free_port, history

pytest.importorskip("fastapi")
from remem import team  # noqa: E402
from remem.server.testing import Daemon  # noqa: E402

DAEMON_ENV = {"REMEM_AUTO_SYNC": "0", "REMEM_LEARN_DELAY": "3600"}
BODY = {"error": TRACE, "tool": "Bash", "command": "uv run pytest -q", "project": CWD}


@pytest.fixture
def home(mem, remem_home):
    """The default owner, bob and the user carol each met the missing module once and fixed it
    their own way (the package each installed is theirs alone); carol's token for the daemon."""
    mem.add_turns(history("default", "pyyaml") + history("bob", "bobs-private-yaml")
                  + history("user:carol", "carols-own-yaml"))
    for owner in ("default", "bob", "user:carol"):
        mem.learn(owner=owner)
    token = team.add_user(mem.store, "carol")
    mem.close()
    return {"home": remem_home, "carol": token}


def packets(entry: str, session: str) -> list[dict]:
    with remem.open() as m:
        return [p for p in m.store.packets.recent(m.scope(), session=session) if p["entry"] == entry]


def test_the_route_gives_the_callers_packet_and_never_another_owners(home):
    import httpx

    with Daemon(home["home"], env=DAEMON_ENV) as d:
        got = d.post("/api/v1/recall/repair", json={**BODY, "session_id": "r1", "attempts": [
            bash("uv run pytest -q", TRACE, True).to_dict(), bash("uv run pytest -q -x", TRACE, True).to_dict()]})
        assert got.status_code == 200, got.text
        packet = got.json()
        as_bob = d.post("/api/v1/recall/repair", json={**BODY, "owner": "bob"}).json()
        assert d.post("/api/v1/recall/repair", json={**BODY, "error": ""}).status_code == 422
        with httpx.Client(base_url=d.url, headers={"Authorization": f"Bearer {home['carol']}"}, timeout=30) as c:
            as_carol = c.post("/api/v1/recall/repair", json=BODY)
            refused = [c.post("/api/v1/recall/repair", json={**BODY, "owner": o}).status_code
                       for o in ("bob", "default", "user:carol,bob")]
        log = (home["home"] / "logs" / "daemon.log").read_text()
    assert (packet["entry"], packet["family"]) == ("repair", "uv run pytest")
    assert packet["items"][0]["kind"] == "procedure" and "pyyaml" in packet["items"][0]["text"]
    assert pk.AVOID_HEAD in packet["text"] and "uv run pytest -q -x" in packet["text"]   # this turn's attempt
    assert "bobs-private-yaml" not in packet["text"] and "carols-own-yaml" not in packet["text"]
    assert "bobs-private-yaml" in as_bob["text"] and "carols-own-yaml" not in as_bob["text"]
    assert as_carol.status_code == 200, as_carol.text             # a user's token reaches it, scoped
    carol = as_carol.json()
    assert "carols-own-yaml" in carol["text"] and "bobs-private-yaml" not in carol["text"]
    assert "pyyaml" not in carol["text"].replace("carols-own-yaml", "")
    assert all(i.get("owner", "user:carol") == "user:carol" for i in carol["items"])
    assert refused == [403, 403, 403]                             # never answered with a wider scope
    assert "POST /api/v1/recall/repair 200" in log
    recorded = packets("repair", "r1")
    assert [p["id"] for p in recorded] == [packet["packet_id"]]


def hook(payload: dict, port: int) -> str:
    r = subprocess.run([sys.executable, "-m", "remem.hook", "claude-code", "PostToolUse"],
                       input=json.dumps(payload).encode(), capture_output=True, timeout=60,
                       env={**os.environ, "REMEM_PORT": str(port), "REMEM_HOOK_TIMEOUT": "30"})
    assert r.returncode == 0 and r.stderr == b"", r.stderr
    out = r.stdout.decode().strip()
    return json.loads(out)["hookSpecificOutput"]["additionalContext"] if out else ""


def second_failure(session: str, port: int) -> str:
    base = {"session_id": session, "cwd": CWD, **CLAUDE_FAIL}
    assert hook(base, port) == ""                                 # the first failure: counted only
    return hook({**base, "tool_use_id": "toolu_02"}, port)


def test_the_hook_asks_the_daemon_first_and_builds_the_same_packet_without_it(home):
    with Daemon(home["home"], env=DAEMON_ENV) as d:
        up = second_failure("up-1", d.port)
        daemon_log = (home["home"] / "logs" / "daemon.log").read_text()
    down = second_failure("down-1", free_port())                  # nobody listens: built on the database
    hooks_log = (home["home"] / "logs" / "hooks.log").read_text()
    assert daemon_log.count("POST /api/v1/recall/repair 200") == 1
    assert "kind=tool_after via=daemon" in hooks_log and "kind=tool_after via=local" in hooks_log, hooks_log
    assert up.startswith("`uv run pytest` failed 2 times in this session"), up
    assert "pyyaml" in up and pk.LEARNED_HEAD in up and pk.AVOID_HEAD in up and "bobs-private-yaml" not in up
    assert up.count(pk.OPEN) == 1 and up.count(pk.CLOSE) == 1     # rendered once, by the one renderer
    assert down == up
    assert len(packets("repair", "up-1")) == 1                    # recorded by the daemon, not again by the hook
    assert len(packets("repair", "down-1")) == 1


def test_a_daemon_that_does_not_answer_gives_the_packet_built_directly(home):
    """A daemon that accepts the connection and never answers: the hook's backend gives up after its
    timeout (and trips the breaker, as for turn-start) and builds the same packet on the database."""
    import socket

    from remem.integrations.backend import Backend

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)                                          # connections queue; nothing reads them
        env = {**os.environ, "REMEM_PORT": str(silent.getsockname()[1]), "REMEM_HOOK_TIMEOUT": "0.2"}
        (home["home"] / "token").write_text("t" * 40)
        b = Backend(home["home"], env=env)
        try:
            got = b.repair(TRACE, tool="Bash", command="uv run pytest -q", agent="claude-code", project=CWD,
                           session="slow-1")
        finally:
            b.close()
    assert b.via == "local" and (home["home"] / "hooks" / "daemon.down").exists()
    with remem.open() as m:
        direct = m.repair(TRACE, tool="Bash", command="uv run pytest -q", agent="claude-code", project=CWD,
                          session="slow-2")["text"]
    assert got == direct and "pyyaml" in got and "bobs-private-yaml" not in got
    assert len(packets("repair", "slow-1")) == 1

"""No query path may return another owner's memory — including 1–2 character queries."""

from __future__ import annotations

import pytest

from remem.model import TurnIn

QUERIES = ["a", "ab", "db", "UI", "数据", "库", "数据库", "login", "log", "t_", "*", '"', "OR", "NEAR(", "-", "x%"]


@pytest.fixture
def two_owners(mem):
    texts = ["a db UI fix for login", "数据库 迁移 ab", "库存 数据 log rotation", "x% OR NEAR( weird * - \""]
    for owner in ("alice", "bob"):
        for i, t in enumerate(texts):
            mem.add_turns([TurnIn(request=f"{owner} {t}", reply=f"{owner} reply {t}", owner=owner,
                                  agent="codex", project="p", session_id=f"{owner}-s{i}")])
    mem.embed_pending()
    return mem


@pytest.mark.parametrize("q", QUERIES)
def test_search_never_crosses_owner(two_owners, q):
    mem = two_owners
    for owner, other in (("alice", "bob"), ("bob", "alice")):
        for res in mem.search(q, owner=owner, k=50):
            assert res["owner"] == owner, (q, res)
            assert other not in res["text"], (q, res)


def test_every_repository_read_is_scoped(two_owners):
    mem = two_owners
    bob_id = mem.search("login", owner="bob")[0]["id"]
    assert mem.get(bob_id, owner="alice") is None
    assert all(r["owner"] == "alice" for r in mem.list(owner="alice", limit=100))
    assert mem.timeline("bob-s0", owner="alice") == []
    assert mem.forget(ids=[bob_id], owner="alice") == []
    assert mem.get(bob_id, owner="bob") is not None
    assert mem.stats(owner="alice")["turns"] == 4
    import io

    buf = io.StringIO()
    mem.export_jsonl(buf, owner="alice")
    assert "bob" not in buf.getvalue()


def test_short_queries_find_own_rows(two_owners):
    mem = two_owners
    assert mem.search("数据", owner="alice")
    assert mem.search("db", owner="alice")
    assert mem.search("库", owner="alice")


def test_agent_and_project_filters(mem):
    mem.add("shared fact about caching", agent="codex", project="p1")
    mem.add("shared fact about caching too", agent="gemini", project="p2")
    assert {r["agent"] for r in mem.search("caching", agent="codex")} == {"codex"}
    assert {r["project"] for r in mem.search("caching", project="p2")} == {"p2"}
    assert len(mem.search("caching")) == 2


# --- recall engine: every channel and entry point stays inside the scope -------------------

RECALL_QUERIES = ["login fix", "数据库", "ModuleNotFoundError: No module named 'yaml'", "src/app/db.py load_config",
                  "what happened yesterday", "Berlin", "a", "*"]


@pytest.fixture
def two_owners_rich(mem):
    import time as _t

    from remem.model import ToolCall

    now = _t.time()
    for owner in ("alice", "bob"):
        for i in range(3):
            mem.add_turns([TurnIn(
                request=f"{owner} login fix in src/app/db.py load_config 数据库 Berlin {i}",
                reply=f"{owner} reply {i}", owner=owner, agent="codex", project="p", session_id=f"{owner}-s",
                status="failed" if i == 0 else "succeeded", started_at=now - 86400 - i, ended_at=now - 86400 - i,
                actions=[ToolCall("Bash", "python x.py", "ModuleNotFoundError: No module named 'yaml'", True)]
                if i == 0 else [])])
    mem.embed_pending()
    return mem


@pytest.mark.parametrize("q", RECALL_QUERIES)
def test_every_channel_stays_in_scope(two_owners_rich, q):
    from remem.recall.config import CHANNELS, preset
    from remem.recall.search import rank, search_sessions

    mem = two_owners_rich
    for owner in ("alice", "bob"):
        sc = mem.scope(owner)
        for ch in CHANNELS:
            r = rank(mem.recall, q, sc, k=50, cfg=preset(f"only:{ch}").with_(neighbour_weight=0.5, session_weight=1.0))
            for tid, _ in r.items:
                assert r.meta[tid]["owner"] == owner, (ch, q)
            for name, c in r.channels.items():
                rows = mem.store.conn.execute(
                    f"SELECT DISTINCT owner FROM turns WHERE id IN ({','.join('?' * len(c.hits))})",
                    [t for t, _ in c.hits]).fetchall() if c.hits else []
                assert {x[0] for x in rows} <= {owner}, (name, q)
        for s in search_sessions(mem.recall, q, sc, k=10):
            assert s["owner"] == owner


@pytest.mark.parametrize("q", RECALL_QUERIES[:4])
def test_entry_points_stay_in_scope(two_owners_rich, q):

    mem = two_owners_rich
    for owner, other in (("alice", "bob"), ("bob", "alice")):
        sc = mem.scope(owner)
        for res in (mem.turn_start(q, owner=owner), mem.sub_agent(q, scope=sc), mem.repair(q, scope=sc),
                    mem.resume(q, scope=sc)):
            assert other not in res["text"], (q, res["text"])
            assert all(i.get("owner", owner) == owner for i in res["items"])
        cands = mem.resume(q, scope=sc)["items"]
        for c in cands:
            assert other not in mem.resume("", scope=sc, session=c["session"])["text"]
        # asking for the other owner's episode by key shows nothing of it
        assert other not in mem.resume("", scope=sc, session=f"{other}/codex/{other}-s")["text"]


def test_vector_index_applies_scope_to_agent_and_project(mem):
    mem.add("caching layer for api", agent="codex", project="p1")
    mem.add("caching layer for api", agent="gemini", project="p2", owner="other")
    mem.add("caching layer for api!", agent="gemini", project="p2")
    mem.embed_pending()
    from remem.recall.config import preset
    from remem.recall.search import search

    for sc, agents in ((mem.scope(agent="codex"), {"codex"}), (mem.scope(project="p2"), {"gemini"}),
                       (mem.scope(), {"codex", "gemini"})):
        hits = search(mem.recall, "caching layer", sc, k=10, config=preset("vector"))
        assert hits and {h["agent"] for h in hits} <= agents and all(h["owner"] == "default" for h in hits)


# --- isolated agents through every hook and plugin channel (daemon and SQLite fallback) ------

HOOK_PROJECT = "/home/dev/billing"
ISOLATED = ("codex", "opencode", "openclaw", "hermes")


def _hook(agent: str, event: str, payload: dict, port: str) -> str:
    import json
    import os
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "remem.hook", agent, event], input=json.dumps(payload).encode(),
                       capture_output=True, timeout=120, env={**os.environ, "REMEM_PORT": port})
    assert r.returncode == 0, r.stderr
    return r.stdout.decode()


def _ctx(out: str) -> str:
    import json

    if not out.strip():
        return ""
    got = json.loads(out)
    return got["hookSpecificOutput"]["additionalContext"] if "hookSpecificOutput" in got else got.get("context", "")


@pytest.fixture
def isolated_home(mem):
    """The shared profile (claude-code's work) and each isolated agent's own notes, same topic."""
    import time as _t

    now = _t.time()
    for agent in ISOLATED:
        mem.config.set(f"agents.{agent}", {"isolated": True})
    for i in range(6):
        mem.add_turns([TurnIn(request=f"PROFILEONLY deploy the billing service to staging, run {i}",
                              reply=f"PROFILEONLY billing deploy ok {i}", owner="default", agent="claude-code",
                              project=HOOK_PROJECT, session_id=f"prof-{i % 2}", started_at=now - 3600 * (i + 1),
                              ended_at=now - 3600 * (i + 1))])
    own = {}
    for agent in ISOLATED:
        own[agent] = mem.add(f"{agent.upper()}OWN billing deploy to staging needs `make deploy ENV=staging`",
                             agent=agent, project=HOOK_PROJECT, session=f"{agent}-old",
                             reply=f"{agent.upper()}OWN deployed", ts=now - 86400).id
    profile_id = mem.search("PROFILEONLY billing", owner="default")[0]["id"]
    assert mem.get(own["codex"], owner="agent:codex")["owner"] == "agent:codex"
    mem.close()
    return own, profile_id


@pytest.mark.parametrize("path", ["daemon", "sqlite"])
def test_isolated_agents_read_only_their_own_scope_through_every_hook_channel(isolated_home, remem_home, path):
    import json

    own, profile_id = isolated_home
    daemon = None
    port = "9"                                  # nothing listens there: the SQLite fallback
    if path == "daemon":
        from remem.server.testing import Daemon

        daemon = Daemon(remem_home).start()
        port = str(daemon.port)
    try:
        base = {"cwd": HOOK_PROJECT}
        seen: dict[str, str] = {}
        # codex: SessionStart digest, turn-start packet, /remem-resume list (query and recent) and episode
        seen["digest"] = _ctx(_hook("codex", "SessionStart", {**base, "session_id": "c1", "source": "startup"}, port))
        seen["packet"] = _ctx(_hook("codex", "UserPromptSubmit", {**base, "session_id": "c1",
                                                                 "prompt": "how do we deploy billing to staging?"},
                                    port))
        for query in ("billing deploy staging", ""):
            seen[f"resume list {query!r}"] = _ctx(_hook("codex", "UserPromptSubmit", {
                **base, "session_id": "c2", "prompt": f"/remem-resume {query}".strip()}, port))
            listed = seen[f"resume list {query!r}"]
            pick = next((ln[0] for ln in listed.splitlines() if "CODEXOWN" in ln and ln[:1].isdigit()), "1")
            seen[f"resume episode {query!r}"] = _ctx(_hook("codex", "UserPromptSubmit",
                                                           {**base, "session_id": "c2", "prompt": pick}, port))
        fail = {**base, "session_id": "c3", "tool_name": "Bash", "tool_input": {"command": "make deploy"},
                "tool_response": {"stderr": "billing deploy staging failed: exit 2", "exit_code": 2, "is_error": True}}
        _hook("codex", "UserPromptSubmit", {**base, "session_id": "c3", "prompt": "deploy billing"}, port)
        seen["repair"] = " ".join(_ctx(_hook("codex", "PostToolUse", fail, port)) for _ in range(3))
        for agent in ("opencode", "openclaw", "hermes"):
            found = json.loads(_hook(agent, "search", {"query": "billing deploy staging", "k": 10}, port))
            assert [r["id"] for r in found["results"]][:1] == [own[agent]], (path, agent, found)
            seen[f"{agent} search"] = json.dumps(found)
            assert json.loads(_hook(agent, "get", {"id": profile_id}, port))["memory"] is None
            assert json.loads(_hook(agent, "get", {"id": own[agent]}, port))["memory"]["id"] == own[agent]
            added = json.loads(_hook(agent, "add", {"text": f"{agent} note: zebrafish flag is ZF_{agent}",
                                                    "cwd": HOOK_PROJECT, "session_id": f"{agent}-live"}, port))
            again = json.loads(_hook(agent, "search", {"query": f"zebrafish flag ZF_{agent}"}, port))
            assert added["result"]["id"] in [r["id"] for r in again["results"]], (path, agent)
            seen[f"{agent} resume"] = json.loads(_hook(agent, "resume", {"query": "billing deploy",
                                                                         "session_id": f"{agent}-r"}, port))["context"]
        for where, text in seen.items():
            assert "PROFILEONLY" not in text, (path, where, text[:600])
        for where in ("digest", "packet", "resume list 'billing deploy staging'", "resume episode "
                      "'billing deploy staging'", "resume list ''", "resume episode ''"):
            assert "CODEXOWN" in seen[where], (path, where, seen[where][:600])
        if daemon is not None:
            log = (remem_home / "logs" / "hooks.log").read_text()
            assert "UserPromptSubmit kind=turn_start via=daemon" in log and "search kind=op via=daemon" in log
    finally:
        if daemon is not None:
            daemon.stop()

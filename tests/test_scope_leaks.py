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
            r = rank(mem, q, sc, k=50, cfg=preset(f"only:{ch}").with_(neighbour_weight=0.5, session_weight=1.0))
            for tid, _ in r.items:
                assert r.meta[tid]["owner"] == owner, (ch, q)
            for name, c in r.channels.items():
                rows = mem.db.execute(
                    f"SELECT DISTINCT owner FROM turns WHERE id IN ({','.join('?' * len(c.hits))})",
                    [t for t, _ in c.hits]).fetchall() if c.hits else []
                assert {x[0] for x in rows} <= {owner}, (name, q)
        for s in search_sessions(mem, q, sc, k=10):
            assert s["owner"] == owner


@pytest.mark.parametrize("q", RECALL_QUERIES[:4])
def test_entry_points_stay_in_scope(two_owners_rich, q):
    from remem.recall import entry

    mem = two_owners_rich
    for owner, other in (("alice", "bob"), ("bob", "alice")):
        sc = mem.scope(owner)
        for res in (mem.turn_start(q, owner=owner), entry.sub_agent(mem, q, sc), entry.repair(mem, q, sc),
                    entry.resume(mem, q, sc)):
            assert other not in res["text"], (q, res["text"])
            assert all(i.get("owner", owner) == owner for i in res["items"])
        cands = entry.resume(mem, q, sc)["items"]
        for c in cands:
            assert other not in entry.resume(mem, "", sc, session=c["session"])["text"]
        # asking for the other owner's episode by key shows nothing of it
        assert other not in entry.resume(mem, "", sc, session=f"{other}/codex/{other}-s")["text"]


def test_vector_index_applies_scope_to_agent_and_project(mem):
    mem.add("caching layer for api", agent="codex", project="p1")
    mem.add("caching layer for api", agent="gemini", project="p2", owner="other")
    mem.add("caching layer for api!", agent="gemini", project="p2")
    mem.embed_pending()
    from remem.recall.config import preset
    from remem.recall.search import search

    for sc, agents in ((mem.scope(agent="codex"), {"codex"}), (mem.scope(project="p2"), {"gemini"}),
                       (mem.scope(), {"codex", "gemini"})):
        hits = search(mem, "caching layer", sc, k=10, config=preset("vector"))
        assert hits and {h["agent"] for h in hits} <= agents and all(h["owner"] == "default" for h in hits)

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

"""The PostgreSQL engine's own parts: the shared-SQL translation, the word index ranking like
SQLite's FTS5 bm25, jobs claimed once by several daemons, the triggers. Engine-agnostic behaviour is
covered by the whole suite, which ``scripts/test.sh --postgres`` runs on this engine too."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from conftest import ON_POSTGRES
from remem.model import TurnIn
from remem.scope import Scope
from remem.store.postgres.db import numbered, translate
from remem.store.postgres.text import tokenize
from remem.store.protocols import TextQuery, TextTerm

needs_pg = pytest.mark.skipif(not ON_POSTGRES, reason="PostgreSQL: run with scripts/test.sh --postgres")


def test_shared_sql_becomes_postgresql():
    assert translate("SELECT id FROM turns WHERE +owner IN (?,?) AND note LIKE '50% done?'") == \
        "SELECT id FROM turns WHERE owner IN (%s,%s) AND note LIKE '50%% done?'"
    assert translate("INSERT OR IGNORE INTO entities (owner, kind, name) VALUES (?,?,?)") == \
        "INSERT INTO entities (owner, kind, name) VALUES (%s,%s,%s) ON CONFLICT DO NOTHING"
    assert translate("SELECT 1 FROM c CROSS JOIN turns t ON t.id = c.cid") == "SELECT 1 FROM c JOIN turns t ON t.id = c.cid"
    assert numbered("WHERE owner = ?1 AND (?2 != '' OR key = ?1)")
    assert translate("WHERE owner = ?1 AND key = ?2") == "WHERE owner = %(p1)s AND key = %(p2)s"


def test_words_are_tokenized_like_fts5_unicode61():
    assert tokenize("src/remem/db.py raised KeyError: 'café_au_lait'") == \
        ["src", "remem", "db", "py", "raised", "keyerror", "cafe", "au", "lait"]
    assert tokenize("部署失败 deploy") == ["部署失败", "deploy"]


TOPICS = ["the yaml loader fails on tabs in config/app.yaml", "redis cache eviction during the login flow",
          "docker build cache misses after the lockfile changed", "kubectl rollout restart deploy/shop",
          "pytest FAILED tests/test_auth.py::test_token_expiry", "部署 失败 因为 镜像 标签 错误",
          "the yaml schema rejects anchors", "login flow times out behind the proxy"]


def _turns() -> list[TurnIn]:
    out = []
    for i in range(60):
        topic = TOPICS[i % len(TOPICS)]
        out.append(TurnIn(request=f"{topic} (case {i})" + " yaml" * (i % 3), reply=f"looked at {topic}; fixed {i}",
                          agent="codex", owner="alice" if i % 5 else "bob", project="/w/shop",
                          source_key=f"k{i}", started_at=1.7e9 + i * 60, ended_at=1.7e9 + i * 60 + 5))
    return out


@needs_pg
def test_word_search_ranks_like_sqlite_bm25(mem, tmp_path):
    import remem

    lite = remem.open(tmp_path / "lite", env={"REMEM_DATABASE_URL": f"sqlite:///{tmp_path / 'lite.db'}"})
    assert lite.store.engine == "sqlite" and mem.store.engine == "postgresql"
    for m in (mem, lite):
        m.add_turns(_turns())
    queries = [TextQuery((TextTerm("yaml"),)), TextQuery((TextTerm("login"), TextTerm("flow"))),
               TextQuery((TextTerm("redis"), TextTerm("cache")), every=True), TextQuery((TextTerm("kube", prefix=True),)),
               TextQuery((TextTerm("部署失败", cjk=True),)), TextQuery((TextTerm("test_auth.py"),))]
    for scope in (Scope.of("alice"), Scope.of("alice", "bob"), Scope.of("bob", project="/w/shop")):
        for q in queries:
            pg = mem.store.text.search_words(scope, q, 8)
            sq = lite.store.text.search_words(scope, q, 8)
            assert [h[0] for h in pg] == [h[0] for h in sq], (scope, q)
            for (_, a), (_, b) in zip(pg, sq, strict=True):
                assert a == pytest.approx(b, rel=1e-4)
    lite.close()


@needs_pg
def test_several_daemons_claim_each_job_once(store):
    from remem.store import open_store

    with store.transaction():
        for i in range(60):
            store.jobs.enqueue("embed", {"n": i}, dedup_key=f"j{i}")
    got: list[int] = []
    lock = threading.Lock()

    def daemon() -> None:
        s = open_store(store._dsn, Path("."))  # a daemon of its own: its own connections
        try:
            while True:
                with s.transaction():
                    job = s.jobs.claim()
                if job is None:
                    return
                with lock:
                    got.append(int(job["id"]))
                time.sleep(0.002)
        finally:
            s.close()

    threads = [threading.Thread(target=daemon) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(got) == sorted(set(got)) and len(got) == 60


@needs_pg
def test_implausible_times_are_repaired_by_the_database(mem):
    db = mem.store.conn
    for i, bad in enumerate([1e24, -1e308, float("nan"), 1e18]):
        db.execute("INSERT INTO turns (id, source_key, owner, agent, request, created_at, updated_at, content_hash, "
                   "started_at, ended_at, last_access) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                   (f"t_bad{i}", f"old:{i}", "default", "codex", "kubectl rollout failed", 1.7e9, bad, f"h{i}",
                    bad, bad, bad))
    mem.index_pending(embed=False)  # rows written past the pipeline get their word rows from the index job
    for i in range(4):
        row = mem.get(f"t_bad{i}")
        assert row is not None and row["last_access"] is None
        for key in ("started_at", "ended_at", "created_at", "updated_at"):
            assert 946684800 <= row[key] <= time.time() + 86400, (i, key, row[key])
    assert {h["id"] for h in mem.search("kubectl rollout", k=10)} == {f"t_bad{i}" for i in range(4)}

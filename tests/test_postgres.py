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
    assert translate("SELECT 1 FROM c CROSS JOIN turns t INDEXED BY turns_id_scope ON t.id = c.cid") == \
        "SELECT 1 FROM c JOIN turns t ON t.id = c.cid"
    assert numbered("WHERE owner = ?1 AND (?2 != '' OR key = ?1)")
    assert translate("WHERE owner = ?1 AND key = ?2") == "WHERE owner = %(p1)s AND key = %(p2)s"


def test_an_hnsw_build_gets_the_memory_its_graph_needs():
    from remem.store.postgres.vectors import build_memory

    assert build_memory(1000, 384) == "512MB"          # small: the floor
    assert build_memory(150_000, 384) == "512MB"        # measured: the graph of 150k took ~270 MB
    assert 512 < int(build_memory(400_000, 384).removesuffix("MB")) < 1024
    assert int(build_memory(1_000_000, 384).removesuffix("MB")) > 2000  # a 1M-vector graph in memory
    assert build_memory(50_000_000, 768) == "4096MB"     # at most 4 GB of the server's memory


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


def _vector_rows(n: int, dim: int, seed: int = 3) -> tuple[list[tuple], dict[str, str]]:
    """``n`` unit vectors in clusters; owners holding 90 %, 6 %, 3 % and 1 % of the rows."""
    import numpy as np

    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(12, dim)).astype(np.float32)
    rows, owner_of = [], {}
    for i in range(n):
        v = centres[i % 12] + 0.6 * rng.normal(size=dim).astype(np.float32)
        v /= np.linalg.norm(v)
        r = i % 100
        owner = "big" if r < 90 else "mid" if r < 96 else "small" if r < 99 else "tiny"
        owner_of[f"t{i}"] = owner
        rows.append(("turn", f"t{i}", "summary", "test:64", dim, v.astype(np.float32).tobytes(), f"h{i}", owner,
                     "codex" if i % 2 else "claude-code", f"/w/p{i % 3}"))
    return rows, owner_of


@needs_pg
def test_vector_search_in_sql_returns_full_results_for_small_owners(mem, tmp_path):
    """pgvector's HNSW with the owner filter in the query: a small owner still gets its k nearest
    (iterative scan / the planner's exact path), nothing of another owner, and the same rows and
    scores as an exact scan; the owners' mean as SQLite's in-memory index keeps it."""
    import numpy as np

    import remem
    from remem.recall.vectors import VectorIndexes
    from remem.store.postgres.vectors import PgVectorSearch, index_name

    rows, _ = _vector_rows(4000, 64)
    mem.store.vectors.put_many(rows)
    assert mem.store.vectors.settle() == [index_name("test:64", "summary", 64)]   # the backlog drained
    assert mem.store.vectors.settle() == []
    search = mem.recall.vectors
    assert isinstance(search, PgVectorSearch)
    assert search.load("test:64", ["summary"], 64) == 0  # nothing to load ahead: pgvector searches in SQL
    lite = remem.open(tmp_path / "lite", env={"REMEM_DATABASE_URL": f"sqlite:///{tmp_path / 'lite.db'}"})
    lite.store.vectors.put_many(rows)
    exact = VectorIndexes(lite.store.vectors)
    rng = np.random.default_rng(9)
    for owner in ("big", "mid", "small", "tiny"):
        mine = [np.frombuffer(r[5], dtype=np.float32) for r in rows if r[7] == owner]
        for _ in range(5):
            q = mine[int(rng.integers(len(mine)))] + 0.3 * rng.normal(size=64).astype(np.float32)
            scope = Scope.of(owner)
            got = search.search_fields(scope, q, "test:64", ["summary"], 10)["summary"]
            ids = [r[1] for r in rows if r[7] == owner]
            dots = np.stack(mine) @ q
            want = [(ids[i], float(dots[i])) for i in np.argsort(-dots)[:10]]
            assert len(got) == 10, (owner, len(got))
            assert len({g[0] for g in got} & {w[0] for w in want}) >= 9, owner
            assert all(g[1] >= got[i + 1][1] for i, g in enumerate(got[:-1]))      # best first
            scores = dict(want)
            assert all(abs(s - scores[rid]) < 1e-4 for rid, s in got if rid in scores)
            assert {rid for rid, _ in got} <= {r[1] for r in rows if r[7] == owner}  # never another owner's
    # agent and project filters apply in the same query
    scope = Scope.of("mid", agent="codex", project="/w/p1")
    got = search.search_fields(scope, mine[0], "test:64", ["summary"], 10)["summary"]
    allowed = {r[1] for r in rows if r[7] == "mid" and r[8] == "codex" and r[9] == "/w/p1"}
    assert got and {rid for rid, _ in got} <= allowed
    # the HNSW index of this model and field can serve the query as recall writes it (its partial
    # predicate matches; on 4,000 rows the planner rightly prefers a scan and a sort, so those are off here)
    db = mem.store.conn
    db.execute("SET enable_seqscan = off")
    db.execute("SET enable_sort = off")
    plan = "\n".join(r[0] for r in db.execute(
        "EXPLAIN SELECT row_id FROM embeddings WHERE model_id = ? AND field = ? AND dim = 64 AND row_kind = 'turn' "
        "AND owner IN (?) ORDER BY vec::vector(64) <#> ? LIMIT 10",
        ["test:64", "summary", "big", np.zeros(64, dtype=np.float32)]))
    assert index_name("test:64", "summary", 64) in plan, plan
    db.execute("RESET enable_seqscan")
    db.execute("RESET enable_sort")
    # the owners' mean vector, as SQLite's running sums give it
    q = rows[0][5]
    qv = np.frombuffer(q, dtype=np.float32)
    assert abs(search.mean_similarity(Scope.of("small"), qv, "test:64", "summary")
               - exact.mean_similarity(Scope.of("small"), qv, "test:64", "summary")) < 1e-4
    assert search.mean_similarity(Scope.of("nobody"), qv, "test:64", "summary") is None
    lite.close()


@needs_pg
def test_both_vector_fields_in_one_statement_equal_one_statement_each(mem):
    """A search's two fields (summary, actions) go as one statement (a UNION ALL of the two HNSW
    scans): each field's rows and scores are what that field's statement alone gives, other owners' never."""
    import numpy as np

    from remem.store.postgres import db as pgdb

    rows, _ = _vector_rows(3000, 64)
    rows += [(r[0], r[1], "actions", *r[3:5], np.frombuffer(r[5], dtype=np.float32)[::-1].copy().tobytes(), *r[6:])
             for r in rows[::3]]
    mem.store.vectors.put_many(rows)
    mem.store.vectors.settle()
    search = mem.recall.vectors
    statements = []
    real = pgdb.PgConnection.execute

    def counted(self, sql, params=()):
        statements.append(sql)
        return real(self, sql, params)

    rng = np.random.default_rng(5)
    for owner in ("big", "small", "tiny"):
        for k in (3, 10):
            q = np.frombuffer(rows[int(rng.integers(len(rows)))][5], dtype=np.float32) \
                + 0.3 * rng.normal(size=64).astype(np.float32)
            scope = Scope.of(owner)
            pgdb.PgConnection.execute = counted
            try:
                statements.clear()
                both = search.search_fields(scope, q, "test:64", ["summary", "actions"], k)
                assert sum("<#>" in s for s in statements) == 1
            finally:
                pgdb.PgConnection.execute = real
            for f in ("summary", "actions"):
                assert both[f] == search.search_fields(scope, q, "test:64", [f], k)[f] == search.search(scope, q, "test:64", f, k)
                assert len(both[f]) == k
                assert {rid for rid, _ in both[f]} <= {r[1] for r in rows if r[7] == owner and r[2] == f}


@needs_pg
def test_doctor_names_the_server_and_its_extensions(mem):
    import re

    mem.add("the deploy script needs the staging token", agent="codex")
    mem.embed_pending()   # drains the backlog: the model's index is built
    from remem.store.postgres.vectors import index_name

    assert mem.store.conn.execute("SELECT count(*) FROM pg_indexes WHERE indexname = ?",
                                  (index_name("hash:512", "summary", 512),)).fetchone()[0] == 1
    detail = mem.doctor(load_embedder=False)["checks"]["engine"]["detail"]
    assert re.search(r"PostgreSQL \d+\.\d+.*pgvector \d+\.\d+\.\d+, pg_trgm \d+\.\d+, \d+ HNSW index", detail), detail


@needs_pg
def test_vectors_written_before_pgvector_move_into_the_vector_column(store):
    """A database whose embeddings predate p003 (bytes in ``vector``): the migration moves them into
    ``vec``, empties the bytes, and builds the index of each model and field."""

    from remem.store.postgres.migrations import MIGRATIONS
    from remem.store.postgres.vectors import index_name

    rows, _ = _vector_rows(50, 16)
    db = store.conn
    with store.transaction():
        db.executemany("INSERT INTO embeddings (row_kind, row_id, field, model_id, dim, vector, content_hash, owner, "
                       "agent, project, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,1)", rows)
    with store.transaction():
        next(m for m in MIGRATIONS if m.__name__ == "p003_pgvector")(db)
    left = db.execute("SELECT count(*) FROM embeddings WHERE vec IS NULL OR length(vector) > 0").fetchone()[0]
    assert left == 0
    moved = list(store.vectors.all_of("test:64"))       # in no particular order (the heap's, after an UPDATE)
    assert sorted(moved) == sorted(r[5] for r in rows)    # every vector, byte for byte
    assert db.execute("SELECT 1 FROM pg_class WHERE relname = ?", (index_name("test:64", "summary", 16),)).fetchone()


@needs_pg
def test_a_server_without_pgvector_for_this_user_is_a_clear_error(store):
    """pgvector is not a trusted extension: a role that may not create it, on a database without it,
    gets an error naming what to do (and no half-migrated database)."""
    from urllib.parse import urlsplit, urlunsplit

    import psycopg

    from remem.store import open_store
    from remem.store.errors import StoreError

    admin = store._dsn
    with psycopg.connect(admin, autocommit=True) as c:
        c.execute("DROP DATABASE IF EXISTS remem_novector WITH (FORCE)")
        c.execute("DROP ROLE IF EXISTS remem_plain")
        c.execute("CREATE ROLE remem_plain LOGIN")
        c.execute("CREATE DATABASE remem_novector OWNER remem_plain")
    try:
        p = urlsplit(admin)
        url = urlunsplit((p.scheme, p.netloc.replace("postgres@", "remem_plain@", 1), "/remem_novector", p.query, ""))
        s = open_store(url, Path("."))
        with pytest.raises(StoreError, match="pgvector extension"):
            s.migrate()
        s.close()
        with psycopg.connect(url) as c:  # the migrations are one transaction: nothing stayed
            assert c.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()[0] == 0
    finally:
        with psycopg.connect(admin, autocommit=True) as c:
            c.execute("DROP DATABASE IF EXISTS remem_novector WITH (FORCE)")
            c.execute("DROP ROLE IF EXISTS remem_plain")


@needs_pg
def test_word_search_ranked_from_the_word_rows_equals_the_join_with_every_turn(mem, monkeypatch):
    """bm25 ranked from the word rows alone (each carries its turn's length) with the scope of the best
    few checked after gives exactly what joining every match with its turn gives: ids, order, scores;
    small scopes (too few of the best in scope) fall back to the join."""
    from remem.store.postgres import text as pgtext

    mem.add_turns(_turns())
    mem.add_turns([TurnIn(request="the yaml loader fails on tabs again and again", reply="rewrote it", agent="codex",
                          owner="alice", project="/w/shop", source_key="k0", started_at=1.7e9, ended_at=1.7e9 + 5)])
    db = mem.store.conn
    assert db.execute("SELECT count(*) FROM turn_terms tt JOIN turns t ON t.rowid = tt.turn "
                      "WHERE tt.dl <> t.tlen").fetchone()[0] == 0
    assert db.execute("SELECT count(*) FROM turn_terms").fetchone()[0] > 0
    text = mem.store.text
    queries = [TextQuery((TextTerm("yaml"),)), TextQuery((TextTerm("login"), TextTerm("flow"))),
               TextQuery((TextTerm("yaml"), TextTerm("the"), TextTerm("case"))),
               TextQuery((TextTerm("redis"), TextTerm("cache")), every=True), TextQuery((TextTerm("kube", prefix=True),)),
               TextQuery((TextTerm("部署失败", cjk=True),)), TextQuery((TextTerm("test_auth.py"),))]
    scopes = (Scope.of("alice"), Scope.of(["alice", "bob"]), Scope.of("bob"), Scope.of("bob", project="/w/shop"),
              Scope.of("alice", agent="claude-code"))
    fell_back = []
    real = text._ranked_first

    def spy(*a, **k):
        got = real(*a, **k)
        fell_back.append(got is None)
        return got

    for limit in (3, 8, 50):
        for scope in scopes:
            for q in queries:
                text._in_scope.clear()
                monkeypatch.setattr(text, "_ranked_first", spy)
                for newest in (False, True):
                    text._in_scope.clear()
                    got = text.search_words(scope, q, limit, newest=newest)
                    monkeypatch.setattr(pgtext, "FIRST_SHARE", 2.0)  # never ranked first: every match joined
                    want = text.search_words(scope, q, limit, newest=newest)
                    monkeypatch.setattr(pgtext, "FIRST_SHARE", 0.3)
                    assert got == want, (limit, scope, q, newest)
    assert any(fell_back) and not all(fell_back)


@needs_pg
def test_session_neighbours_in_one_statement_match_sqlites_two_per_row(mem, tmp_path):
    """PostgreSQL's one LATERAL statement for all rows gives what SQLite's two statements per row give:
    the same order, ties on the start time broken by id, other owners' and agents' turns left out."""
    import remem
    from remem.store.sqlite.candidates import neighbours

    rows = []
    for s in range(4):
        for i in range(7):
            t = 1.7e9 + s * 3600 + (i // 2) * 60   # pairs of turns share a start time
            rows.append(TurnIn(request=f"step {i} of session {s}", reply="ok", agent="codex" if i != 3 else "claude-code",
                               owner="alice" if s != 2 else "bob", session_id=f"s{s}", project="/w/p",
                               source_key=f"n{s}-{i}", started_at=t, ended_at=t + 5))
    lite = remem.open(tmp_path / "lite", env={"REMEM_DATABASE_URL": f"sqlite:///{tmp_path / 'lite.db'}"})
    for m in (mem, lite):
        m.add_turns(rows)
    def pick(m, scope):
        ids = [r[0] for r in m.store.conn.execute("SELECT id FROM turns ORDER BY id")]
        metas = m.store.candidates.meta(scope, ids)
        return [metas[i] for i in ids if i in metas]

    for scope in (Scope.of("alice"), Scope.of(["alice", "bob"]), Scope.of("alice", agent="codex")):
        for window in (1, 2):
            got = mem.store.candidates.neighbours(scope, pick(mem, scope), window)
            want = neighbours(lite.store.conn, scope, pick(lite, scope), window)
            assert got == want and any(got.values()), (scope, window)
    lite.close()

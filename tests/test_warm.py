"""Warm-up (``Remem.warm``): what the first recall would load is loaded ahead of it, and the daemon
does it at start-up."""

from __future__ import annotations

import time

from remem.core import Remem
from remem.server.testing import Daemon, sample_turns

HASH = {"REMEM_EMBEDDING_MODEL": "hash"}


def _embedded_home(tmp_path, n: int = 60):
    home = tmp_path / "remem"
    mem = Remem(home, env=HASH)
    mem.add_turns(sample_turns(n))
    mem.index_pending(embed=True)
    stored = mem.store.vectors.stats()
    mem.close()
    return home, stored


def test_warm_loads_the_vector_indexes_before_the_first_search(tmp_path):
    home, _ = _embedded_home(tmp_path)
    cold = Remem(home, env=HASH)
    want = cold.search("how do we deploy the shop service?", k=5)
    cold.close()

    mem = Remem(home, env=HASH)
    if mem.store.engine != "sqlite":  # PostgreSQL searches in SQL (pgvector): nothing to load in memory
        assert mem.warm() == {"doc_freqs": 0, "vectors": 0}   # and it counts words on demand
        assert mem.search("how do we deploy the shop service?", k=5) == want
        mem.close()
        return
    assert mem.recall.vectors.info() == []          # nothing loaded before a search or a warm-up
    got = mem.warm()
    loaded = mem.recall.vectors.info()
    assert loaded and got["vectors"] == sum(i["rows"] for i in loaded) > 0
    emb = mem.embedder()
    assert {i["model"] for i in loaded} == {emb.model_id}
    # the first search uses what was loaded (the same indexes, not rebuilt) and finds the same
    before = {(i["model"], i["field"]): i["rows"] for i in loaded}
    assert mem.search("how do we deploy the shop service?", k=5) == want
    assert {(i["model"], i["field"]): i["rows"] for i in mem.recall.vectors.info()} == before
    mem.close()


def test_warm_without_embeddings_loads_no_vectors(tmp_path):
    home, _ = _embedded_home(tmp_path, 10)
    mem = Remem(home, env={**HASH, "REMEM_EMBEDDING_ENABLED": "0"})
    got = mem.warm()
    assert got["vectors"].startswith("not loaded")
    if mem.store.engine == "sqlite":                # (PostgreSQL's info() lists its HNSW indexes)
        assert mem.recall.vectors.info() == []
    assert mem.search("deploy", k=3) is not None    # recall still answers, lexically
    mem.close()


def test_the_daemon_warms_up_at_start(tmp_path):
    home, _ = _embedded_home(tmp_path, 30)
    with Daemon(home, env={**HASH, "REMEM_AUTO_SYNC": "0"}) as d:
        deadline, warm, started = time.monotonic() + 60, None, {}
        while time.monotonic() < deadline:
            started = d.get("/api/v1/status").json()["daemon"]["startup"]
            warm = started.get("warm")
            if warm is not None:
                break
            time.sleep(0.1)
        assert warm is not None, "the start-up never reported its warm-up"
        assert started["gc_frozen"] > 10_000, started   # start-up's heap is set aside from full collections
        sqlite = Remem(home, env=HASH).store.engine == "sqlite"
        assert warm["vectors"] > 0 if sqlite else warm["vectors"] == 0, warm   # pgvector loads nothing
        r = d.post("/api/v1/recall/turn-start", json={"prompt": "how do we deploy the shop service?"})
        assert r.status_code == 200 and r.json()["text"]

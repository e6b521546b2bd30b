"""The REST API over real HTTP: memories, search details, timelines, recall, data, config, two-step actions."""

from __future__ import annotations

import json
import os
import sqlite3
import time

import pytest

from remem.server.testing import Daemon, sample_turns

pytestmark = pytest.mark.module_store  # its tests share the store a module fixture built


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    base = tmp_path_factory.mktemp("api")
    (base / "home").mkdir()
    import remem

    m = remem.open(base / "remem", env={"REMEM_EMBEDDING_MODEL": "hash"})
    m.add_turns(sample_turns(24))
    m.add_turns(sample_turns(3, owner="other", seed=3))
    m.close()
    d = Daemon(base / "remem", env={"HOME": str(base / "home"), "REMEM_AUTO_SYNC": "0"})
    d.start()
    yield d
    d.stop()


@pytest.fixture
def c(daemon):
    with daemon.client() as client:
        yield client


def test_list_with_filters(c):
    all_ = c.get("/api/v1/memories", params={"limit": 100}).json()
    assert len(all_["items"]) == 24 and all_["next_offset"] is None
    item = all_["items"][0]
    assert {"id", "agent", "project", "request", "reply", "tools", "actions_count"} <= set(item)
    codex = c.get("/api/v1/memories", params={"agent": "codex", "limit": 100}).json()["items"]
    assert codex and all(i["agent"] == "codex" for i in codex)
    shop = c.get("/api/v1/memories", params={"project": "shop", "limit": 100}).json()["items"]
    assert shop and all(i["project"] == "shop" for i in shop)
    page = c.get("/api/v1/memories", params={"limit": 10}).json()
    assert len(page["items"]) == 10 and page["next_offset"] == 10
    recent = c.get("/api/v1/memories", params={"since": time.time() - 6 * 3600, "limit": 100}).json()["items"]
    assert 0 < len(recent) < 24
    other = c.get("/api/v1/memories", params={"owner": "other"}).json()["items"]
    assert len(other) == 3 and all(i["owner"] == "other" for i in other)
    both = c.get("/api/v1/memories", params={"owner": "default,other", "limit": 100}).json()["items"]
    assert len(both) == 27
    assert c.get("/api/v1/memories", params={"limit": 0}).status_code == 422


def test_search_get_and_post_with_channel_details(c):
    got = c.get("/api/v1/memories/search", params={"q": "deploy production", "k": 5}).json()
    assert got["results"] and "deploy" in got["results"][0]["text"].lower()
    top = got["results"][0]
    assert top["details"]["channels"], "per-channel details missing"
    assert all("rank" in d for d in top["details"]["channels"].values())
    assert top["started_at"] and "tools" in top
    posted = c.post("/api/v1/memories/search", json={"query": "deploy production", "k": 5}).json()
    assert [r["id"] for r in posted["results"]] == [r["id"] for r in got["results"]]
    assert c.post("/api/v1/memories/search", json={"query": ""}).status_code == 422
    assert c.get("/api/v1/memories/search", params={"q": "   "}).status_code == 400
    scoped = c.post("/api/v1/memories/search", json={"query": "deploy", "agent": "codex"}).json()["results"]
    assert all(r["agent"] == "codex" for r in scoped)
    cjk = c.get("/api/v1/memories/search", params={"q": "依赖"}).json()["results"]
    assert cjk and "uv" in cjk[0]["text"]


def test_get_delete_and_scope(c):
    mid = c.get("/api/v1/memories", params={"owner": "other"}).json()["items"][0]["id"]
    assert c.get(f"/api/v1/memories/{mid}").status_code == 404  # default owner cannot see it
    full = c.get(f"/api/v1/memories/{mid}", params={"owner": "other"}).json()
    assert full["request"] and isinstance(full["actions"], list) and full["actions"][0]["name"]
    assert c.delete(f"/api/v1/memories/{mid}").status_code == 404
    assert c.delete(f"/api/v1/memories/{mid}", params={"owner": "other"}).json()["forgotten"] == 1
    assert c.get(f"/api/v1/memories/{mid}", params={"owner": "other"}).status_code == 404


def test_sessions_and_timeline(c):
    sessions = c.get("/api/v1/sessions").json()["items"]
    assert sessions and sessions[0]["turns"] >= 1
    sid = sessions[0]["session_id"]
    tl = c.get(f"/api/v1/sessions/{sid}/timeline").json()["items"]
    starts = [t["started_at"] for t in tl]
    assert len(tl) == sessions[0]["turns"] and starts == sorted(starts)


def test_add_capture_and_recall_packet(c):
    r = c.post("/api/v1/memories", json={"text": "The staging database lives on db-stage-7", "agent": "codex",
                                         "project": "ops"})
    assert r.status_code == 201 and r.json()["status"] == "added"
    assert c.post("/api/v1/memories", json={"text": "", "agent": "codex"}).status_code == 422
    turns = [{"request": "rotate the TLS certificate", "reply": "done with certbot renew", "agent": "claude-code",
              "session_id": "live-1", "project": "ops",
              "actions": [{"name": "bash", "input": "certbot renew", "output": "renewed"}]}]
    got = c.post("/api/v1/turns", json={"turns": turns}).json()
    assert got["counts"]["added"] == 1
    again = c.post("/api/v1/turns", json={"turns": turns}).json()
    assert again["counts"].get("duplicate") == 1
    packet = c.post("/api/v1/recall/turn-start", json={"prompt": "where is the staging database?",
                                                       "agent": "codex"}).json()
    assert "db-stage-7" in packet["text"] and "<remem_memory_context>" in packet["text"]
    assert c.post("/api/v1/recall/turn-start", json={"prompt": ""}).status_code == 422


def test_stats_doctor_status_logs(c):
    st = c.get("/api/v1/stats").json()
    assert st["turns"] >= 24 and "by_agent" in st
    doc = c.get("/api/v1/doctor").json()
    assert doc["checks"]["integrity"]["ok"]
    status = c.get("/api/v1/status").json()
    assert status["daemon"]["status"] == "ready" and "jobs" in status and status["database"]["bytes"] > 0
    logs = c.get("/api/v1/logs", params={"lines": 50}).json()
    assert any("listening" in line or "GET /api/v1" in line for line in logs["lines"])


def test_export_jsonl_sqlite_and_import(c, tmp_path):
    r = c.get("/api/v1/export/jsonl")
    assert r.status_code == 200 and "attachment" in r.headers["content-disposition"]
    lines = [json.loads(x) for x in r.text.splitlines() if x.strip()]
    assert len(lines) >= 24 and all(x["type"] == "turn" for x in lines)
    imp = c.post("/api/v1/import", content=r.content, headers={"Content-Type": "application/x-ndjson"}).json()
    assert imp["counts"]["added"] == 0 and imp["counts"]["duplicate"] == len(lines)
    fresh = {**lines[0], "id": "", "request": "an imported note about kafka retention", "source_key": "imp:1"}
    imp = c.post("/api/v1/import", content=json.dumps(fresh).encode() + b"\n").json()
    assert imp["counts"]["added"] == 1
    bad = c.post("/api/v1/import", content=b"{not json}\n")
    assert bad.status_code == 400 and "line 1" in bad.json()["detail"]
    db = c.get("/api/v1/export/sqlite")
    if os.environ.get("REMEM_DATABASE_URL", "").startswith("postgres"):  # a file copy is SQLite's
        assert db.status_code == 503 and "pg_dump" in db.json()["detail"]
        return
    assert db.status_code == 200 and 'filename="memory.sqlite"' in db.headers["content-disposition"]
    path = tmp_path / "memory.sqlite"
    path.write_bytes(db.content)
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM turns").fetchone()[0] >= 24


def test_config_read_and_patch(c):
    cfg = c.get("/api/v1/config").json()
    assert cfg["values"]["recall"]["token_budget"] == 2000 and "hash" in cfg["embedders"]
    r = c.patch("/api/v1/config", json={"recall.token_budget": 1500, "sync.interval_seconds": 600})
    assert r.status_code == 200 and r.json()["changed"] == {"recall.token_budget": 1500, "sync.interval_seconds": 600}
    assert c.get("/api/v1/config").json()["values"]["recall"]["token_budget"] == 1500
    for bad in ({"recall.token_budget": 50}, {"recall.token_budget": 1200, "no.such.key": 1},
                {"sync.auto": "maybe"}, {"sync.auto": 3}, {}):
        r = c.patch("/api/v1/config", json=bad)
        assert r.status_code == 400, bad
    assert c.get("/api/v1/config").json()["values"]["recall"]["token_budget"] == 1500  # nothing half-applied
    r = c.patch("/api/v1/config", json={"server.port": 7999})
    assert r.json()["restart_required"] == ["server.port"]
    c.patch("/api/v1/config", json={"server.port": 7077, "recall.token_budget": 2000})


def test_sources_rescan_needs_confirmation(c):
    from importlib.util import find_spec

    r = c.post("/api/v1/sources/rescan", json={})
    if find_spec("remem.sources.sync") is None:
        assert r.status_code == 503 and "not available" in r.json()["detail"]
        return
    first = r.json()
    assert first["confirm"] and "deep rescan" in first["message"].lower()
    assert c.post("/api/v1/sources/rescan", json={"confirm": "made-up"}).status_code == 409
    assert c.post("/api/v1/sources/rescan", json={"confirm": first["confirm"], "agents": ["codex"]}).status_code == 409
    ok = c.post("/api/v1/sources/rescan", json={"confirm": first["confirm"]})
    assert ok.status_code == 202 and ok.json()["job"]["payload"]["full"] is True
    assert c.post("/api/v1/sources/rescan", json={"confirm": first["confirm"]}).status_code == 409  # used once


def test_jobs_404_and_bad_actions(c):
    assert c.get("/api/v1/jobs/999999").status_code == 404
    assert c.post("/api/v1/jobs/999999/pause").status_code == 404
    assert c.post("/api/v1/jobs/1/explode").status_code == 404

"""REST under /api/v1/learned against the real daemon, and the background learn after writes."""

from __future__ import annotations

import time

import httpx

from learned_data import PROJECT, seed, turns
from remem.server.testing import Daemon


def test_learned_rest(tmp_path):
    import remem

    (tmp_path / "home").mkdir()
    with remem.open(tmp_path / "remem", env={"REMEM_EMBEDDING_MODEL": "hash"}) as m:
        seed(m)
    with Daemon(tmp_path / "remem", env={"HOME": str(tmp_path / "home"), "REMEM_AUTO_SYNC": "0"}) as d, \
            d.client() as c:
        assert httpx.get(d.url + "/api/v1/learned", timeout=5).status_code == 401     # behind the token
        ran = c.post("/api/v1/learned/learn").json()
        assert ran["projects"] == 2, ran
        items = c.get("/api/v1/learned", params={"project": PROJECT}).json()["items"]
        bun = next(i for i in items if "Use bun, not npm" in i["text"])
        assert bun["status"] == "active" and len(bun["evidence"]) == 2
        assert not any("pnpm" in i["text"] for i in c.get("/api/v1/learned", params={"status": "all"}).json()["items"])
        shown = c.get(f"/api/v1/learned/{bun['id']}").json()
        assert "Use bun, not npm" in shown["quotes"][0]["request"]
        assert c.get("/api/v1/learned/m_missing").status_code == 404
        assert c.get("/api/v1/learned", params={"status": "bogus"}).status_code == 400
        assert c.post(f"/api/v1/learned/{bun['id']}/explode").status_code == 422

        assert c.post(f"/api/v1/learned/{bun['id']}/lock").json()["locked"] is True
        edited = c.post(f"/api/v1/learned/{bun['id']}/edit", json={"text": "Always bun; never npm or npx."}).json()
        assert edited["text"] == "Always bun; never npm or npx." and edited["edited"]
        assert c.post(f"/api/v1/learned/{bun['id']}/edit", json={"text": ""}).status_code == 422
        events = c.get(f"/api/v1/learned/{bun['id']}/history").json()["events"]
        assert [e["action"] for e in events] == ["created", "lock", "edit"]
        back = c.post(f"/api/v1/learned/events/{events[-1]['id']}/rollback").json()
        assert back["text"] == bun["text"] and back["locked"] is True
        assert c.post("/api/v1/learned/events/999999/rollback").status_code == 404
        assert c.post(f"/api/v1/learned/{bun['id']}/feedback", json={"verdict": "bad"}).json()["status"] == "rejected"
        assert c.post(f"/api/v1/learned/{bun['id']}/forget").json()["status"] == "rejected"
        assert c.get(f"/api/v1/learned/{bun['id']}").status_code == 404
        assert c.get("/api/v1/learned", params={"owner": "bob", "status": "all"}).json()["items"] == []


def test_the_daemon_learns_after_a_capture(tmp_path):
    (tmp_path / "home").mkdir()
    with Daemon(tmp_path / "remem", env={"HOME": str(tmp_path / "home"), "REMEM_AUTO_SYNC": "0",
                                         "REMEM_LEARN_DELAY": "0"}) as d, d.client() as c:
        body = {"turns": [{"request": t.request, "reply": t.reply, "project": t.project, "session_id": t.session_id,
                           "agent": "claude-code", "started_at": t.started_at, "ended_at": t.ended_at,
                           "actions": [{"name": a.name, "input": a.input, "output": a.output,
                                        "is_error": a.is_error} for a in t.actions]} for t in turns()],
                "live": True}
        r = c.post("/api/v1/turns", json=body)
        assert r.status_code == 200, r.text
        deadline = time.monotonic() + 30
        items: list = []
        while time.monotonic() < deadline and not items:
            items = c.get("/api/v1/learned", params={"project": PROJECT}).json()["items"]
            time.sleep(0.2)
        assert any("Use bun, not npm" in i["text"] for i in items), items
        jobs = c.get("/api/v1/jobs").json()
        learn_jobs = [j for j in jobs["jobs"] if j["kind"] == "learn"]
        assert len(learn_jobs) == 1                 # one per owner, reused

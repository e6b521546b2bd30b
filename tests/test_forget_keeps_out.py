"""What the user forgot stays forgotten (tombstones), through every writer: the CLI with real
Claude Code / Codex shaped history files and `remem sync`, the hook entry point, the HTTP API and
`remem import`; `remem forget --undo` and an explicit re-add are the only ways back."""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from remem.integrations import runtime

TRACE = """Traceback (most recent call last):
  File "/home/alice/proj/shop/payments/retry.py", line 88, in charge
    resp = client.post(url, json=payload, timeout=self.timeout)
  File "/home/alice/proj/shop/.venv/lib/python3.12/site-packages/httpx/_client.py", line 1145, in post
    return self.request("POST", url, json=json)
httpx.ReadTimeout: timed out after 5.0s
"""

# (prompt, reply, tool command, tool output) of a realistic Claude Code session
CLAUDE_TURNS = [
    ("Why does test_retry_backoff fail with a ReadTimeout on CI?",
     "The payment client uses a 5 s timeout while the CI sandbox answers in ~7 s; raise it to 15 s "
     "in payments/retry.py and keep the exponential backoff (0.5, 1, 2 s).",
     "pytest tests/test_retry.py -x -q", TRACE * 3 + "FAILED tests/test_retry.py::test_retry_backoff"),
    ("Store the staging kubeconfig password hint somewhere private: it is in 1Password 'staging-k8s'",
     "Noted: the staging kubeconfig lives at ~/.kube/staging.yaml, its password is in 1Password "
     "under 'staging-k8s'.", "ls ~/.kube", "config\nstaging.yaml\nprod.yaml"),
    ("把部署脚本改成先跑数据库迁移再重启服务",
     "已修改 deploy.sh：先执行 `alembic upgrade head`，成功后再 `kubectl rollout restart deploy/shop`。",
     "cat deploy.sh", "#!/bin/sh\nset -e\nalembic upgrade head\nkubectl rollout restart deploy/shop\n"),
]
SECRET_TURN = 1  # the one the user forgets


def _ts(minute: int) -> str:
    return f"2026-01-01T10:{minute:02d}:00Z"


def claude_turn(sid: str, n: int, prompt: str, reply: str, cmd: str, out: str, minute: int) -> str:
    """One Claude Code turn: user prompt, assistant tool_use, tool_result, final assistant text."""
    u, a1, r, a2 = f"{sid}-u{n}", f"{sid}-a{n}", f"{sid}-r{n}", f"{sid}-f{n}"
    recs = [
        {"type": "user", "uuid": u, "parentUuid": None, "sessionId": sid, "cwd": "/home/alice/proj/shop",
         "timestamp": _ts(minute), "userType": "external", "message": {"role": "user", "content": prompt}},
        {"type": "assistant", "uuid": a1, "parentUuid": u, "sessionId": sid, "cwd": "/home/alice/proj/shop",
         "timestamp": _ts(minute), "message": {"id": "m" + a1, "role": "assistant", "model": "claude-x",
                                                "content": [{"type": "tool_use", "id": "tu" + u, "name": "Bash",
                                                             "input": {"command": cmd}}]}},
        {"type": "user", "uuid": r, "parentUuid": a1, "sessionId": sid, "cwd": "/home/alice/proj/shop",
         "timestamp": _ts(minute), "message": {"role": "user", "content": [
             {"type": "tool_result", "tool_use_id": "tu" + u, "content": out}]}},
        {"type": "assistant", "uuid": a2, "parentUuid": r, "sessionId": sid, "cwd": "/home/alice/proj/shop",
         "timestamp": _ts(minute + 1), "message": {"id": "m" + a2, "role": "assistant", "model": "claude-x",
                                                    "content": [{"type": "text", "text": reply}]}},
    ]
    return "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in recs)


def claude_file(name: str = "s1") -> Path:
    home = Path(os.environ["HOME"])
    f = home / f".claude/projects/-home-alice-proj-shop/{name}.jsonl"
    f.parent.mkdir(parents=True, exist_ok=True)
    return f


def write_claude(sid: str = "s1", turns=CLAUDE_TURNS, start: int = 0) -> Path:
    f = claude_file(sid)
    with f.open("a", encoding="utf-8") as fh:
        for i, t in enumerate(turns):
            fh.write(claude_turn(sid, start + i, *t, minute=(start + i) * 3))
    return f


def jcli(cli, *args: str) -> dict:
    r = cli(*args, "--json")
    assert r.returncode == 0, r.stderr.decode()
    return json.loads(r.stdout)


def turns_of(cli, session: str | None = None) -> list[dict]:
    items = []
    r = cli("export")
    for line in r.stdout.decode().splitlines():
        rec = json.loads(line)
        if session is None or rec["session_id"] == session:
            items.append(rec)
    return items


def append_one_more(sid: str = "s1") -> None:
    write_claude(sid, [("Now add a test for the 15 s timeout", "Added tests/test_retry.py::test_timeout_15s.",
                        "pytest tests/test_retry.py -q", "3 passed in 0.41s")], start=len(CLAUDE_TURNS))


def test_forgotten_turn_stays_out_after_the_session_file_grows_and_resyncs(cli):
    write_claude()
    assert jcli(cli, "sync", "claude-code")["total"]["turns_added"] == 3
    secret = next(t for t in turns_of(cli) if "1Password" in t["request"])
    r = cli("forget", secret["id"])
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode()
    assert out.startswith("forgot 1 memory; it stays out of later syncs") and "--undo" in out
    append_one_more()
    res = jcli(cli, "sync", "claude-code")["total"]
    assert res["turns_added"] == 1 and res["skipped_forgotten"] == 1
    left = turns_of(cli)
    assert len(left) == 3 and not any("1Password" in t["request"] for t in left)
    assert any("15 s timeout" in t["request"] for t in left)
    assert cli("get", secret["id"]).returncode != 0
    hits = jcli(cli, "search", "staging kubeconfig 1Password")["results"]
    assert all("1Password" not in h["text"] for h in hits)
    # a full rescan and the daemon's periodic sync use the same pipeline
    assert jcli(cli, "sync", "--full", "--yes")["total"]["skipped_forgotten"] == 1
    assert not any("1Password" in t["request"] for t in turns_of(cli))
    listed = jcli(cli, "forget", "--list")["kept_out"]
    assert [(t["kind"], t["turn_id"]) for t in listed] == [("turn", secret["id"])]
    assert "1Password" not in json.dumps(listed)  # a tombstone holds keys, not the forgotten text


def test_undo_brings_the_turn_back_on_the_next_sync_of_an_unchanged_file(cli):
    write_claude()
    jcli(cli, "sync", "claude-code")
    secret = next(t for t in turns_of(cli) if "1Password" in t["request"])
    jcli(cli, "forget", secret["id"])
    assert jcli(cli, "sync", "claude-code")["total"]["turns_added"] == 0
    r = cli("forget", "--undo", secret["id"])
    assert r.returncode == 0 and b"let back in" in r.stdout, r.stderr
    back = jcli(cli, "sync", "claude-code")["total"]
    assert back["turns_added"] == 1 and back["skipped_forgotten"] == 0
    assert any(t["id"] == secret["id"] for t in turns_of(cli))
    assert cli("forget", "--undo", secret["id"]).returncode != 0  # nothing left to undo


def test_forgotten_session_keeps_every_turn_out_also_later_ones(cli):
    write_claude("s1")
    write_claude("s2", CLAUDE_TURNS[:1])
    jcli(cli, "sync", "claude-code")
    r = cli("forget", "--session", "s1", "--yes")
    assert r.returncode == 0, r.stderr
    assert b"forgot 3 memories; every turn of session s1 stays out" in r.stdout
    append_one_more("s1")
    res = jcli(cli, "sync", "claude-code")["total"]
    assert res["turns_added"] == 0 and res["skipped_forgotten"] == 4
    assert turns_of(cli, "s1") == [] and len(turns_of(cli, "s2")) == 1
    jcli(cli, "forget", "--undo", "--session", "s1")
    assert jcli(cli, "sync", "claude-code")["total"]["turns_added"] == 4
    assert len(turns_of(cli, "s1")) == 4


def _codex_file(sid: str, day: str, turns: list[tuple[str, str]], at: datetime) -> Path:
    home = Path(os.environ["HOME"])
    f = home / f".codex/sessions/2026/{day}/rollout-2026-{day.replace('/', '-')}T10-00-00-{sid}.jsonl"
    f.parent.mkdir(parents=True, exist_ok=True)
    ts = lambda s: datetime.fromtimestamp(at.timestamp() + s, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")  # noqa: E731
    recs = [{"timestamp": ts(0), "type": "session_meta",
             "payload": {"id": sid, "timestamp": ts(0), "cwd": "/home/alice/proj/shop", "originator": "codex_cli_rs",
                         "cli_version": "0.128.0", "source": "cli"}}]
    for i, (prompt, reply) in enumerate(turns):
        base = 10 * (i + 1)
        recs += [
            {"timestamp": ts(base), "type": "event_msg", "payload": {"type": "user_message", "message": prompt}},
            {"timestamp": ts(base + 1), "type": "response_item",
             "payload": {"type": "function_call", "name": "shell", "call_id": f"c{i}",
                         "arguments": json.dumps({"command": ["bash", "-lc", "make test"]})}},
            {"timestamp": ts(base + 2), "type": "response_item",
             "payload": {"type": "function_call_output", "call_id": f"c{i}",
                         "output": "Exit code: 0\nOutput:\n" + "ok\n" * 50}},
            {"timestamp": ts(base + 3), "type": "response_item",
             "payload": {"type": "message", "role": "assistant",
                         "content": [{"type": "output_text", "text": reply}]}},
        ]
    with f.open("a", encoding="utf-8") as fh:
        for r in recs:
            fh.write(json.dumps(r) + "\n")
    return f


def test_forgotten_source_keeps_out_what_it_held_but_remembers_new_work(cli):
    old = datetime(2026, 3, 3, 10, tzinfo=UTC)
    _codex_file("019a2d7a-41c4-78b1-b7cc-a45d62a89cd5", "03/03",
                [("Add a --since flag to the sync command", "Added `--since` to `sync`."),
                 ("Make --since accept '3 days ago'", "`--since` now parses relative times.")], old)
    write_claude()
    assert jcli(cli, "sync")["total"]["turns_added"] == 5
    r = cli("forget", "--source", "codex", "--yes")
    assert r.returncode == 0 and b"forgot 2 memories; what source codex held up to now stays out" in r.stdout
    # the old rollout is touched (Codex rewrites it) and a new session starts after the forget
    path = next(Path(os.environ["HOME"], ".codex/sessions").rglob("*a45d62a89cd5.jsonl"))
    path.write_text(path.read_text() + "\n")
    _codex_file("019b0000-0000-7000-8000-00000000beef", "12/01",
                [("Bump httpx to 0.28 in the shop service", "Bumped httpx; 42 tests pass.")],
                datetime.fromtimestamp(time.time() + 5, tz=UTC))
    res = jcli(cli, "sync", "codex", "--full", "--yes")["total"]
    assert res["skipped_forgotten"] == 2 and res["turns_added"] == 1
    codex = [t for t in turns_of(cli) if t["agent"] == "codex"]
    assert [t["request"] for t in codex] == ["Bump httpx to 0.28 in the shop service"]
    assert len([t for t in turns_of(cli) if t["agent"] == "claude-code"]) == 3
    jcli(cli, "forget", "--undo", "--source", "codex")
    assert jcli(cli, "sync", "codex")["total"]["turns_added"] == 2


def test_an_explicit_re_add_brings_a_forgotten_note_back(cli):
    note = "Deploys: kubectl rollout restart deploy/shop after alembic upgrade head (see deploy.sh)"
    first = jcli(cli, "add", note)
    jcli(cli, "forget", first["id"])
    again = jcli(cli, "add", note)
    assert again["status"] == "added" and again["id"] == first["id"]
    assert jcli(cli, "forget", "--list")["kept_out"] == []


# --- the hook path -----------------------------------------------------------------------------


@pytest.fixture
def no_daemon(monkeypatch):
    monkeypatch.setenv("REMEM_PORT", "9")  # the hook falls back to SQLite


def hook(event: str, payload: dict) -> str:
    return runtime.run("claude-code", event, json.dumps(payload).encode())


def test_a_forgotten_live_capture_stays_out_of_the_hook_and_of_the_transcript_import(no_daemon, mem, cli):
    prompt, reply, cmd, out = CLAUDE_TURNS[SECRET_TURN]
    tr = write_claude("live1", CLAUDE_TURNS[:SECRET_TURN])
    base = {"session_id": "live1", "cwd": "/home/alice/proj/shop", "transcript_path": str(tr)}
    hook("UserPromptSubmit", {**base, "prompt": prompt, "prompt_id": "p1"})
    write_claude("live1", [CLAUDE_TURNS[SECRET_TURN]], start=SECRET_TURN)
    hook("Stop", {**base, "stop_hook_active": False})
    [live] = [t for t in mem.list(agent="claude-code") if "1Password" in t["request"]]
    assert live["source_key"].startswith("live:")
    mem.forget(ids=[live["id"]])
    # the same turn reported again by the hook, then the transcript imported by sync (another key)
    hook("UserPromptSubmit", {**base, "prompt": prompt, "prompt_id": "p1"})
    hook("Stop", {**base, "stop_hook_active": False})
    res = jcli(cli, "sync", "claude-code")["total"]
    assert res["skipped_forgotten"] == 1 and res["turns_added"] == 1
    assert not any("1Password" in t["request"] for t in mem.list(limit=100))


# --- the HTTP API --------------------------------------------------------------------------------


def test_forgotten_through_the_api_stays_out_of_capture_and_import(tmp_path):
    import remem
    from remem.server.testing import Daemon

    home = tmp_path / "remem"
    remem.open(home, env={"REMEM_EMBEDDING_MODEL": "hash"}).close()
    d = Daemon(home, env={"HOME": str(tmp_path), "REMEM_AUTO_SYNC": "0"}).start()
    try:
        with d.client() as c:
            turn = {"request": "rotate the Stripe webhook secret and update the staging env",
                    "reply": "Rotated; STRIPE_WEBHOOK_SECRET updated in staging.", "agent": "codex",
                    "session_id": "api-s1", "source_key": "codex:api-s1:1", "started_at": time.time() - 60,
                    "actions": [{"name": "shell", "input": "stripe webhooks rotate", "output": "ok " * 400}]}
            [added] = c.post("/api/v1/turns", json={"turns": [turn], "live": False}).json()["results"]
            export = c.get("/api/v1/export/jsonl").content
            gone = c.delete(f"/api/v1/memories/{added['id']}").json()
            assert gone["forgotten"] == 1 and "keep it out" in gone["kept_out"]
            again = c.post("/api/v1/turns", json={"turns": [turn], "live": False}).json()
            assert again["counts"] == {"skipped_forgotten": 1}
            live = c.post("/api/v1/turns", json={"turns": [{**turn, "source_key": ""}], "live": True}).json()
            assert live["counts"] == {"skipped_forgotten": 1}  # its live twin (same session and request)
            imp = c.post("/api/v1/import", content=export).json()["counts"]
            assert imp["skipped_forgotten"] == 1 and imp["added"] == 0
            assert c.get(f"/api/v1/memories/{added['id']}").status_code == 404
    finally:
        d.stop()


# --- MCP -----------------------------------------------------------------------------------------


def test_forgotten_through_mcp_stays_out_of_the_next_sync(cli, remem_home):
    pytest.importorskip("mcp")
    import sys

    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    write_claude()
    jcli(cli, "sync", "claude-code")
    secret = next(t for t in turns_of(cli) if "1Password" in t["request"])
    params = StdioServerParameters(command=sys.executable, args=["-m", "remem", "mcp", "--agent", "claude-code"],
                                   env=dict(os.environ))

    async def session() -> dict:
        async with Client(params, read_timeout_seconds=60) as client:
            res = await client.call_tool("memory_forget", {"id": secret["id"]})
            sc = getattr(res, "structured_content", None) or getattr(res, "structuredContent", None)
            return sc or json.loads(res.content[0].text)

    assert anyio.run(session) == {"forgotten": 1, "ids": [secret["id"]], "kept_out": True}
    append_one_more()
    res = jcli(cli, "sync", "claude-code", "--full", "--yes")["total"]
    assert res["skipped_forgotten"] == 1 and res["turns_added"] == 1
    assert not any("1Password" in t["request"] for t in turns_of(cli))

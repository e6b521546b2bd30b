"""``remem mcp --team``: the MCP tools as the user of the team server this home joined (issue 17).
The server is a real daemon (PostgreSQL when the suite runs on it); alice's laptop is a SQLite home
joined with her token. Through the official MCP client over stdio she reads her own memories and her
team's on the server, writes her own, and never reaches bob's private memory or another team's."""

from __future__ import annotations

import os
import sys

import anyio
import pytest

pytest.importorskip("mcp")
pytest.importorskip("fastapi")

from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

from remem import teamsync  # noqa: E402
from test_mcp import _data, _text  # noqa: E402
from test_team_sync import laptop_env, open_laptop, server  # noqa: E402,F401 - the team server fixture


def _is_error(result) -> bool:
    return bool(result.is_error if hasattr(result, "is_error") else result.isError)


def test_mcp_acts_as_the_team_servers_user(server, tmp_path):  # noqa: F811 - the imported fixture
    admin = server["admin"]
    bob_private = admin.post("/api/v1/memories", json={
        "text": "bob private: the walrus ledger password rotates on fridays", "owner": "user:bob"}).json()["id"]
    team_note = admin.post("/api/v1/memories", json={
        "text": "team eng: the walrus deploy runs through make release", "owner": "team:eng"}).json()["id"]
    ops_note = admin.post("/api/v1/memories", json={
        "text": "team ops: the walrus pager rota lives in the ops wiki", "owner": "team:ops"}).json()["id"]
    home = tmp_path / "alice"
    with open_laptop(home) as m:
        teamsync.join(m, server["url"], server["tokens"]["alice"])
    env = {**os.environ, "REMEM_HOME": str(home), **laptop_env(home)}
    params = StdioServerParameters(command=sys.executable, args=["-m", "remem", "mcp", "--team", "--agent", "codex"],
                                   env=env)
    seen: dict = {}

    async def session() -> None:
        async with Client(params, read_timeout_seconds=60) as client:
            added = _data(await client.call_tool("memory_add", {
                "text": "alice: the walrus cache is warmed by scripts/warm.sh", "session": "mcp-team-1"}))
            seen["added"] = added
            found = _data(await client.call_tool("memory_search", {"query": "walrus", "k": 10}))
            seen["found"] = {r["id"] for r in found["results"]}
            seen["get_team"] = _data(await client.call_tool("memory_get", {"id": team_note}))
            seen["get_bob"] = await client.call_tool("memory_get", {"id": bob_private})
            seen["get_ops"] = await client.call_tool("memory_get", {"id": ops_note})
            seen["forget_team"] = await client.call_tool("memory_forget", {"id": team_note})
            seen["path"] = await client.call_tool("memory_get", {"id": "../status"})
            tl = _data(await client.call_tool("memory_timeline", {"session_id": "mcp-team-1"}))
            seen["timeline"] = [i["request"] for i in tl["items"]]
            seen["learned"] = _data(await client.call_tool("learned_list", {}))

    anyio.run(session)
    assert seen["added"]["status"] == "added"
    assert seen["added"]["id"] in seen["found"] and team_note in seen["found"]       # her own and her team's
    assert bob_private not in seen["found"] and ops_note not in seen["found"]       # nobody else's
    assert "make release" in seen["get_team"]["request"]
    for denied in ("get_bob", "get_ops", "forget_team", "path"):
        assert _is_error(seen[denied]), denied
    assert "404" in _text(seen["get_bob"]) and "walrus" not in _text(seen["get_bob"])
    assert seen["timeline"] == ["alice: the walrus cache is warmed by scripts/warm.sh"]
    assert seen["learned"] == {"items": []}
    # on the server the memory is alice's, and the team's note is still there
    rows = admin.get("/api/v1/memories", params={"owner": "user:alice"}).json()["items"]
    assert [r["id"] for r in rows] == [seen["added"]["id"]] and rows[0]["agent"] == "codex"
    assert admin.get(f"/api/v1/memories/{team_note}", params={"owner": "team:eng"}).status_code == 200


def test_mcp_team_without_a_joined_server_says_so(tmp_path):
    import subprocess

    home = tmp_path / "lone"
    env = {**os.environ, "REMEM_HOME": str(home), **laptop_env(home)}
    r = subprocess.run([sys.executable, "-m", "remem", "mcp", "--team"], env=env, capture_output=True, text=True,
                       timeout=60, input="")
    assert r.returncode != 0 and "remem team join" in r.stderr and "Traceback" not in r.stderr, r.stderr

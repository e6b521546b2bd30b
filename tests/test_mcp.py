"""``remem mcp`` driven by the official MCP SDK client over stdio."""

from __future__ import annotations

import json
import os
import sys

import anyio
import pytest

pytest.importorskip("mcp")

from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402


def _data(result) -> dict:
    if getattr(result, "structured_content", None):
        return result.structured_content
    if getattr(result, "structuredContent", None):
        return result.structuredContent
    return json.loads(result.content[0].text)


def test_mcp_tools_over_stdio(remem_home):
    import remem

    m = remem.open(remem_home)
    other = m.add("The billing service retries webhooks five times", owner="someone-else", agent="codex").id
    m.close()
    params = StdioServerParameters(command=sys.executable, args=["-m", "remem", "mcp", "--agent", "codex"],
                                   env={**os.environ, "REMEM_HOME": str(remem_home)})

    async def session() -> None:
        async with Client(params, read_timeout_seconds=60) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            assert tools == {"memory_search", "memory_get", "memory_add", "memory_timeline", "memory_forget",
                             "learned_list", "memory_feedback",
                             "learned_delete", "learned_restore"}

            added = _data(await client.call_tool("memory_add", {
                "text": "We pin Postgres to 16.4 because 16.5 broke logical replication",
                "project": "db", "session": "mcp-s1", "tags": ["postgres"]}))
            assert added["status"] == "added"
            await client.call_tool("memory_add", {"text": "Then we upgraded pgbouncer to 1.23", "session": "mcp-s1"})

            found = _data(await client.call_tool("memory_search", {"query": "postgres replication", "k": 5}))
            assert found["results"][0]["id"] == added["id"] and found["results"][0]["why"]
            assert found["results"][0]["agent"] == "codex"

            full = _data(await client.call_tool("memory_get", {"id": added["id"]}))
            assert "16.5 broke logical replication" in full["request"] and full["tags"] == ["postgres"]

            tl = _data(await client.call_tool("memory_timeline", {"session_id": "mcp-s1"}))
            assert [i["request"][:7] for i in tl["items"]] == ["We pin ", "Then we"]

            # scoped: another owner's memory is invisible and cannot be deleted
            hidden = _data(await client.call_tool("memory_search", {"query": "billing webhooks"}))
            assert all(r["id"] != other for r in hidden["results"])
            denied = await client.call_tool("memory_get", {"id": other})
            assert denied.is_error if hasattr(denied, "is_error") else denied.isError
            denied = await client.call_tool("memory_forget", {"id": other})
            assert denied.is_error if hasattr(denied, "is_error") else denied.isError

            gone = _data(await client.call_tool("memory_forget", {"id": added["id"]}))
            assert gone["forgotten"] == 1
            again = _data(await client.call_tool("memory_search", {"query": "postgres replication"}))
            assert all(r["id"] != added["id"] for r in again["results"])

            bad = await client.call_tool("memory_search", {"query": "   "})
            assert bad.is_error if hasattr(bad, "is_error") else bad.isError

    anyio.run(session)
    m = remem.open(remem_home)
    assert m.get(other, owner="someone-else") is not None  # untouched
    m.close()


def _text(result) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


def test_tool_errors_reach_the_client_with_their_reason_and_log_one_line(remem_home, tmp_path):
    """An id outside the scope, an empty query, a memory of another owner: the client reads why
    (not "Error executing tool memory_get"), and the server's stderr gets one line each, no traceback."""
    import shlex

    import remem

    m = remem.open(remem_home)
    other = m.add("The billing service retries Stripe webhooks five times with exponential backoff "
                  "(see billing/webhooks.py: RETRY_SCHEDULE = [1, 5, 30, 120, 600])",
                  owner="someone-else", agent="codex").id
    m.close()
    errlog = tmp_path / "mcp-stderr.txt"
    cmd = f"exec {shlex.quote(sys.executable)} -m remem mcp --agent codex 2>>{shlex.quote(str(errlog))}"
    params = StdioServerParameters(command="sh", args=["-c", cmd], env={**os.environ, "REMEM_HOME": str(remem_home)})
    missing = "t_0123456789abcdef0123"

    async def session() -> None:
        async with Client(params, read_timeout_seconds=60) as client:
            for tool, args, reason in [
                ("memory_get", {"id": missing}, f"no memory {missing} in this scope"),
                ("memory_get", {"id": other}, f"no memory {other} in this scope"),
                ("memory_search", {"query": "   "}, "query is empty"),
                ("memory_forget", {"id": other}, f"no memory {other}"),
            ]:
                r = await client.call_tool(tool, args)
                assert r.is_error if hasattr(r, "is_error") else r.isError
                assert reason in _text(r), (tool, _text(r))

    anyio.run(session)
    err = errlog.read_text()
    assert "Traceback" not in err and "UnexpectedToolError" not in err, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert lines == [f"remem mcp: memory_get failed: no memory {missing} in this scope",
                     f"remem mcp: memory_get failed: no memory {other} in this scope",
                     "remem mcp: memory_search failed: query is empty",
                     lines[3]], err
    assert lines[3].startswith(f"remem mcp: memory_forget failed: no memory {other}")

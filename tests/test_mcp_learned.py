"""MCP ``learned_list`` and ``memory_feedback`` over stdio (the official SDK client)."""

from __future__ import annotations

import os
import sys

import anyio
import pytest

pytest.importorskip("mcp")

from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

from learned_data import PROJECT, seed  # noqa: E402
from test_mcp import _data, _text  # noqa: E402


def _err(result) -> bool:
    return bool(result.is_error if hasattr(result, "is_error") else result.isError)


def test_learned_list_and_feedback(remem_home):
    import remem

    with remem.open(remem_home) as m:
        seed(m)
        m.learn()
        m.learn(owner="bob")
        bob_id = m.learned(owner="bob", status="all")[0]["id"]
    params = StdioServerParameters(command=sys.executable, args=["-m", "remem", "mcp", "--agent", "claude-code"],
                                   env={**os.environ, "REMEM_HOME": str(remem_home)})
    seen: dict = {}

    async def session() -> None:
        async with Client(params, read_timeout_seconds=60) as client:
            got = _data(await client.call_tool("learned_list", {"project": PROJECT}))
            texts = [i["text"] for i in got["items"]]
            assert any("Use bun, not npm" in t for t in texts) and not any("pnpm" in t for t in texts)
            bun = next(i for i in got["items"] if "Use bun, not npm" in i["text"])
            assert bun["evidence"] and bun["kind"] == "preference" and bun["sessions"] == 2
            review = _data(await client.call_tool("learned_list", {"status": "review", "kind": "procedure"}))
            proc = review["items"][0]

            out = _data(await client.call_tool("memory_feedback", {"id": bun["id"], "verdict": "outdated"}))
            assert out["status"] == "archived"
            out = _data(await client.call_tool("memory_feedback", {"id": proc["id"], "verdict": "good"}))
            assert out["status"] == "active"
            seen.update(bun=bun["id"], proc=proc["id"])
            after = _data(await client.call_tool("learned_list", {"project": PROJECT}))
            assert bun["id"] not in {i["id"] for i in after["items"]}

            bad = await client.call_tool("memory_feedback", {"id": bun["id"], "verdict": "meh"})
            assert _err(bad) and "unknown verdict 'meh'" in _text(bad)
            denied = await client.call_tool("memory_feedback", {"id": bob_id, "verdict": "bad"})
            assert _err(denied) and "no learned memory" in _text(denied)
            bad = await client.call_tool("learned_list", {"status": "nope"})
            assert _err(bad) and "unknown status" in _text(bad)

    anyio.run(session)
    with remem.open(remem_home) as m:
        hist = m.store.learned.events(m.scope(), seen["bun"])
        assert hist[-1]["action"] == "archive" and hist[-1]["actor"] == "agent:claude-code"
        assert m.learned(owner="bob", status="all")[0]["status"] != "rejected"
        m.learn(rebuild=True)
        assert m.store.learned.get(m.scope(), seen["bun"])["status"] == "archived"
        assert m.store.learned.get(m.scope(), seen["proc"])["status"] == "active"

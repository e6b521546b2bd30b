"""The plugin templates as installed, executed without their host agents.

OpenClaw and Hermes are not installable offline here, so their installed plugin code runs against
small stand-ins of the host API: the OpenClaw extension under node with a fake ``api`` (hooks,
tools, command), the Hermes provider under Python with Hermes' MemoryProvider contract. Both talk to
the real hook process and the real remem home. The OpenCode plugin is syntax-checked here and run
for real in ``test_agents_e2e.py``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import engine_env
from remem import integrations

NODE = shutil.which("node")


@pytest.fixture
def env(tmp_path: Path, remem_home: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    return {"HOME": str(home), "PATH": os.environ.get("PATH", ""), "REMEM_HOME": str(remem_home),
            "REMEM_PORT": "9", **engine_env()}


@pytest.mark.skipif(NODE is None, reason="node is not installed")
@pytest.mark.parametrize("agent,rel", [("opencode", ".config/opencode/plugins/remem.js"),
                                       ("openclaw", ".openclaw/extensions/remem/index.js")])
def test_js_plugins_parse(agent, rel, env, mem):
    integrations.install(mem, agent, replace=True, env=env)
    path = Path(env["HOME"]) / rel
    r = subprocess.run([NODE, "--check", str(path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


OPENCLAW_DRIVER = r"""
const plugin = (await import(process.argv[2])).default
const hooks = {}, tools = {}, commands = {}
plugin.register({
  on: (name, fn) => { hooks[name] = fn },
  registerTool: (t) => { tools[t.name] = t },
  registerCommand: (c) => { commands[c.name] = c },
})
const ctx = { sessionId: "oc-1", workspaceDir: process.argv[3] }
const before = await hooks.before_prompt_build({ prompt: "how do we deploy the billing service?", messages: [] }, ctx)
hooks.agent_end({ success: true, messages: [
  { role: "user", content: [{ type: "text", text: "how do we deploy the billing service?" }] },
  { role: "assistant", content: [{ type: "toolCall", id: "c1", name: "exec", arguments: { command: "make deploy" } }] },
  { role: "toolResult", toolCallId: "c1", content: [{ type: "text", text: "deployed" }], isError: false },
  { role: "assistant", content: [{ type: "text", text: "Run make deploy." }] },
] }, ctx)
const found = await tools.remem_memory_search.execute("t1", { query: "billing deploy" })
const resume = await commands["remem-resume"].handler({ args: "billing", sessionId: "oc-1" })
console.log(JSON.stringify({ before, tools: Object.keys(tools).sort(), found: found.content[0].text, resume }))
"""


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_openclaw_extension_recalls_captures_and_answers_tools(tmp_path, env, mem):
    mem.add("billing service deploys with `make deploy` from the ops repo", agent="codex", project="/srv/ops",
            session="x")
    assert integrations.install(mem, "openclaw", env=env)["status"] == "ok"
    ext = Path(env["HOME"]) / ".openclaw/extensions/remem/index.js"
    driver = tmp_path / "driver.mjs"
    driver.write_text(OPENCLAW_DRIVER)
    r = subprocess.run([NODE, str(driver), ext.as_uri(), "/srv/billing"], capture_output=True, text=True,
                       env={**os.environ, **env}, timeout=120)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert "make deploy" in got["before"]["prependContext"]
    assert got["tools"] == ["remem_memory_add", "remem_memory_get", "remem_memory_search"]
    assert "make deploy" in got["found"]
    assert got["resume"]["text"].startswith("<remem_resume>")
    [t] = [t for t in mem.list(agent="openclaw") if t["reply"]]
    assert (t["request"], t["reply"], t["project"]) == ("how do we deploy the billing service?", "Run make deploy.",
                                                        "/srv/billing")
    assert [(a["name"], a["output"]) for a in t["actions"]] == [("exec", "deployed")]


def _load_hermes(path: Path):
    spec = importlib.util.spec_from_file_location("remem_hermes_provider_under_test", path)
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


def test_hermes_provider_prefetch_sync_tools_and_resume(tmp_path, env, mem, monkeypatch):
    mem.add("the nightly backup runs restic to the NAS", agent="codex", project="/srv/backup", session="b1")
    assert integrations.install(mem, "hermes", env=env)["status"] == "ok"
    hermes = Path(env["HOME"]) / ".hermes"
    assert "provider: remem" in (hermes / "config.yaml").read_text()
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    mod = _load_hermes(hermes / "plugins/remem/__init__.py")

    class Ctx:
        provider = None

        def register_memory_provider(self, p):
            self.provider = p

    ctx = Ctx()
    mod.register(ctx)
    p = ctx.provider
    assert p.name == "remem" and p.is_available()
    p.initialize("h-sess", hermes_home=str(hermes), platform="cli", agent_workspace="/srv/backup")
    assert "remem_memory_search" in p.system_prompt_block()
    text = p.prefetch("how does the nightly backup work?", session_id="h-sess")
    assert "restic" in text
    assert p.prefetch("how does the nightly backup work?", session_id="h-sess") == text   # cached per turn
    p.sync_turn("how does the nightly backup work?", "It runs restic.", session_id="h-sess", messages=[
        {"role": "user", "content": "how does the nightly backup work?"},
        {"role": "assistant", "tool_calls": [{"id": "k1", "function": {"name": "terminal", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "k1", "content": "restic snapshots"},
        {"role": "assistant", "content": "It runs restic."}])
    p.shutdown()
    [t] = [t for t in mem.list(agent="hermes") if t["reply"]]
    assert (t["reply"], t["project"], t["actions"][0]["name"]) == ("It runs restic.", "/srv/backup", "terminal")
    found = json.loads(p.handle_tool_call("remem_memory_search", {"query": "restic backup"}))
    assert any("restic" in f["text"] for f in found)
    added = json.loads(p.handle_tool_call("remem_memory_add", {"text": "backups keep 30 days"}))
    assert added["status"] == "added"
    p.on_memory_write("add", "user", "prefers short answers")
    assert any("prefers short answers" in t["request"] for t in mem.list(agent="hermes"))
    res = _load_hermes(hermes / "plugins/remem_resume/__init__.py")
    assert res.resume("nightly backup").startswith("<remem_resume>")
    out = p.prefetch("1", session_id="h-sess")
    assert out.startswith("<remem_resume_episode")

"""The real agent CLIs, end to end, with remem's installed hooks and plugins.

Each test runs Claude Code, Codex CLI, OpenCode or Gemini CLI headless inside ``unshare -n``
(a network namespace with only loopback) against the project's fake model server (``tests/fake_model.py``),
in a throw-away HOME where ``remem hooks install <agent>`` wired remem in. It proves both halves:

- recall reached the model: the home holds a topic's worth of earlier work (several related memories
  from four agents in other projects, with tool output, among unrelated ones), and the memory that answers
  the prompt, with others of the topic, shows up in the fake server's request log of a brand-new session;
- capture worked: the new turn is searchable in remem afterwards, labelled with the agent's
  canonical id and the project (the working directory), with the model's reply.

The agent binaries come from ``scripts/install-agents.sh`` (``.agents-bin/bin``), ``$CLAUDE_BIN`` …
or PATH; a test is skipped, saying so, when its binary is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import remem
from conftest import REPO, engine_env
from remem import integrations
from remem.model import ToolCall

FAKE_SERVER = Path(__file__).resolve().parent / "fake_model.py"
AGENTS_BIN = REPO / ".agents-bin"
MARKER = "ZQXRECALLMARKER"            # in the memory that answers PROMPT
SEED = f"Zebrafish credentials are rotated with `vault kv rotate zebrafish` ({MARKER}); never by hand."
DAY = 86_400.0
VAULT_403 = """Error writing data to sys/rotate/zebrafish: Error making API request.

URL: PUT https://vault.internal:8200/v1/zebrafish/rotate
Code: 403. Errors:

* 1 error occurred:
\t* permission denied
""" + "\n".join(f"2026-03-0{d} 10:{m:02d}:07.{m:03d} [WARN]  core: failed to rotate: path=zebrafish/ role=app "
                 f"request_id=7f3c{m:04x}-zebrafish policy=default" for d in range(1, 4) for m in range(0, 60, 3))
# several memories about one topic (the zebrafish credentials), by four agents, in other projects; they
# share the topic's words, which is what a word gate that weighs words by the store's IDF gets wrong
RELATED = [  # (marker, agent, project, request, reply, tool calls, days ago)
    ("ZQXRELATEDPOLICY", "claude-code", "/home/dev/infra",
     "vault kv rotate zebrafish fails with 403 permission denied, why?",
     "The CI token lacked the rotate capability. Added `path \"zebrafish/rotate\" { capabilities = "
     "[\"update\"] }` to the zebrafish-rotate policy and re-ran the rotation (ZQXRELATEDPOLICY).",
     [ToolCall("Bash", "vault kv rotate zebrafish", VAULT_403, is_error=True),
      ToolCall("Bash", "vault policy read zebrafish-rotate", 'path "zebrafish/*" {\n  capabilities = ["read"]\n}')],
     9),
    ("ZQXRELATEDWORKERS", "opencode", "/home/dev/zebrafish-api",
     "After rotating the zebrafish credentials the workers still use the old password",
     "They read the secret once at start-up. Restart them after every rotation: `kubectl rollout restart "
     "deploy/zebrafish-worker -n prod` (ZQXRELATEDWORKERS).",
     [ToolCall("bash", "kubectl logs deploy/zebrafish-worker -n prod --tail=20",
               "psycopg.OperationalError: connection failed: FATAL:  password authentication failed for user "
               "\"zebrafish_app\"\n" * 12)], 6),
    ("ZQXRELATEDWHERE", "gemini", "/home/dev/zebrafish-api",
     "Where are the zebrafish database credentials stored?",
     "In Vault under secret/zebrafish/db; the sidecar renders them to /run/secrets/zebrafish.env, which "
     "the app reads at start-up (ZQXRELATEDWHERE).", [], 4),
    ("ZQXRELATEDSCHEDULE", "codex", "/home/dev/ops",
     "Schedule the zebrafish credential rotation every 30 days",
     "Added a CronJob `zebrafish-rotate` (0 3 1 * *) that runs the vault rotation and then restarts the "
     "workers; alerts go to #ops-zebrafish (ZQXRELATEDSCHEDULE).",
     [ToolCall("exec_command", "kubectl apply -f k8s/cron/zebrafish-rotate.yaml",
               "cronjob.batch/zebrafish-rotate created")], 2),
]
UNRELATED = [  # other work in the same home
    ("claude-code", "/home/dev/shop", "The checkout page times out with more than 50 items in the cart",
     "cart/totals.py ran one SQL query per line item; batched them into one query."),
    ("codex", "/home/dev/shop", "Redis memory keeps growing in production",
     "Session keys had no TTL; set a 7-day expiry and maxmemory-policy allkeys-lru."),
    ("gemini", "/home/dev/site", "把首页的图片改成懒加载", "给 <img> 加了 loading=\"lazy\"，首屏时间从 2.1 秒降到 1.3 秒。"),
    ("opencode", "/home/dev/site", "The Docker image is 1.8 GB, make it smaller",
     "Multi-stage build on python:3.11-slim without build tools: 240 MB now."),
]
RELATED_MARKERS = [m for m, *_ in RELATED]
TOOL_OUT = "zebrafish-tool-ok"
# CALL_TOOL[...] makes the fake model call the agent's shell tool once, then answer FAKE_DONE
PROMPT = f"How do we rotate the zebrafish credentials? CALL_TOOL[echo {TOOL_OUT}]"

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]


def agent_bin(name: str, env_var: str) -> str | None:
    cand = os.environ.get(env_var) or str(AGENTS_BIN / "bin" / name)
    if Path(cand).exists():
        return cand
    return shutil.which(name)


def _netns_ok() -> bool:
    try:
        return subprocess.run(["unshare", "-n", "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


NETNS = _netns_ok()


class Run:
    """One throw-away machine: HOME, project dir, remem home, fake model server config."""

    def __init__(self, base: Path, agent: str, port: int) -> None:
        self.base = base
        self.agent = agent
        self.port = port
        self.home = base / "home"
        self.project = base / "project"
        self.remem_home = base / "remem"
        self.requests = base / "requests.jsonl"
        for d in (self.home, self.project):
            d.mkdir(parents=True, exist_ok=True)
        self.env = {"HOME": str(self.home), "PATH": os.environ.get("PATH", ""), "REMEM_HOME": str(self.remem_home),
                    "REMEM_EMBEDDING_MODEL": "hash", "LANG": "C.UTF-8",
                    "XDG_CONFIG_HOME": str(self.home / ".config"), "XDG_DATA_HOME": str(self.home / ".local/share"),
                    "XDG_CACHE_HOME": str(self.home / ".cache"), "XDG_STATE_HOME": str(self.home / ".local/state"),
                    **engine_env()}

    def seed(self, related: bool = True) -> None:
        """The answering memory, and (``related``) the topic's other memories and unrelated work."""
        mem = remem.open(self.remem_home)
        now = time.time()
        try:
            # with the topic around it, the answer is an agent's turn like the others (a session of its own);
            # alone it is a note (`remem add`), which /remem-resume lists as one episode
            self.seed_ids = {mem.add(SEED, agent="codex", project="/home/dev/other-app", ts=now - 12 * DAY,
                                     session="seed-answer" if related else "").id}
            if related:
                for i, (_m, agent, project, request, reply, actions, days) in enumerate(RELATED):
                    self.seed_ids.add(mem.add(request, reply=reply, actions=actions, agent=agent, project=project,
                                              session=f"seed-related-{i}", ts=now - days * DAY).id)
                for i, (agent, project, request, reply) in enumerate(UNRELATED):
                    self.seed_ids.add(mem.add(request, reply=reply, agent=agent, project=project,
                                              session=f"seed-other-{i}", ts=now - (20 + i) * DAY).id)
        finally:
            mem.close()

    def install(self) -> dict:
        mem = remem.open(self.remem_home)
        try:
            res = integrations.install(mem, self.agent, env=self.env)
        finally:
            mem.close()
        assert res["status"] == "ok", res
        return res

    def run(self, command: str, extra_env: dict[str, str], timeout: float = 150) -> subprocess.CompletedProcess[str]:
        """Start the fake server and run ``command`` (bash) in the project dir, inside a netns."""
        script = self.base / "run.sh"
        exports = "\n".join(f"export {k}={_q(v)}" for k, v in {**self.env, **extra_env}.items())
        script.write_text(textwrap.dedent(f"""\
            set -u
            {'ip link set lo up' if NETNS else ''}
            {exports}
            {_q(sys.executable)} {_q(str(FAKE_SERVER))} --port {self.port} --log {_q(str(self.requests))} \\
                --markers {",".join([MARKER, *RELATED_MARKERS])} > {_q(str(self.base / 'server.log'))} 2>&1 &
            SPID=$!
            for i in $(seq 300); do
              {_q(sys.executable)} -c "import socket; socket.create_connection(('127.0.0.1', {self.port}), 0.2)" \\
                2>/dev/null && break
              sleep 0.1
            done
            cd {_q(str(self.project))}
            timeout 120 {command} </dev/null > {_q(str(self.base / 'agent.stdout'))} 2> {_q(str(self.base / 'agent.stderr'))}
            RC=$?
            sleep 0.3
            kill $SPID
            exit $RC
            """))
        argv = ["unshare", "-n", "bash", str(script)] if NETNS else ["bash", str(script)]
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)

    def model_requests(self) -> list[dict]:
        if not self.requests.exists():
            return []
        return [json.loads(line) for line in self.requests.read_text().splitlines() if line.strip()]

    def diagnostics(self) -> str:
        parts = []
        for name in ("agent.stdout", "agent.stderr", "server.log"):
            p = self.base / name
            if p.exists():
                parts.append(f"--- {name}\n{p.read_text(errors='replace')[-3000:]}")
        log = self.remem_home / "logs" / "hooks.log"
        if log.exists():
            parts.append(f"--- hooks.log\n{log.read_text(errors='replace')[-4000:]}")
        return "\n".join(parts)

    def check(self) -> None:
        """Recall reached the model; the new turn is stored with the right agent and project."""
        bodies = [json.dumps(r.get("body")) for r in self.model_requests()]
        assert bodies, "the agent never called the fake model\n" + self.diagnostics()
        assert any(MARKER in b for b in bodies), "recalled memory not in any model request\n" + self.diagnostics()
        # a topic's memories all match the prompt: a packet holds more than one of them (the answer above
        # and at least two of the four others); a gate that weighs the topic's shared words ~0 keeps one
        related = sorted({m for m in RELATED_MARKERS for b in bodies if m in b})
        assert len(related) >= 2, (f"only {related or 'none'} of the topic's other memories {RELATED_MARKERS} "
                                   "reached the model\n" + self.diagnostics())
        mem = remem.open(self.remem_home)
        try:
            deadline = time.monotonic() + 15  # a capture the agent's exit left running may land a moment later
            while True:
                rows = [r for r in mem.list(agent=self.agent, project=str(self.project), limit=20)
                        if "zebrafish" in r["request"].lower()]
                if (rows and "FAKE_DONE" in rows[0]["reply"]) or time.monotonic() > deadline:
                    break
                time.sleep(0.5)
            assert rows, f"no {self.agent} turn captured\n" + self.diagnostics()
            turn = rows[0]
            assert turn["project"] == str(self.project)
            # OpenCode's `run` sends the message wrapped in literal quotes; remem stores what the agent
            # stored, so a later import of the same session meets this live capture
            assert turn["request"].strip().strip('"') == PROMPT
            assert "FAKE_DONE" in turn["reply"], turn          # the final answer, after the tool call
            assert turn["status"] == "succeeded", turn
            tools = turn["actions"]
            assert tools and any(TOOL_OUT in (a["output"] or "") for a in tools), tools
            hits = mem.search("zebrafish credentials rotate", agent=self.agent, k=5)
            assert any(h["id"] == turn["id"] for h in hits), hits
            self.check_history_sync_does_not_duplicate(mem, turn)
        finally:
            mem.close()

    def check_history_sync_does_not_duplicate(self, mem: remem.Remem, turn: dict) -> None:
        """Importing the agent's own history of this session afterwards meets the live capture."""
        try:
            from remem.sources.sync import run_sync
        except ImportError:       # pragma: no cover - the importers are another part of remem
            return
        run_sync(mem, [self.agent], env=self.env)
        same = [r for r in mem.list(agent=self.agent, limit=50)
                if "zebrafish" in r["request"].lower() and r["id"] not in self.seed_ids]
        if len(same) > 1 and self.agent == "gemini" and any("<hook_context>" in r["request"] for r in same):
            pytest.xfail("recall and capture work; but sources/gemini.py imports the <hook_context> part Gemini "
                         "adds to the user record as part of the request, so the import misses the live twin")
        assert len(same) == 1, [(r["id"], r["source_name"], r["request"][:80]) for r in same]
        assert same[0]["id"] == turn["id"]


def _q(s: str) -> str:
    import shlex

    return shlex.quote(s)


@pytest.fixture
def run_for(tmp_path: Path):
    def make(agent: str, port: int, related: bool = True) -> Run:
        r = Run(tmp_path / agent, agent, port)
        r.seed(related)
        return r
    return make


def test_claude_code_end_to_end(run_for):
    exe = agent_bin("claude", "CLAUDE_BIN")
    if not exe:
        pytest.skip("Claude Code not installed (run scripts/install-agents.sh)")
    r = run_for("claude-code", 18080)
    r.install()
    res = r.run(f"{_q(exe)} -p {_q(PROMPT)} --output-format json --allowedTools Bash",
                {"ANTHROPIC_BASE_URL": f"http://127.0.0.1:{r.port}", "ANTHROPIC_API_KEY": "sk-ant-dummy",
                 "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1",
                 "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_BUG_COMMAND": "1"})
    assert res.returncode == 0, r.diagnostics()
    r.check()


def test_claude_code_remem_resume(run_for):
    """/remem-resume through Claude's own command: the list reaches the model, then "1" brings the episode."""
    exe = agent_bin("claude", "CLAUDE_BIN")
    if not exe:
        pytest.skip("Claude Code not installed (run scripts/install-agents.sh)")
    r = run_for("claude-code", 18080, related=False)       # one episode: "1" picks it
    r.install()
    env = {"ANTHROPIC_BASE_URL": f"http://127.0.0.1:{r.port}", "ANTHROPIC_API_KEY": "sk-ant-dummy",
           "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
    assert r.run(f"{_q(exe)} -p {_q('/remem-resume zebrafish')}", env).returncode == 0, r.diagnostics()
    bodies = [json.dumps(x.get("body")) for x in r.model_requests()]
    assert any("<remem_resume>" in b and "1. codex" in b for b in bodies), r.diagnostics()
    first = len(bodies)
    # the first run's SessionEnd has fired; the list must outlive it for the pick window
    assert r.run(f"{_q(exe)} -p 1 --continue", env).returncode == 0, r.diagnostics()
    bodies = [json.dumps(x.get("body")) for x in r.model_requests()][first:]
    assert any("<remem_resume_episode agent=" in b and "vault kv rotate zebrafish" in b for b in bodies), \
        r.diagnostics()
    mem = remem.open(r.remem_home)
    try:
        assert [t["request"] for t in mem.list(agent="claude-code")] == []   # neither prompt is a memory
    finally:
        mem.close()


def test_codex_end_to_end(run_for):
    exe = agent_bin("codex", "CODEX_BIN")
    if not exe:
        pytest.skip("Codex CLI not installed (run scripts/install-agents.sh)")
    r = run_for("codex", 18081)
    codex_home = r.home / ".codex"
    codex_home.mkdir(parents=True)
    (codex_home / "config.toml").write_text(textwrap.dedent(f"""\
        model = "gpt-5.1-codex"
        model_provider = "fake"
        approval_policy = "never"
        sandbox_mode = "danger-full-access"
        check_for_update_on_startup = false

        [analytics]
        enabled = false

        [model_providers.fake]
        name = "fake"
        base_url = "http://127.0.0.1:{r.port}/v1"
        env_key = "FAKE_OPENAI_API_KEY"
        wire_api = "responses"

        [projects."{r.project}"]
        trust_level = "trusted"
        """))
    r.env["CODEX_HOME"] = str(codex_home)
    res_install = r.install()
    assert any("trust" in n for n in res_install["notes"])        # the user is told about hook trust
    assert "hooks = true" in (codex_home / "config.toml").read_text()
    # hook trust is the user's review in Codex's TUI; headless runs skip it explicitly
    res = r.run(f"{_q(exe)} exec --skip-git-repo-check --dangerously-bypass-hook-trust {_q(PROMPT)}",
                {"FAKE_OPENAI_API_KEY": "dummy", "CODEX_HOME": str(codex_home)})
    assert res.returncode == 0, r.diagnostics()
    r.check()


def test_gemini_end_to_end(run_for):
    exe = agent_bin("gemini", "GEMINI_BIN")
    if not exe:
        pytest.skip("Gemini CLI not installed (run scripts/install-agents.sh)")
    r = run_for("gemini", 18083)
    gdir = r.home / ".gemini"
    gdir.mkdir(parents=True)
    (gdir / "settings.json").write_text(json.dumps({
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True, "enableAutoUpdate": False,
                    "enableAutoUpdateNotification": False}}))
    r.install()
    settings = json.loads((gdir / "settings.json").read_text())
    assert settings["security"]["auth"]["selectedType"] == "gemini-api-key"     # foreign settings kept
    assert settings["hooks"]["BeforeAgent"][0]["hooks"][0]["timeout"] == 60_000  # milliseconds
    res = r.run(f"{_q(exe)} -p {_q(PROMPT)} --output-format json --approval-mode yolo",
                {"GOOGLE_GEMINI_BASE_URL": f"http://127.0.0.1:{r.port}", "GEMINI_API_KEY": "dummy",
                 "GEMINI_CLI_NO_RELAUNCH": "true", "GEMINI_CLI_TRUST_WORKSPACE": "true"})
    assert res.returncode == 0, r.diagnostics()
    r.check()


def test_opencode_end_to_end(run_for):
    exe = agent_bin("opencode", "OPENCODE_BIN")
    if not exe:
        pytest.skip("OpenCode not installed (run scripts/install-agents.sh)")
    deps = Path(os.environ.get("OPENCODE_PLUGIN_DEPS") or AGENTS_BIN / "opencode-deps")
    if not (deps / "node_modules" / "@opencode-ai" / "plugin").is_dir():
        pytest.skip(f"OpenCode's plugin package is not installed in {deps} (run scripts/install-agents.sh)")
    r = run_for("opencode", 18082)
    cfg = r.home / ".config" / "opencode"
    cfg.mkdir(parents=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copy(deps / name, cfg / name)
    (cfg / "node_modules").symlink_to(deps / "node_modules")
    (cfg / "opencode.json").write_text(json.dumps({
        "autoupdate": False, "share": "disabled", "model": "fake/fake-model", "small_model": "fake/fake-model",
        "provider": {"fake": {"npm": "@ai-sdk/openai-compatible", "name": "Fake loopback",
                              "options": {"baseURL": f"http://127.0.0.1:{r.port}/v1", "apiKey": "dummy"},
                              "models": {"fake-model": {"name": "Fake Model", "tool_call": True,
                                                        "limit": {"context": 128000, "output": 4096}}}}},
        "permission": {"bash": "allow", "edit": "allow"}}))
    r.install()
    assert (cfg / "plugins" / "remem.js").exists()
    res = r.run(f"{_q(exe)} run --print-logs {_q(PROMPT)}",
                {"OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_MODELS_FETCH": "1",
                 "OPENCODE_DISABLE_SHARE": "1", "OPENCODE_DISABLE_LSP_DOWNLOAD": "1"})
    assert res.returncode == 0, r.diagnostics()
    r.check()

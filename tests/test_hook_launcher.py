"""The launchers ``$REMEM_HOME/bin/remem-hook`` and ``$REMEM_HOME/bin/remem``: every agent's hook config
runs the first, skills and slash commands the second, so a moved interpreter (a re-created virtualenv, a
Python upgrade, a pipx reinstall) needs only the launchers rewritten — by ``remem hooks install`` or
``remem up`` — and the agents' configs stay as they were."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import engine_env, run_cli
from remem import integrations

PYTHON = sys.executable
HOOK_AGENTS = ["claude-code", "codex", "gemini", "cursor", "opencode", "openclaw", "hermes"]


@pytest.fixture
def env(tmp_path):
    home = Path(os.environ["HOME"])
    for d in (".claude", ".codex", ".gemini", ".cursor", ".openclaw", ".hermes", ".config/opencode"):
        (home / d).mkdir(parents=True, exist_ok=True)
    return {"HOME": str(home), "PATH": os.environ.get("PATH", ""), "REMEM_HOME": os.environ["REMEM_HOME"],
            **engine_env()}


def fake_interpreter(tmp_path: Path, name: str) -> Path:
    """Another path to this interpreter, as a moved or re-created virtualenv would give."""
    exe = tmp_path / name / "bin" / "python"
    exe.parent.mkdir(parents=True)
    exe.symlink_to(sys.executable)
    return exe


def agent_files(home: Path) -> dict[str, bytes]:
    return {str(p.relative_to(home)): p.read_bytes() for p in sorted(home.rglob("*"))
            if p.is_file() and ".remem-bak-" not in p.name}


def test_every_installer_points_hooks_at_the_launcher(env, mem, remem_home, tmp_path, monkeypatch):
    python = fake_interpreter(tmp_path, "venv-a")
    monkeypatch.setattr(sys, "executable", str(python))
    launcher = remem_home / "bin" / "remem-hook"
    home = Path(env["HOME"])
    for agent in HOOK_AGENTS:
        res = integrations.install(mem, agent, env=env)
        assert res["status"] in ("ok", "needs_confirmation"), res
        written = [Path(p) for p in res["changed"] if Path(p).is_relative_to(home)]
        assert written, res
        texts = "\n".join(p.read_text(errors="replace") for p in written)
        assert str(launcher) in texts, (agent, written)           # the hook config runs the launcher ...
        assert str(python) not in texts and "remem/hook.py" not in texts, agent    # ... never the interpreter
    for exe in (launcher, remem_home / "bin" / "remem"):
        assert exe.stat().st_mode & 0o111
        assert str(python) in exe.read_text()
    skill = (home / ".claude/commands/remem-resume.md").read_text()
    assert f"{remem_home / 'bin' / 'remem'} " in skill
    cmd = json.loads((home / ".claude/settings.json").read_text())["hooks"]["Stop"][0]["hooks"][0]["command"]
    assert cmd == f"{launcher} claude-code Stop"


def test_moving_the_interpreter_rewrites_only_the_launcher(env, mem, remem_home, tmp_path, monkeypatch):
    home = Path(env["HOME"])
    launcher = remem_home / "bin" / "remem-hook"
    old = fake_interpreter(tmp_path, "venv-old")
    monkeypatch.setattr(sys, "executable", str(old))
    for agent in HOOK_AGENTS:
        integrations.install(mem, agent, env=env, replace=True)
    configs = agent_files(home)

    new = fake_interpreter(tmp_path, "venv-new")                    # the venv moved
    old.unlink()
    monkeypatch.setattr(sys, "executable", str(new))
    changed = [p for agent in HOOK_AGENTS for p in integrations.install(mem, agent, env=env, replace=True)["changed"]]
    assert changed == [str(launcher), str(remem_home / "bin" / "remem")]   # once, and nothing else
    assert agent_files(home) == configs                             # no agent config was touched
    assert str(new) in launcher.read_text() and str(old) not in launcher.read_text()

    # `remem up` does the same for the interpreter it runs on (here: the test's own)
    monkeypatch.setattr(sys, "executable", PYTHON)
    assert integrations.refresh_launcher(mem) is True
    assert integrations.refresh_launcher(mem) is False              # already current
    monkeypatch.setattr(sys, "executable", str(new))
    assert integrations.refresh_launcher(mem) is True
    monkeypatch.setattr(sys, "executable", PYTHON)
    r = run_cli("up", "--no-import", "--no-daemon", "--json", env={"HOME": env["HOME"]})
    assert r.returncode == 0, r.stderr.decode()
    assert json.loads(r.stdout)["hook_launcher_rewritten"] is True
    assert f"exec {sys.executable} " in launcher.read_text()
    assert agent_files(home) == configs


def test_up_writes_no_launcher_where_hooks_were_never_installed(remem_home):
    r = run_cli("up", "--no-import", "--no-daemon", "--json")
    assert r.returncode == 0, r.stderr.decode()
    assert json.loads(r.stdout)["hook_launcher_rewritten"] is False
    assert not (remem_home / "bin" / "remem-hook").exists()


def test_the_command_launcher_runs_the_cli_on_the_pinned_home(env, mem, remem_home, tmp_path):
    mem.add("Rotate the zebrafish credentials with `vault kv rotate zebrafish`.", agent="codex")
    integrations.install(mem, "claude-code", env=env)
    other = dict(os.environ, REMEM_HOME=str(tmp_path / "elsewhere"))     # the skill's shell may differ
    r = subprocess.run([str(remem_home / "bin" / "remem"), "search", "zebrafish", "--json"], capture_output=True,
                       timeout=60, env=other)
    assert r.returncode == 0, r.stderr.decode()
    assert "vault kv rotate zebrafish" in r.stdout.decode()


def test_the_launcher_runs_the_hook_as_the_agent_would(env, mem, remem_home):
    """Claude Code's configured command, run by a shell with a real UserPromptSubmit payload."""
    mem.add("The staging kubeconfig lives in 1Password under 'k8s staging'; copy it to ~/.kube/staging.",
            agent="codex", project="/home/dev/infra", session="s1", ts=time.time() - 86_400)
    integrations.install(mem, "claude-code", env=env)
    settings = json.loads((Path(env["HOME"]) / ".claude/settings.json").read_text())
    cmd = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    payload = {"session_id": "9d1c0b7e-aaaa-4bbb-8ccc-000000000001", "hook_event_name": "UserPromptSubmit",
               "transcript_path": str(Path(env["HOME"]) / ".claude/projects/-p/9d1c.jsonl"), "cwd": "/home/dev/app",
               "permission_mode": "default", "prompt": "where is the staging kubeconfig?"}
    r = subprocess.run(["sh", "-c", cmd], input=json.dumps(payload).encode(), capture_output=True, timeout=60,
                       env={**os.environ, "REMEM_PORT": "9"})        # no daemon: the SQLite path
    assert r.returncode == 0, r.stderr.decode()
    assert "1Password" in r.stdout.decode(), (r.stdout, r.stderr)


def test_a_launcher_whose_interpreter_is_gone_stays_out_of_the_way(env, mem, remem_home, tmp_path, monkeypatch):
    gone = fake_interpreter(tmp_path, "venv-gone")
    monkeypatch.setattr(sys, "executable", str(gone))
    integrations.install(mem, "claude-code", env=env)
    gone.unlink()
    t0 = time.monotonic()
    r = subprocess.run([str(remem_home / "bin" / "remem-hook"), "claude-code", "UserPromptSubmit"],
                       input=b'{"prompt": "hi"}', capture_output=True, timeout=30,
                       env={"PATH": "/usr/bin:/bin", "HOME": env["HOME"]})    # no remem on PATH either
    assert r.returncode == 0 and r.stdout == b""                     # never blocks or breaks the agent
    assert b"remem hooks install" in r.stderr and str(gone).encode() in r.stderr   # says how to repair it
    assert time.monotonic() - t0 < 5

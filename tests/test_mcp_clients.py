"""Real agent CLIs connect to ``remem mcp`` with the registration docs/mcp.md gives (offline, temp HOME)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

BIN = Path(__file__).resolve().parents[1] / ".agents-bin" / "bin"


def _env(home: Path) -> dict[str, str]:
    venv_bin = str(Path(sys.executable).parent)
    return {**os.environ, "HOME": str(home), "REMEM_HOME": str(home / ".remem"), "REMEM_EMBEDDING_MODEL": "hash",
            "PATH": os.pathsep.join([venv_bin, str(BIN), os.environ.get("PATH", "")])}


def _claude(home: Path) -> str:
    env = _env(home)
    add = subprocess.run([str(BIN / "claude"), "mcp", "add", "-s", "user", "remem", "--", "remem", "mcp",
                          "--agent", "claude-code"], env=env, capture_output=True, text=True, timeout=60)
    assert add.returncode == 0, add.stderr
    return subprocess.run([str(BIN / "claude"), "mcp", "list"], env=env, capture_output=True, text=True,
                          timeout=90).stdout


def _opencode(home: Path) -> str:
    cfg = home / ".config" / "opencode"
    cfg.mkdir(parents=True)
    (cfg / "opencode.json").write_text(json.dumps({
        "$schema": "https://opencode.ai/config.json",
        "mcp": {"remem": {"type": "local", "command": ["remem", "mcp", "--agent", "opencode"], "enabled": True}}}))
    r = subprocess.run([str(BIN / "opencode"), "mcp", "list"], env=_env(home), capture_output=True, text=True,
                       timeout=90)
    return r.stdout + r.stderr


@pytest.mark.slow
def test_claude_code_and_opencode_connect(tmp_path):
    jobs = {name: fn for name, fn in (("claude", _claude), ("opencode", _opencode)) if (BIN / name).exists()}
    if not jobs or shutil.which("remem", path=str(Path(sys.executable).parent)) is None:
        pytest.skip("agent CLIs not installed (scripts/install-agents.sh)")
    homes = {}
    for name in jobs:
        homes[name] = tmp_path / name
        homes[name].mkdir()
    with ThreadPoolExecutor(len(jobs)) as pool:
        outs = {name: pool.submit(fn, homes[name]) for name, fn in jobs.items()}
        results = {name: f.result() for name, f in outs.items()}
    if "claude" in results:
        assert "remem" in results["claude"] and "Connected" in results["claude"], results["claude"]
    if "opencode" in results:
        assert "remem" in results["opencode"] and "connected" in results["opencode"], results["opencode"]

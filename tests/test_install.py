"""Installers on temporary homes that already hold foreign hooks, settings and files.

For every agent: install, install again (nothing changes), remove, and compare with what was there
before — foreign entries and files untouched, remem's own entries gone, a backup kept for every file
changed, no token written anywhere.
"""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest

import remem
from remem import integrations
from remem.integrations.installers.common import is_remem_command

FOREIGN_HOOK = "/usr/local/bin/other-tool --flag"


def snapshot(root: Path) -> dict[str, object]:
    """Every file under ``root`` (backups excluded): parsed JSON / TOML, else text."""
    out: dict[str, object] = {}
    for p in sorted(root.rglob("*")):
        if not p.is_file() or ".remem-bak-" in p.name:
            continue
        text = p.read_text(encoding="utf-8", errors="replace")
        if p.suffix == ".json":
            out[str(p.relative_to(root))] = json.loads(text) if text.strip() else None
        else:
            out[str(p.relative_to(root))] = text
    return out


def write(path: Path, content: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content if isinstance(content, str) else json.dumps(content, indent=4))


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    return {"HOME": str(home), "PATH": "/usr/bin:/bin", "REMEM_HOME": os.environ["REMEM_HOME"]}


def claude_foreign(home: Path) -> None:
    write(home / ".claude/settings.json", {
        "model": "opus", "permissions": {"allow": ["Bash(ls:*)"]},
        "hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": FOREIGN_HOOK}]}],
                  "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": FOREIGN_HOOK}]}],
                  "Stop": [{"hooks": [{"type": "command", "command": FOREIGN_HOOK}]}]}})
    write(home / ".claude/CLAUDE.md", "# My rules\n\nAlways write tests.\n")
    write(home / ".claude/commands/other.md", "other command\n")
    write(home / ".claude/skills/other/SKILL.md", "---\nname: other\n---\n")


def codex_foreign(home: Path) -> None:
    write(home / ".codex/hooks.json", {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": FOREIGN_HOOK}]}]}})
    write(home / ".codex/config.toml", 'model = "o3"\n\n[features]\nweb_search = true # mine\n\n'
                                       '[projects."/x"]\ntrust_level = "trusted"\n')
    write(home / ".codex/AGENTS.md", "Be terse.\n")


def cursor_foreign(home: Path) -> None:
    write(home / ".cursor/hooks.json", {"version": 1, "hooks": {"stop": [{"command": FOREIGN_HOOK}],
                                                                "afterFileEdit": [{"command": FOREIGN_HOOK}]}})


def opencode_foreign(home: Path) -> None:
    write(home / ".config/opencode/opencode.json", {"model": "x/y"})
    write(home / ".config/opencode/plugins/mine.js", "export const Mine = async () => ({})\n")
    write(home / ".config/opencode/AGENTS.md", "House rules.\n")


def gemini_foreign(home: Path) -> None:
    write(home / ".gemini/settings.json", {"security": {"auth": {"selectedType": "gemini-api-key"}},
                                           "hooks": {"BeforeTool": [{"matcher": "*", "hooks": [
                                               {"type": "command", "command": FOREIGN_HOOK, "timeout": 5000}]}]}})


def openclaw_foreign(home: Path) -> None:
    write(home / ".openclaw/openclaw.json", {"agents": {"defaults": {"model": "m"}},
                                            "plugins": {"entries": {"voice-call": {"enabled": True}}}})


def hermes_foreign(home: Path) -> None:
    write(home / ".hermes/config.yaml", "# my hermes\nmodel: hermes-4\nmemory:\n  memory_enabled: true  # keep\n"
                                        "display:\n  theme: dark\n")


def skill_foreign(rel: str):
    def make(home: Path) -> None:
        write(home / rel / "skills/other/SKILL.md", "mine\n")
    return make


FOREIGN = {"claude-code": claude_foreign, "codex": codex_foreign, "cursor": cursor_foreign,
           "opencode": opencode_foreign, "gemini": gemini_foreign, "openclaw": openclaw_foreign,
           "hermes": hermes_foreign, "workbuddy": skill_foreign(".workbuddy"), "pi": skill_foreign(".pi/agent"),
           "qwenwork": skill_foreign(".qwenworkcn")}


@pytest.mark.parametrize("agent", list(FOREIGN))
def test_install_twice_remove_leaves_foreign_config_as_it_was(agent, env, mem, remem_home):
    home = Path(env["HOME"])
    FOREIGN[agent](home)
    before = snapshot(home)

    first = integrations.install(mem, agent, env=env)
    assert first["status"] == "ok", first
    assert first["changed"]
    after_first = snapshot(home)
    for rel, _content in before.items():            # foreign files are still there
        assert rel in after_first
    backups = [Path(b) for b in first["backups"]]
    assert all(b.exists() for b in backups)
    assert len(backups) == sum(1 for p in first["changed"]
                               if Path(p).is_relative_to(home) and Path(p).relative_to(home).as_posix() in before)

    second = integrations.install(mem, agent, env=env)
    assert second["changed"] == [] and second["backups"] == [], second
    assert snapshot(home) == after_first

    [st] = integrations.status(mem, [agent], env=env)
    assert st["installed"] is True and st["detected"] is True, st

    token = (remem_home / "token").read_text().strip()
    for p in home.rglob("*"):
        if p.is_file():
            assert token not in p.read_text(errors="replace"), p

    gone = integrations.remove(mem, agent, env=env)
    assert gone["status"] == "ok" and gone["removed"], gone
    assert snapshot(home) == before
    [st] = integrations.status(mem, [agent], env=env)
    assert st["installed"] is False and st["partial"] is False, st
    again = integrations.remove(mem, agent, env=env)
    assert again["removed"] == [] and again["changed"] == []


@pytest.mark.parametrize("agent", list(FOREIGN))
def test_install_into_an_empty_home_and_remove_leaves_nothing(agent, env, mem):
    home = Path(env["HOME"])
    assert integrations.install(mem, agent, env=env)["status"] == "ok"
    assert any(p.is_file() for p in home.rglob("*"))
    integrations.remove(mem, agent, env=env)
    assert [p for p in home.rglob("*") if p.is_file()] == []


def test_claude_hooks_are_merged_next_to_foreign_ones(env, mem, remem_home):
    home = Path(env["HOME"])
    claude_foreign(home)
    cfg = json.loads((home / ".claude/settings.json").read_text())
    # an older remem entry, spelled the way the fixture shows it, shares a group with a foreign one
    cfg["hooks"]["Stop"][0]["hooks"].insert(0, {"type": "command", "command": "remem hook claude-code stop"})
    write(home / ".claude/settings.json", cfg)
    integrations.install(mem, "claude-code", env=env)
    cfg = json.loads((home / ".claude/settings.json").read_text())
    assert cfg["model"] == "opus" and cfg["permissions"] == {"allow": ["Bash(ls:*)"]}
    ups = cfg["hooks"]["UserPromptSubmit"]
    assert ups[0]["hooks"][0]["command"] == FOREIGN_HOOK            # foreign first, untouched
    ours = ups[1]["hooks"][0]
    assert ours["command"] == f"{remem_home / 'bin' / 'remem-hook'} claude-code UserPromptSubmit"
    assert ours["timeout"] == 60
    stop_cmds = [h["command"] for g in cfg["hooks"]["Stop"] for h in g["hooks"]]
    assert stop_cmds.count(FOREIGN_HOOK) == 1
    assert sum(is_remem_command(c) for c in stop_cmds) == 1           # the old remem entry was replaced
    assert cfg["hooks"]["PreToolUse"][0]["hooks"][0]["command"] == FOREIGN_HOOK
    assert {"SessionStart", "PostToolUse", "PostToolUseFailure", "SessionEnd"} <= set(cfg["hooks"])
    assert (home / ".claude/commands/remem-resume.md").read_text().startswith("---")
    skill = (home / ".claude/skills/remem-memory/SKILL.md").read_text()
    assert skill.startswith("---\nname: remem-memory\n") and "remem" in skill and " search " in skill
    note = (home / ".claude/CLAUDE.md").read_text()
    assert note.startswith("# My rules\n\nAlways write tests.\n") and "<!-- remem:begin" in note


def test_codex_feature_switch_and_trust_note(env, mem):
    home = Path(env["HOME"])
    codex_foreign(home)
    res = integrations.install(mem, "codex", env=env)
    toml = tomllib.loads((home / ".codex/config.toml").read_text())
    assert toml["features"] == {"web_search": True, "hooks": True} and toml["model"] == "o3"
    assert any("/hooks" in n and "trust" in n for n in res["notes"])
    [st] = integrations.status(mem, ["codex"], env=env)
    assert st["hooks_feature"] is True and set(st["trust"]["untrusted"]) == {
        "SessionStart", "UserPromptSubmit", "PostToolUse", "Stop"}


def test_codex_trusted_hooks_are_recognised(env, mem):
    home = Path(env["HOME"])
    integrations.install(mem, "codex", env=env)
    hooks_path = home / ".codex/hooks.json"
    cfg = (home / ".codex/config.toml").read_text()
    cfg += f'\n[hooks.state."{hooks_path}:user_prompt_submit:0:0"]\ntrusted_hash = "sha256:abc"\n'
    (home / ".codex/config.toml").write_text(cfg)
    [st] = integrations.status(mem, ["codex"], env=env)
    assert st["trust"]["trusted"] == ["UserPromptSubmit"]


def test_codex_already_enabled_switch_is_left_alone(env, mem):
    home = Path(env["HOME"])
    write(home / ".codex/config.toml", "[features]\ncodex_hooks = true\n")
    integrations.install(mem, "codex", env=env)
    assert (home / ".codex/config.toml").read_text() == "[features]\ncodex_hooks = true\n"
    integrations.remove(mem, "codex", env=env)
    assert (home / ".codex/config.toml").read_text() == "[features]\ncodex_hooks = true\n"


def test_gemini_timeouts_are_milliseconds(env, mem):
    integrations.install(mem, "gemini", env=env)
    cfg = json.loads((Path(env["HOME"]) / ".gemini/settings.json").read_text())
    assert {h["timeout"] for ev in cfg["hooks"].values() for g in ev for h in g["hooks"]} == {60_000}
    assert "SessionStart" not in cfg["hooks"]


def test_cursor_script_is_executable_and_wired(env, mem):
    home = Path(env["HOME"])
    integrations.install(mem, "cursor", env=env)
    script = home / ".cursor/hooks/remem-hook.sh"
    assert os.access(script, os.X_OK)
    cfg = json.loads((home / ".cursor/hooks.json").read_text())
    assert cfg["version"] == 1
    assert cfg["hooks"]["beforeSubmitPrompt"] == [{"command": f"{script} beforeSubmitPrompt"}]


def test_opencode_honours_config_dir_variables(tmp_path, env, mem):
    env = {**env, "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    integrations.install(mem, "opencode", env=env)
    assert (tmp_path / "xdg/opencode/plugins/remem.js").exists()
    env2 = {**env, "OPENCODE_CONFIG_DIR": str(tmp_path / "occ")}
    integrations.install(mem, "opencode", env=env2)
    plugin = (tmp_path / "occ/plugins/remem.js").read_text()
    assert "bin/remem-hook" in plugin and "{{" not in plugin


@pytest.mark.parametrize("agent,holder_setup,holder", [
    ("openclaw", lambda h: write(h / ".openclaw/openclaw.json", {"plugins": {"slots": {"memory": "memory-lancedb"}}}),
     "memory-lancedb"),
    ("hermes", lambda h: write(h / ".hermes/config.yaml", "memory:\n  provider: honcho\n"), "honcho"),
])
def test_one_memory_provider_slot_asks_before_replacing(agent, holder_setup, holder, env, mem):
    home = Path(env["HOME"])
    holder_setup(home)
    before = snapshot(home)
    res = integrations.install(mem, agent, env=env)
    assert res["status"] == "needs_confirmation" and any(holder in n for n in res["notes"])
    [st] = integrations.status(mem, [agent], env=env)
    assert st["files"]["skill"] is True and st["installed"] is False     # only the skill
    no = integrations.install(mem, agent, replace=False, env=env)
    assert no["status"] == "ok"
    yes = integrations.install(mem, agent, replace=True, env=env)
    assert yes["status"] == "ok"
    [st] = integrations.status(mem, [agent], env=env)
    assert st["installed"] is True
    integrations.remove(mem, agent, env=env)
    assert snapshot(home) == before                                    # the slot goes back to its holder


def test_broken_config_is_reported_and_left_untouched(env, mem):
    home = Path(env["HOME"])
    write(home / ".claude/settings.json", "{ this is not json")
    res = integrations.install(mem, "claude-code", env=env)
    assert res["status"] == "error" and "not valid JSON" in res["error"]
    assert (home / ".claude/settings.json").read_text() == "{ this is not json"
    write(home / ".codex/config.toml", "[features\nbroken")
    assert integrations.install(mem, "codex", env=env)["status"] == "error"


def test_detected_agents_from_dirs_and_path(tmp_path, env):
    home = Path(env["HOME"])
    assert integrations.detected_agents(env) == []
    (home / ".codex").mkdir()
    (home / ".gemini").mkdir()
    bindir = tmp_path / "bin"
    bindir.mkdir()
    exe = bindir / "opencode"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    assert integrations.detected_agents({**env, "PATH": str(bindir)}) == ["codex", "opencode", "gemini"]


def test_unknown_agent_is_a_clear_error(mem):
    with pytest.raises(ValueError, match="no integration"):
        integrations.install(mem, "notepad", env={"HOME": "/nonexistent"})


def test_hook_command_pins_the_remem_home(env, mem, remem_home):
    integrations.install(mem, "claude-code", env=env)
    cfg = json.loads((Path(env["HOME"]) / ".claude/settings.json").read_text())
    cmd = cfg["hooks"]["Stop"][0]["hooks"][0]["command"]
    assert cmd.startswith(str(remem_home / "bin" / "remem-hook"))          # the launcher, which pins the home
    assert f"--home {remem_home}" in (remem_home / "bin" / "remem-hook").read_text()


def test_cli_install_status_remove(cli, env, remem_home):
    full = {**env, "REMEM_HOME": str(remem_home)}
    Path(env["HOME"], ".claude").mkdir()
    r = cli("hooks", "install", env=full)             # no AGENT: the detected ones
    assert r.returncode == 0, r.stderr
    assert b"installed into claude-code" in r.stdout
    r = cli("hooks", "status", "claude-code", "--json", env=full)
    [row] = json.loads(r.stdout)
    assert row["installed"] is True
    r = cli("hooks", "remove", "claude-code", env=full)
    assert r.returncode == 0 and b"removed from claude-code" in r.stdout
    r = cli("hooks", "install", "no-such-agent", env=full)
    assert r.returncode != 0 and b"no integration" in r.stderr


def test_cli_hook_command_runs_the_runtime(cli, remem_home):
    payload = json.dumps({"session_id": "s", "cwd": "/p", "prompt": "hello"}).encode()
    r = cli("hook", "claude-code", "UserPromptSubmit", input=payload, env={"REMEM_PORT": "9"})
    assert r.returncode == 0 and r.stderr == b""
    m = remem.open(remem_home)
    assert m.list(agent="claude-code")[0]["request"] == "hello"
    m.close()

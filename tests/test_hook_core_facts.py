"""The project's core facts (commands, package manager, ≤ 3 must-follow rules) once per session,
through the real hook entry (``python -m remem.hook``): in the SessionStart context for agents that
have one (Claude Code, Codex), and then not again in the first prompt's packet; with the first prompt
where no session start ran (Gemini, or an agent whose SessionStart hook is not installed); never on
later prompts."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import remem
from learned_data import PROJECT, seed
from remem.recall import packet as pk

UNRELATED = "let's look at the footer layout"      # names no slot, shares no word with a rule


@pytest.fixture
def learned(remem_home):
    with remem.open() as m:
        seed(m)
        m.learn()
        yield m


def hook(agent: str, event: str, payload: dict, env: dict[str, str] | None = None) -> str:
    r = subprocess.run([sys.executable, "-m", "remem.hook", agent, event], input=json.dumps(payload).encode(),
                       capture_output=True, timeout=120, env={**os.environ, "REMEM_PORT": "9", **(env or {})})
    assert r.returncode == 0 and not r.stderr.strip(), r.stderr
    return r.stdout.decode()


def ctx(out: str) -> str:
    if not out.strip():
        return ""
    got = json.loads(out)
    return got.get("hookSpecificOutput", {}).get("additionalContext", "") or json.dumps(got)


@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_session_start_carries_the_core_facts_and_the_first_prompt_does_not(learned, agent):
    base = {"session_id": f"{agent}-new", "cwd": PROJECT}
    start = ctx(hook(agent, "SessionStart", {**base, "source": "startup"}))
    assert pk.LEARNED_HEAD in start, start
    assert "bun test" in start                      # the test command
    assert start.count(pk.OPEN) == 1 and start.count(pk.CLOSE) == 1
    first = ctx(hook(agent, "UserPromptSubmit", {**base, "prompt": UNRELATED}))
    assert pk.LEARNED_HEAD not in first, first      # already in the session's context: not repeated
    # a prompt that names a slot still gets its memory: the start context is no reason to hide it
    hook(agent, "Stop", {**base, "last_assistant_message": "Looked at it."})
    tests = ctx(hook(agent, "UserPromptSubmit", {**base, "prompt": "run the tests before we ship the cart"}))
    assert pk.LEARNED_HEAD in tests and "bun test" in tests


def test_without_a_session_start_the_first_prompt_carries_them_once(learned):
    base = {"session_id": "no-start", "cwd": PROJECT}
    first = ctx(hook("claude-code", "UserPromptSubmit", {**base, "prompt": UNRELATED}))
    assert pk.LEARNED_HEAD in first and "bun test" in first, first
    hook("claude-code", "Stop", {**base, "last_assistant_message": "Looked at it."})
    second = ctx(hook("claude-code", "UserPromptSubmit", {**base, "prompt": UNRELATED}))
    assert pk.LEARNED_HEAD not in second, second


def test_gemini_has_no_session_start_context_so_its_first_prompt_carries_them(learned):
    base = {"session_id": "g1", "cwd": PROJECT}
    assert hook("gemini", "SessionStart", base) == ""       # Gemini would prepend it to the prompt
    first = ctx(hook("gemini", "BeforeAgent", {**base, "prompt": UNRELATED}))
    assert pk.LEARNED_HEAD in first and "bun test" in first, first


def test_session_start_in_another_project_or_as_another_owner_shows_none_of_them(learned):
    other = ctx(hook("claude-code", "SessionStart", {"session_id": "x1", "cwd": "/elsewhere", "source": "startup"}))
    assert pk.LEARNED_HEAD not in other
    learned.config.set("agents.claude-code", {"isolated": True})      # reads only its own owner now
    isolated = ctx(hook("claude-code", "SessionStart", {"session_id": "x2", "cwd": PROJECT, "source": "startup"}))
    assert pk.LEARNED_HEAD not in isolated, isolated


def test_the_digest_setting_off_still_gives_the_core_facts(learned):
    learned.config.set("hooks.session_digest", False)
    out = ctx(hook("claude-code", "SessionStart", {"session_id": "d1", "cwd": PROJECT, "source": "startup"}))
    assert "remem_project_digest" not in out and pk.LEARNED_HEAD in out, out


def test_session_start_entry_on_plain_values(learned):
    got = learned.session_start(project=PROJECT)
    assert got["items"] and {i["layer"] for i in got["items"]} <= {"L2", "L3"}
    assert all(i["why"] == "core" for i in got["items"])
    assert learned.session_start(project="nowhere")["text"] == ""
    with_core = learned.turn_start(UNRELATED, project=PROJECT, session="fresh")
    without = learned.turn_start(UNRELATED, project=PROJECT, session="fresh", core_shown=True)
    assert any(i.get("why") == "core" for i in with_core["items"])
    assert not any(i.get("why") == "core" for i in without["items"])


def test_through_the_real_daemon(learned, remem_home):
    """The same through ``remem serve``: the hook's session-start and turn-start requests reach the
    daemon's routes (``/api/v1/recall/session-start``, ``core_shown`` on turn-start)."""
    pytest.importorskip("fastapi")
    from remem.server.testing import Daemon

    learned.close()
    with Daemon(remem_home, env={"REMEM_AUTO_SYNC": "0", "REMEM_LEARN_DELAY": "3600"}) as d:
        env = {"REMEM_PORT": str(d.port), "REMEM_HOOK_TIMEOUT": "30"}
        base = {"session_id": "via-daemon", "cwd": PROJECT}
        start = ctx(hook("claude-code", "SessionStart", {**base, "source": "startup"}, env=env))
        first = ctx(hook("claude-code", "UserPromptSubmit", {**base, "prompt": UNRELATED}, env=env))
        log = (remem_home / "logs" / "hooks.log").read_text()
    assert pk.LEARNED_HEAD in start and "bun test" in start, start
    assert pk.LEARNED_HEAD not in first, first
    assert "kind=session_start via=daemon" in log and "kind=turn_start via=daemon" in log, log

"""Privacy modes (docs/privacy.md): incognito sessions (``REMEM_INCOGNITO``, ``/remem-incognito``), the
home's incognito switch and per-project capture opt-out (``.remem-ignore``, ``capture.ignore_projects``),
through the real hook entry (``python -m remem.hook`` in a subprocess), the real sync engine on two
agents' real fixture histories, the learn job and the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import FIXTURES
from remem import privacy

CLAUDE_FIXTURE = "claude-code/projects/-home-alice-proj-remem-demo/7f3c2a10-5b6e-4c1d-9a8b-0e1f2a3b4c5d.jsonl"
CODEX_FIXTURE = ("codex/sessions/2026/03/03/"
                 "rollout-2026-03-03T10-00-00-019a2d7a-41c4-78b1-b7cc-a45d62a89cd5.jsonl")
FIXTURE_CWD = "/home/alice/proj/remem-demo"
MEMORY = "the cart total rounds coupons with Decimal, fixed in src/cart/total.py"


def hook(event: str, payload: dict, agent: str = "claude-code", env: dict | None = None) -> str:
    """One hook call through the real entry point; returns what it printed."""
    r = subprocess.run([sys.executable, "-m", "remem.hook", agent, event], input=json.dumps(payload).encode(),
                       capture_output=True, timeout=120, env={**os.environ, "REMEM_PORT": "9", **(env or {})})
    assert r.returncode == 0, r.stderr
    assert not r.stderr.strip(), r.stderr
    return r.stdout.decode()


def context(out: str) -> str:
    return json.loads(out)["hookSpecificOutput"]["additionalContext"] if out.strip() else ""


def turn(session: str, prompt: str, cwd: str, reply: str = "Done.", env: dict | None = None) -> str:
    """A prompt and its Stop, as Claude Code's hooks see them; returns the prompt hook's context."""
    base = {"session_id": session, "cwd": cwd, "transcript_path": ""}
    out = hook("UserPromptSubmit", {**base, "prompt": prompt}, env=env)
    hook("Stop", {**base, "last_assistant_message": reply}, env=env)
    return context(out)


@pytest.fixture
def project(tmp_path) -> Path:
    p = Path(os.environ["HOME"]) / "work" / "shop"
    p.mkdir(parents=True)
    return p


@pytest.fixture
def seeded(mem, project):
    mem.add(MEMORY, agent="codex", project=str(project), session="old", reply="yes")
    mem.close()
    return project


def requests(agent: str | None = None) -> list[str]:
    import remem

    m = remem.open()
    try:
        return sorted(t["request"] for t in m.list(limit=500, agent=agent))
    finally:
        m.close()


# -- pure parts ---------------------------------------------------------------------------------


@pytest.mark.parametrize("text,want", [
    ("/remem-incognito", "on"), ("/remem-incognito on", "on"), ("  /remem_incognito OFF", "off"),
    ("/remem-incognito off\n\nThe remem hook has answered this command…", "off"),   # Claude expands the file
    ("/remem-incognito status", "status"), ("/remem-incognito ofF please", "on"),   # unknown argument: on
    ("<command-message>remem-incognito</command-message>\n<command-name>/remem-incognito</command-name>\n"
     "<command-args>off</command-args>", "off"),
    ("<command-name>/remem-incognito</command-name>", "on"),
    ("tell me about /remem-incognito", None), ("/remem-incognitomode", None), ("/remem-resume x", None), ("", None),
])
def test_command_parsing(text, want):
    assert privacy.parse_command(text) == want


def test_spans_keep_out_what_happened_inside_them():
    st = privacy.State()
    assert st.session_on("s1", "codex", 1000.0, "command")
    assert not st.session_on("s1", "codex", 1001.0, "command")     # already open
    assert st.keeps_out("s1", 1000.0 - privacy.SLACK) == "incognito"
    assert st.keeps_out("s1", 990.0) is None                         # before the command
    assert st.keeps_out("s1", None) == "incognito"                   # no time: kept out
    assert not st.session_off("s1", 1100.0, by="env")                # only the command ends a command's span
    assert st.session_off("s1", 1100.0)
    assert st.keeps_out("s1", 1099.0) == "incognito" and st.keeps_out("s1", 1100.0) is None
    assert st.keeps_out("s2", 1050.0) is None
    assert st.pause(2000.0) and st.home_paused and st.unpause(2100.0) and not st.home_paused
    assert st.keeps_out("s2", 2050.0) == "paused" and st.keeps_out("s2", 2100.0) is None
    again = privacy.State(json.loads(json.dumps(st.to_dict())))
    assert again.to_dict() == st.to_dict()


def test_ignore_list_and_files(tmp_path):
    home = tmp_path / "u"
    (home / "a" / "secret" / "deep").mkdir(parents=True)
    (home / "a" / "open").mkdir(parents=True)
    assert privacy.listed(str(home / "a" / "secret" / "deep"), [str(home / "a" / "secret")])
    assert not privacy.listed(str(home / "a" / "secret-2"), [str(home / "a" / "secret")])   # not a prefix match
    assert privacy.listed("/srv/x/client-acme", ["*/client-*"]) == "*/client-*"
    assert not privacy.listed("/srv/x/app", ["", "relative/path", "*/client-*"])            # bad entries: no match
    (home / "a" / "secret" / ".remem-ignore").write_text("")
    assert privacy.ignore_file(str(home / "a" / "secret" / "deep"), home) == home / "a" / "secret" / ".remem-ignore"
    assert privacy.ignore_file(str(home / "a" / "open"), home) is None
    assert privacy.ignore_file("relative/dir", home) is None and privacy.ignore_file("", home) is None
    (tmp_path / ".remem-ignore").write_text("")        # above the home: not looked at
    assert privacy.ignore_file(str(home / "a" / "open"), home) is None
    for bad in ("", "  ", "relative/path"):
        with pytest.raises(ValueError):
            privacy.check_pattern(bad)


def test_the_setting_is_checked(mem, cli):
    r = cli("config", "set", "capture.ignore_projects", "[relative/path]")
    assert r.returncode != 0
    err = r.stderr.decode()
    assert "capture.ignore_projects" in err and "absolute paths" in err and "Traceback" not in err
    r = cli("config", "set", "capture.ignore_projects", "~/clients/acme")   # one path without brackets
    assert r.returncode == 0, r.stderr
    mem.close()
    import remem

    m = remem.open()
    assert m.config.get("capture.ignore_projects") == ["~/clients/acme"]
    m.close()
    cfg = Path(os.environ["REMEM_HOME"]) / "config.yaml"
    cfg.write_text("capture:\n  ignore_projects: 5\n")
    r = cli("config", "get", "capture.ignore_projects")
    assert r.returncode != 0 and "capture.ignore_projects" in r.stderr.decode()


# -- hooks ---------------------------------------------------------------------------------------


def test_env_var_captures_nothing_and_recalls_nothing(seeded):
    cwd = str(seeded)
    assert MEMORY.split(",")[0] in turn("open", "why does the cart total round coupons?", cwd)   # recall works
    env = {"REMEM_INCOGNITO": "1"}
    assert turn("inc", "why does the cart total round coupons?", cwd, env=env) == ""
    assert hook("PostToolUse", {"session_id": "inc", "cwd": cwd, "tool_name": "Bash",
                                "tool_input": {"command": "cat .env"}, "tool_response": "KEY=v"}, env=env) == ""
    assert requests("claude-code") == ["why does the cart total round coupons?"]   # only the open session's
    st = privacy.load(Path(os.environ["REMEM_HOME"]))
    assert st.open_span("inc") is not None and "inc" in st.incognito_sessions()
    kept = privacy.session_path(Path(os.environ["REMEM_HOME"]), "inc").read_text()
    assert "cart" not in kept and json.loads(kept)["session_id"] == "inc"           # ids and times only
    # the session's next run without the variable: its span ends, the turn is remembered again
    assert MEMORY.split(",")[0] in turn("inc", "and now the cart tax?", cwd)
    assert privacy.load(Path(os.environ["REMEM_HOME"])).open_span("inc") is None
    assert "and now the cart tax?" in requests("claude-code")


def test_slash_command_on_and_off(seeded):
    cwd = str(seeded)
    assert turn("s", "fix the cart total first", cwd)
    note = context(hook("UserPromptSubmit", {"session_id": "s", "cwd": cwd, "prompt": "/remem-incognito"}))
    assert note.startswith("<remem_incognito>") and "ON" in note
    hook("Stop", {"session_id": "s", "cwd": cwd, "last_assistant_message": "Incognito is on."})
    assert turn("s", "my cart total secret plan", cwd) == ""                 # nothing recalled into it
    assert hook("PostToolUse", {"session_id": "s", "cwd": cwd, "tool_name": "Bash", "tool_input": {"command": "x"},
                                "tool_response": {"exit_code": 1, "stderr": "boom"}}) == ""
    status = context(hook("UserPromptSubmit", {"session_id": "s", "cwd": cwd, "prompt": "/remem-incognito status"}))
    assert "ON" in status
    off = context(hook("UserPromptSubmit", {"session_id": "s", "cwd": cwd, "prompt": "/remem-incognito off"}))
    assert "OFF" in off
    # Gemini-style turn end carrying the command's prompt: still not stored
    hook("Stop", {"session_id": "s", "cwd": cwd, "prompt": "/remem-incognito off", "last_assistant_message": "ok"})
    assert MEMORY.split(",")[0] in turn("s", "back to the cart total", cwd)
    assert requests("claude-code") == ["back to the cart total", "fix the cart total first"]
    # another session was never incognito
    assert turn("other", "cart total in another window", cwd)
    assert "cart total in another window" in requests("claude-code")


def test_the_command_in_codex_and_cursor(seeded):
    cwd = str(seeded)
    out = hook("UserPromptSubmit", {"session_id": "cx", "cwd": cwd, "prompt": "/remem-incognito",
                                    "turn_id": "t1"}, agent="codex")
    assert "ON" in context(out)
    hook("Stop", {"session_id": "cx", "cwd": cwd, "turn_id": "t1", "last_assistant_message": "ok"}, agent="codex")
    out = hook("beforeSubmitPrompt", {"conversation_id": "cu", "workspace_roots": [cwd], "prompt": "/remem-incognito"},
               agent="cursor")
    got = json.loads(out)
    assert got["continue"] is False and "ON" in got["user_message"]       # shown to the user, not sent
    assert json.loads(hook("beforeSubmitPrompt", {"conversation_id": "cu", "workspace_roots": [cwd],
                                                  "prompt": "cart total please"}, agent="cursor")) == {"continue": True}
    hook("stop", {"conversation_id": "cu", "workspace_roots": [cwd], "status": "completed"}, agent="cursor")
    assert requests() == [MEMORY]


def test_ignored_project_by_file_and_by_setting(seeded, cli):
    cwd = str(seeded)
    sub = seeded / "src" / "cart"
    sub.mkdir(parents=True)
    (seeded / ".remem-ignore").write_text("# no memory here\n")
    (seeded / ".remem-ignore").chmod(0)                         # unreadable: its presence is enough
    assert turn("p1", "why does the cart total round coupons?", str(sub)) == ""
    assert requests("claude-code") == []
    (seeded / ".remem-ignore").chmod(0o600)
    (seeded / ".remem-ignore").unlink()
    assert turn("p1", "why does the cart total round coupons?", cwd)
    assert cli("config", "set", "capture.ignore_projects", f"[{seeded.parent}]").returncode == 0
    assert turn("p2", "the cart total again", str(sub)) == ""
    assert requests("claude-code") == ["why does the cart total round coupons?"]


@pytest.mark.parametrize("which", ["switch", "session"])
def test_a_broken_privacy_file_keeps_everything_out_and_is_kept(seeded, cli, which):
    home = Path(os.environ["REMEM_HOME"])
    broken = home / "privacy.json" if which == "switch" else privacy.session_path(home, "b")
    broken.parent.mkdir(parents=True, exist_ok=True)
    broken.write_text("{not json")
    assert turn("b", "why does the cart total round coupons?", str(seeded)) == ""
    assert requests("claude-code") == []
    assert broken.read_text() == "{not json"          # never overwritten
    assert "not remem's privacy file" in (home / "logs" / "hooks.log").read_text()
    r = cli("status")
    assert "incognito: unknown" in r.stdout.decode(), r.stdout
    r = cli("sync")
    assert r.returncode != 0 and str(broken) in r.stderr.decode() and "Traceback" not in r.stderr.decode()
    if which == "switch":
        r = cli("incognito", "on")
        assert r.returncode != 0 and str(broken) in r.stderr.decode()


# -- sync ------------------------------------------------------------------------------------------


def _place(fixture: str, dest: Path, cwd: str, replace: dict[str, str] | None = None) -> Path:
    text = (FIXTURES / fixture).read_text(encoding="utf-8").replace(FIXTURE_CWD, cwd)
    for a, b in (replace or {}).items():
        text = text.replace(a, b)
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(text, encoding="utf-8")
    return dest


@pytest.fixture
def two_agents() -> dict[str, Path]:
    """Claude Code worked in ~/work/secret (with a .remem-ignore), Codex in ~/work/open."""
    home = Path(os.environ["HOME"])
    secret, open_ = home / "work" / "secret", home / "work" / "open"
    secret.mkdir(parents=True)
    open_.mkdir(parents=True)
    (secret / ".remem-ignore").write_text("")
    _place(CLAUDE_FIXTURE, home / ".claude" / "projects" / "-work-secret" / Path(CLAUDE_FIXTURE).name, str(secret))
    _place(CODEX_FIXTURE, home / ".codex" / "sessions" / "2026" / "03" / "03" / Path(CODEX_FIXTURE).name, str(open_))
    return {"secret": secret, "open": open_}


def _sync(mem):
    from remem.sources.sync import run_sync

    return run_sync(mem, ["claude-code", "codex"])


def test_sync_skips_ignored_projects_of_every_source(mem, two_agents, cli):
    res = _sync(mem)
    by = {s["source"]: s for s in res["sources"]}
    assert by["claude-code"]["turns_added"] == 0 and by["claude-code"]["skipped_private"] > 0
    assert by["claude-code"]["sessions_private"] == 1
    assert by["codex"]["turns_added"] > 0 and by["codex"]["skipped_private"] == 0
    assert {t["project"] for t in mem.list(limit=500)} == {str(two_agents["open"])}
    assert res["total"]["sessions_private"] == 1
    # the setting keeps Codex's project out too (a full rescan; the CLI says how many)
    mem.close()
    assert cli("config", "set", "capture.ignore_projects", f"[{two_agents['open']}]").returncode == 0
    import remem

    m = remem.open()
    before = len(m.list(limit=500))
    m.close()
    r = cli("sync", "--full", "--yes")
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode()
    assert "2 sessions skipped for privacy" in out, out
    m = remem.open()
    assert len(m.list(limit=500)) == before          # nothing new, nothing lost
    m.close()


def test_sync_keeps_out_incognito_sessions_recorded_by_the_hook_and_by_the_history(mem, project):
    """A session marked incognito by the hook (REMEM_INCOGNITO: no command in the history) is kept
    out by its span; a history where the user typed /remem-incognito is kept out by the command
    itself, also where no hook ran; the turns before the command and after ``off`` are imported."""
    home = Path(os.environ["HOME"])
    now = time.time()
    sid_env, sid_cmd = "11111111-0000-4000-8000-000000000001", "22222222-0000-4000-8000-000000000002"
    hook("UserPromptSubmit", {"session_id": sid_env, "cwd": str(project), "prompt": "x"},
         env={"REMEM_INCOGNITO": "1"})

    def line(sid: str, i: int, role: str, text: str, ts: float) -> str:
        rec = {"type": role, "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts)) + f".{i:03d}Z",
               "parentUuid": None, "isSidechain": False, "userType": "external", "cwd": str(project),
               "sessionId": sid, "version": "2.1.0", "uuid": f"{sid}-{i}",
               "message": {"role": role, "content": [{"type": "text", "text": text}]}}
        if role == "assistant":
            rec["message"].update({"id": f"msg_{sid}_{i}", "type": "message", "model": "claude-x",
                                   "stop_reason": "end_turn"})
        return json.dumps(rec)

    root = home / ".claude" / "projects" / "-work-shop"
    root.mkdir(parents=True)
    (root / f"{sid_env}.jsonl").write_text("\n".join([
        line(sid_env, 1, "user", "env session prompt", now + 1), line(sid_env, 2, "assistant", "ok", now + 2),
        line(sid_env, 3, "user", "env session second", now + 3), line(sid_env, 4, "assistant", "ok", now + 4)]) + "\n")
    t = now - 3600
    (root / f"{sid_cmd}.jsonl").write_text("\n".join([
        line(sid_cmd, 1, "user", "before incognito", t), line(sid_cmd, 2, "assistant", "ok", t + 1),
        line(sid_cmd, 3, "user", "/remem-incognito", t + 2), line(sid_cmd, 4, "assistant", "Incognito on.", t + 3),
        line(sid_cmd, 5, "user", "the private part", t + 4), line(sid_cmd, 6, "assistant", "ok", t + 5),
        line(sid_cmd, 7, "user", "/remem-incognito off", t + 6), line(sid_cmd, 8, "assistant", "Off.", t + 7),
        line(sid_cmd, 9, "user", "after incognito", t + 8), line(sid_cmd, 10, "assistant", "ok", t + 9)]) + "\n")
    res = _sync(mem)
    got = sorted(x["request"] for x in mem.list(limit=100))
    assert got == ["after incognito", "before incognito"]
    cc = next(s for s in res["sources"] if s["source"] == "claude-code")
    assert cc["sessions_private"] == 2 and cc["skipped_private"] == 5   # 2 env turns + 2 commands + 1 private


def test_nothing_of_an_incognito_session_is_learned(mem, project):
    """Turns a writer stored inside an incognito span (before the hook marked it) are never learned;
    the same words in a session that was not incognito are."""
    from remem.model import TurnIn

    home = Path(os.environ["REMEM_HOME"])
    now = time.time()
    rule = "Use pnpm, not npm, for this project from now on."

    def said(sessions: list[str], t0: float) -> list[TurnIn]:
        return [TurnIn(request=rule, reply="ok", owner="default", agent="claude-code", project=str(project),
                       session_id=s, source_key=f"say:{s}", started_at=t0 + i, ended_at=t0 + i + 1,
                       message_ids=[f"say-{s}"]) for i, s in enumerate(sessions)]

    with privacy.edit(home) as st:
        st.session_on("p1", "claude-code", now - 100, "command")
        st.session_on("p2", "claude-code", now - 100, "command")
    mem.add_turns(said(["p1", "p2"], now - 50))
    mem.learn()
    assert not [x for x in mem.learned(status="all") if "pnpm" in x["text"]]
    mem.add_turns(said(["o1", "o2"], now - 40))
    mem.learn()
    learned = [x for x in mem.learned(status="all") if "pnpm" in x["text"]]
    assert learned
    ids = {e for x in learned for e in (x.get("evidence") or [])}
    private = {t["id"] for t in mem.list(limit=50) if t["session_id"] in ("p1", "p2")}
    assert private and not ids & private


# -- the home switch from the command line ----------------------------------------------------------


def test_remem_incognito_command_pauses_every_agent(seeded, cli):
    r = cli("incognito", "on")
    assert r.returncode == 0 and "ON" in r.stdout.decode()
    assert "incognito: ON" in cli("status").stdout.decode()
    assert turn("h1", "why does the cart total round coupons?", str(seeded)) == ""
    out = hook("UserPromptSubmit", {"session_id": "g", "cwd": str(seeded), "prompt": "cart total?"}, agent="gemini")
    assert out == ""
    assert requests() == [MEMORY]
    assert cli("incognito", "off").returncode == 0
    assert json.loads(cli("incognito", "--json").stdout) ["incognito"] is False
    assert turn("h1", "why does the cart total round coupons?", str(seeded))
    assert "why does the cart total round coupons?" in requests()


def test_plugin_operations_of_an_incognito_session_read_and_write_nothing(seeded):
    """OpenCode / OpenClaw / Hermes call remem's tools through the hook (search, get, add): inside an
    incognito session they find nothing and store nothing; outside it they work."""
    cwd = str(seeded)
    base = {"session_id": "oc", "cwd": cwd}
    found = json.loads(hook("search", {**base, "query": "cart total coupons"}, agent="opencode"))["results"]
    assert found and "Decimal" in found[0]["text"]
    out = hook("chat.message", {**base, "prompt": "/remem-incognito"}, agent="opencode")
    assert "ON" in json.loads(out)["context"]
    assert json.loads(hook("search", {**base, "query": "cart total coupons"}, agent="opencode")) == {"results": []}
    assert json.loads(hook("get", {**base, "id": found[0]["id"]}, agent="opencode")) == {"memory": None}
    added = json.loads(hook("add", {**base, "text": "the secret plan"}, agent="opencode"))
    assert "incognito" in added["error"]
    assert requests() == [MEMORY]

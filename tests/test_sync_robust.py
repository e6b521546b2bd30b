"""Bad or unexpected history input through `remem sync` / `remem up` (issue 13, items 9 and 20).

Every history here is written by the test itself, shaped like the agents write it: Codex 0.171
rollouts with their bookkeeping records, Claude Code transcripts with tool output and stack
traces, Gemini CLI, OpenClaw, Hermes and Pi JSONL.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import pytest

SID = "01a23382-67c6-7f03-b266-67b9fc48b863"
TRACE = textwrap.dedent("""\
    Traceback (most recent call last):
      File "/srv/shop/app/payments/retry.py", line 88, in charge
        resp = client.post(url, json=payload, timeout=self.timeout)
      File "/srv/shop/.venv/lib/python3.12/site-packages/httpx/_client.py", line 1145, in post
        return self.request("POST", url, json=json, timeout=timeout)
    httpx.ReadTimeout: timed out after 5.0s
    """)
PROMPTS = ["支付重试为什么超时？请看 payments/retry.py 的 charge()",
           "Raise the payments client timeout to 15 s and add a backoff test",
           "Run the payments test suite again"]
REPLIES = ["The charge() call uses a 5 s timeout while the gateway p99 is 7.8 s, so retries time out:\n" + TRACE,
           "Set `PAYMENTS_TIMEOUT=15` in settings.py and added test_retry_backoff (3 retries, 0.5/1/2 s).",
           "All 42 payments tests pass (1.9 s)."]
DEEP = "[" * 200_000 + "]" * 200_000 + "\n"          # a valid JSON value far deeper than any parser recurses


def _ts(i: int, s: int = 0) -> str:
    return f"2026-03-0{i + 1}T10:{s:02d}:00Z"


def _sync(cli, *agents: str, env: dict[str, str] | None = None) -> dict:
    r = cli("sync", *agents, "--json", env=env)
    assert r.returncode == 0, r.stderr.decode()
    return json.loads(r.stdout)


# ----------------------------------------------------------------------------- item 9: Codex 0.171


def _codex_0171_rollout() -> list[dict]:
    """One turn of a real Codex 0.171 rollout (record types and order as `codex exec` writes them)."""
    cwd = "/home/dev/shop"
    meta = {"timestamp": "2026-03-01T10:00:00.100Z", "type": "session_meta", "ordinal": 0,
            "payload": {"session_id": SID, "id": SID, "timestamp": "2026-03-01T10:00:00.000Z", "cwd": cwd,
                        "originator": "codex_exec", "cli_version": "0.171.0", "source": "exec"}}
    out = "\n".join(f"tests/payments/test_retry.py::test_case_{i} PASSED" for i in range(120))

    def rec(i: int, rtype: str, payload: dict) -> dict:
        return {"timestamp": f"2026-03-01T10:00:{i:02d}.000Z", "type": rtype, "ordinal": i, "payload": payload}

    return [
        meta,
        rec(1, "event_msg", {"type": "task_started", "turn_attribution": {"turn_id": "t1"}}),
        rec(2, "response_item", {"type": "message", "role": "developer",
                                 "content": [{"type": "input_text", "text": "<skills_instructions>…"}]}),
        rec(3, "response_item", {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": f"<environment_context>\n  <cwd>{cwd}</cwd>\n</environment_context>"}]}),
        rec(4, "world_state", {"full": True, "state": {"agents_md": {}, "collaboration_mode": {"mode": "default"}}}),
        rec(5, "turn_context", {"turn_id": "t1", "cwd": cwd, "model": "gpt-5.1-codex", "approval_policy": "never"}),
        rec(6, "event_msg", {"type": "thread_settings_applied", "thread_id": SID,
                             "thread_settings": {"model": "gpt-5.1-codex"}}),
        rec(7, "response_item", {"type": "message", "role": "user",
                                 "content": [{"type": "input_text", "text": PROMPTS[2]}]}),
        rec(8, "event_msg", {"type": "item_completed", "thread_id": SID, "item": {"type": "UserMessage"}}),
        rec(9, "response_item", {"type": "function_call", "status": "completed", "name": "exec_command",
                                 "arguments": json.dumps({"cmd": "pytest tests/payments -q"}), "call_id": "call_1"}),
        rec(10, "token_usage_record", {"thread_id": SID, "turn_id": "t1", "session_id": SID,
                                       "usage": {"input_tokens": 10, "output_tokens": 5}}),
        rec(11, "response_item", {"type": "function_call_output", "call_id": "call_1",
                                  "output": f"Process exited with code 0\nOutput:\n{out}"}),
        rec(12, "event_msg", {"type": "token_count", "info": {"total_token_usage": {"total_tokens": 15}}}),
        rec(13, "response_item", {"type": "message", "status": "completed", "role": "assistant",
                                  "content": [{"type": "output_text", "text": REPLIES[2]}]}),
        rec(14, "token_usage_record", {"thread_id": SID, "turn_id": "t1", "session_id": SID,
                                       "usage": {"input_tokens": 20, "output_tokens": 10}}),
        rec(15, "event_msg", {"type": "task_complete", "turn_id": "t1", "last_agent_message": REPLIES[2]}),
    ]


def _write_rollout(home: Path, records: list[dict]) -> Path:
    f = home / ".codex/sessions/2026/03/01" / f"rollout-2026-03-01T10-00-00-{SID}.jsonl"
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return f


def test_codex_0171_bookkeeping_is_silent_and_an_unknown_record_is_skipped_not_failed(cli):
    home = Path(os.environ["HOME"])
    records = _codex_0171_rollout()
    records.insert(10, {"timestamp": "2026-03-01T10:00:10.500Z", "type": "holographic_replay", "ordinal": 99,
                        "payload": {"frames": 3}})
    _write_rollout(home, records)
    r = cli("sync", "codex")
    out = r.stdout.decode()
    assert r.returncode == 0, r.stderr.decode()
    assert "0 failed, 1 skipped (unknown record type)" in out, out
    assert "world_state" not in out and "token_usage_record" not in out, out
    assert "skipped" in out and "unknown record type: holographic_replay ×1" in out, out
    assert "!" not in out, out                                 # nothing reported as an error
    src = json.loads(cli("sources", "--json").stdout)
    codex = next(s for s in src if s["name"] == "codex")
    assert codex["cursor"] is not None, "an unknown record type must not hold the watermark back"
    got = json.loads(cli("search", "payments test suite", "--json").stdout)
    assert any("42 payments tests pass" in (h.get("reply") or h.get("text") or json.dumps(h)) for h in
               (got if isinstance(got, list) else got.get("results", []))), got


def test_first_remem_up_on_real_codex_0171_history_says_nothing_could_not_be_read(cli):
    home = Path(os.environ["HOME"])
    _write_rollout(home, _codex_0171_rollout())
    r = cli("up", "--no-daemon")
    out = r.stdout.decode() + r.stderr.decode()
    assert r.returncode == 0, out
    assert "could not be read" not in out and "unknown record type" not in out, out
    assert "imported: 1 new" in out, out
    again = _sync(cli, "codex")["sources"][0]
    assert (again["failed"], again["skipped_unknown"], again["units_read"]) == (0, 0, 0), again
    assert again["cursor"] is not None


# ----------------------------------------------------------------------------- item 20: bad lines


def _claude(kind: str, uid: str, text: str, ts: str, session: str = "s-claude", parent: str | None = None) -> str:
    msg: dict = {"role": "user", "content": text}
    if kind == "assistant":
        msg = {"id": "m-" + uid, "role": "assistant", "model": "claude-sonnet-4-5",
               "content": [{"type": "text", "text": text}]}
    return json.dumps({"type": kind, "uuid": uid, "parentUuid": parent, "sessionId": session, "cwd": "/home/dev/shop",
                       "timestamp": ts, "userType": "external", "message": msg}, ensure_ascii=False) + "\n"


def _claude_history() -> tuple[str, list[str]]:
    lines = []
    for i, (q, a) in enumerate(zip(PROMPTS, REPLIES, strict=True)):
        lines += [_claude("user", f"u{i}", q, _ts(i)), _claude("assistant", f"a{i}", a, _ts(i, 1), parent=f"u{i}")]
    return ".claude/projects/-home-dev-shop/s-claude.jsonl", lines


def _codex_history() -> tuple[str, list[str]]:
    sid = "11111111-2222-4333-8444-555555555555"
    lines = [json.dumps({"timestamp": _ts(0), "type": "session_meta", "payload": {"id": sid, "cwd": "/home/dev/shop"}})
             + "\n"]
    for i, (q, a) in enumerate(zip(PROMPTS, REPLIES, strict=True)):
        for s, role, text, kind in ((0, "user", q, "input_text"), (1, "assistant", a, "output_text")):
            lines.append(json.dumps({"timestamp": _ts(i, s), "type": "response_item", "payload": {
                "type": "message", "role": role, "content": [{"type": kind, "text": text}]}}, ensure_ascii=False) + "\n")
    return f".codex/sessions/2026/03/01/rollout-2026-03-01T10-00-00-{sid}.jsonl", lines


def _gemini_history() -> tuple[str, list[str]]:
    lines = [json.dumps({"sessionId": "g-1", "projectHash": "ab12", "startTime": _ts(0)}) + "\n"]
    for i, (q, a) in enumerate(zip(PROMPTS, REPLIES, strict=True)):
        lines.append(json.dumps({"id": f"gu{i}", "timestamp": _ts(i), "type": "user", "content": [{"text": q}]},
                                ensure_ascii=False) + "\n")
        lines.append(json.dumps({"id": f"gg{i}", "timestamp": _ts(i, 1), "type": "gemini", "content": a,
                                 "model": "gemini-2.5-pro"}, ensure_ascii=False) + "\n")
    return ".gemini/tmp/shop/chats/session-2026-03-01T10-00-g1.jsonl", lines


def _entries_history(first: dict) -> list[str]:
    """OpenClaw / Pi: a session line, then ``{"type": "message", "message": {role, content}}`` entries."""
    lines = [json.dumps(first) + "\n"]
    for i, (q, a) in enumerate(zip(PROMPTS, REPLIES, strict=True)):
        for s, role, text in ((0, "user", q), (1, "assistant", a)):
            lines.append(json.dumps({"type": "message", "id": f"e{i}{s}", "timestamp": _ts(i, s), "message": {
                "role": role, "content": [{"type": "text", "text": text}]}}, ensure_ascii=False) + "\n")
    return lines


def _openclaw_history() -> tuple[str, list[str]]:
    return ".openclaw/agents/main/sessions/oc-1.jsonl", _entries_history(
        {"type": "session", "version": 3, "id": "oc-1", "timestamp": _ts(0), "cwd": "/home/dev/shop"})


def _pi_history() -> tuple[str, list[str]]:
    return ".pi/agent/sessions/--home-dev-shop--/2026-03-01_pi1.jsonl", _entries_history(
        {"type": "session", "id": "pi-1", "cwd": "/home/dev/shop", "timestamp": _ts(0)})


def _hermes_history() -> tuple[str, list[str]]:
    lines = [json.dumps({"role": "session_meta", "session_id": "20260301_100000_abc", "model": "claude-sonnet-4.5",
                         "timestamp": "2026-03-01T10:00:00"}) + "\n"]
    for i, (q, a) in enumerate(zip(PROMPTS, REPLIES, strict=True)):
        lines.append(json.dumps({"role": "user", "content": q, "timestamp": _ts(i)[:-1]}, ensure_ascii=False) + "\n")
        lines.append(json.dumps({"role": "assistant", "content": a, "timestamp": _ts(i, 1)[:-1]},
                                ensure_ascii=False) + "\n")
    return ".hermes/sessions/20260301_100000_abc.jsonl", lines


HISTORIES = {"claude-code": _claude_history, "codex": _codex_history, "gemini": _gemini_history,
             "openclaw": _openclaw_history, "pi": _pi_history, "hermes": _hermes_history}


@pytest.mark.parametrize("agent", sorted(HISTORIES))
def test_a_200k_deep_json_line_is_one_bad_line_and_the_rest_of_its_file_imports(cli, agent):
    home = Path(os.environ["HOME"])
    rel, lines = HISTORIES[agent]()
    f = home / rel
    f.parent.mkdir(parents=True, exist_ok=True)
    lines.insert(3, DEEP)                      # after the first turn, before the second
    f.write_text("".join(lines), encoding="utf-8")
    res = _sync(cli, agent)["sources"][0]
    assert res["turns_added"] == 3, res
    assert res["failed"] == 1 and any("json nested too deeply ×1" in e for e in res["errors"]), res
    assert res["cursor"] is not None, "a permanent bad line must not stall the watermark"
    again = _sync(cli, agent)["sources"][0]
    assert (again["units_read"], again["turns_added"], again["failed"]) == (0, 0, 0), again


def test_a_cut_reply_line_does_not_leave_its_request_incomplete_forever(cli):
    home = Path(os.environ["HOME"])
    rel, lines = _claude_history()
    f = home / rel
    f.parent.mkdir(parents=True)
    lines[1] = lines[1][: len(lines[1]) // 2] + "\n"      # the first reply's line was cut mid-write
    f.write_text("".join(lines), encoding="utf-8")
    res = _sync(cli, "claude-code")["sources"][0]
    assert (res["turns_added"], res["skipped_incomplete"], res["failed"]) == (3, 0, 1), res
    assert res["cursor"] is not None
    hits = json.loads(cli("search", "支付重试 charge timeout", "--json").stdout)
    assert hits, "the request whose reply was lost is stored"


def test_a_cut_line_glued_to_the_next_request_keeps_that_request(cli):
    home = Path(os.environ["HOME"])
    rel, lines = _claude_history()
    f = home / rel
    f.parent.mkdir(parents=True)
    # the agent died mid-write of the first reply; the resumed session appended right after the cut bytes
    lines[1] = lines[1][: len(lines[1]) // 2]
    f.write_text("".join(lines), encoding="utf-8")
    res = _sync(cli, "claude-code")["sources"][0]
    assert (res["turns_added"], res["skipped_incomplete"], res["failed"]) == (3, 0, 1), res
    assert any("cut line ×1" in e for e in res["errors"]), res


# ----------------------------------------------------------------------------- item 20: unreadable directories

INJECT = textwrap.dedent("""\
    import os
    _real = os.scandir
    def scandir(path="."):
        if os.fspath(path).endswith(os.environ["REMEM_TEST_UNREADABLE"]):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return _real(path)
    os.scandir = scandir
    """)


def _two_projects(home: Path) -> Path:
    for proj, uid in (("-home-dev-shop", "x"), ("-home-dev-locked", "y")):
        d = home / ".claude/projects" / proj
        d.mkdir(parents=True)
        (d / f"s-{uid}.jsonl").write_text(
            _claude("user", f"{uid}1", PROMPTS[1], _ts(1), f"s-{uid}")
            + _claude("assistant", f"{uid}2", REPLIES[1], _ts(1, 1), f"s-{uid}", f"{uid}1"), encoding="utf-8")
    return home / ".claude/projects/-home-dev-locked"


def test_an_unreadable_history_directory_is_reported_not_skipped_silently(cli, tmp_path):
    """The reporting path with an injected OSError (works as root, where permissions do not apply)."""
    home = Path(os.environ["HOME"])
    locked = _two_projects(home)
    inject = tmp_path / "inject"
    inject.mkdir()
    (inject / "sitecustomize.py").write_text(INJECT)
    env = {"PYTHONPATH": os.pathsep.join([str(inject), *filter(None, [os.environ.get("PYTHONPATH")])]),
           "REMEM_TEST_UNREADABLE": "-home-dev-locked"}
    r = cli("sync", "claude-code", env=env)
    out = r.stdout.decode()
    assert f"! {locked}: unreadable directory: Permission denied" in out, out
    res = _sync(cli, "claude-code", env=env)["sources"][0]
    assert res["failed"] == 1 and res["cursor"] is None, "what could not be listed holds the watermark"
    fixed = _sync(cli, "claude-code")["sources"][0]         # readable again: its session imports
    assert (fixed["turns_added"], fixed["failed"]) == (1, 0) and fixed["cursor"] is not None, fixed


@pytest.mark.skipif(sys.platform == "win32" or os.geteuid() == 0,
                    reason="running as root: directory permissions do not apply (the injected-OSError test "
                           "covers the reporting path)")
def test_a_directory_without_read_permission_is_reported(cli):
    home = Path(os.environ["HOME"])
    locked = _two_projects(home)
    locked.chmod(0)
    try:
        res = _sync(cli, "claude-code")["sources"][0]
    finally:
        locked.chmod(0o755)
    assert res["turns_added"] == 1 and res["failed"] == 1, res
    assert any(str(locked) in e and "unreadable directory" in e for e in res["errors"]), res


def test_gemini_061_session_context_is_no_prompt_and_no_turn(cli):
    """Gemini CLI 0.61 writes its own `<session_context>` user message first (through `$set`); once
    the next request closes a reply-less turn, it must not become a memory of its own."""
    home = Path(os.environ["HOME"])
    f = home / ".gemini/tmp/shop/chats/session-2026-03-01T10-00-eb5f3fd1.jsonl"
    f.parent.mkdir(parents=True)
    context = ("<session_context>\nThis is the Gemini CLI. We are setting up the context for our chat.\n"
               "Today's date is Sunday, March 1, 2026.\nMy operating system is: linux\n</session_context>")
    lines = [{"sessionId": "eb5f3fd1-2dd9-4352-8482-ed558245d1fb", "projectHash": "5485", "startTime": _ts(0),
              "kind": "main"},
             {"$set": {"messages": [{"id": "ctx", "timestamp": _ts(0), "type": "user", "content": [{"text": context}]}]}},
             {"id": "u1", "timestamp": _ts(0, 1), "type": "user", "content": [{"text": PROMPTS[0]}]},
             {"$set": {"lastUpdated": _ts(0, 1)}},
             {"id": "g1", "timestamp": _ts(0, 2), "type": "gemini", "content": REPLIES[0], "thoughts": [],
              "tokens": {"input": 10, "output": 5}, "model": "gemini-3.8-flash"}]
    f.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n\n" for r in lines), encoding="utf-8")
    res = _sync(cli, "gemini")["sources"][0]
    assert (res["turns_added"], res["skipped_incomplete"], res["failed"]) == (1, 0, 0), res
    assert res["cursor"] is not None

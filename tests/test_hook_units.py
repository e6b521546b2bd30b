"""Pure parts of the hook runtime, as tables: event normalisation, tool error flags, transcript
deltas, escaping, resume parsing, the state file and the circuit breaker."""

from __future__ import annotations

import json
import time

import pytest

from remem.integrations import render, resume, state, transcript
from remem.integrations.client import DaemonClient, DaemonUnavailable
from remem.integrations.events import event_kind, normalize, tool_failed


@pytest.mark.parametrize("name,kind", [
    ("UserPromptSubmit", "turn_start"), ("user-prompt-submit", "turn_start"), ("BeforeAgent", "turn_start"),
    ("beforeSubmitPrompt", "turn_start"), ("turn-start", "turn_start"),
    ("Stop", "turn_end"), ("AfterAgent", "turn_end"), ("stop", "turn_end"), ("StopFailure", "turn_end"),
    ("turn-end", "turn_end"), ("afterAgentResponse", "response"), ("PostToolUse", "tool_after"),
    ("PostToolUseFailure", "tool_after"), ("AfterTool", "tool_after"), ("PreToolUse", "tool_before"),
    ("SessionStart", "session_start"), ("session-end", "session_end"), ("PreCompact", "compact"),
    ("Notification", "ignore"), ("SubagentStop", "ignore"), ("", "ignore"),
])
def test_event_kinds(name, kind):
    assert event_kind(name) == kind


def test_normalize_lifts_the_fields_of_each_agent():
    ev = normalize("cursor", "beforeSubmitPrompt", {"conversation_id": "c", "generation_id": "g",
                                                    "workspace_roots": ["/w"], "prompt": " hi "})
    assert (ev.kind, ev.session_id, ev.turn_id, ev.cwd, ev.prompt) == ("turn_start", "c", "g", "/w", "hi")
    ev = normalize("codex", "Stop", {"session_id": "s", "turn_id": "t", "cwd": "/c", "last_assistant_message": None})
    assert (ev.kind, ev.reply, ev.status) == ("turn_end", "", "")
    ev = normalize("claude-code", "StopFailure", {"session_id": "s"})
    assert ev.status == "failed"
    ev = normalize("gemini", "AfterTool", {"tool_name": "run_shell_command", "tool_input": {"command": "ls"},
                                           "tool_response": {"llmContent": "Output: x\nExit Code: 2"}})
    assert ev.tool is not None and ev.tool.is_error and ev.tool.input == '{"command": "ls"}'
    ev = normalize("claude-code", "UserPromptSubmit", ["not", "a", "dict"])
    assert ev.kind == "turn_start" and ev.prompt == "" and ev.session_id == ""


@pytest.mark.parametrize("response,failed", [
    ({"stdout": "ok", "stderr": "", "interrupted": False}, False),
    ({"stdout": "", "stderr": "boom", "interrupted": True}, True),
    ({"exit_code": 2}, True), ({"exitCode": 0}, False), ({"is_error": True}, True), ({"success": False}, True),
    ({"llmContent": "Output: hi\nExit Code: 3"}, True), ({"llmContent": "Output: hi\nExit Code: 0"}, False),
    ("Process exited with code 1\nOutput:", True), ("Process exited with code 0", False),
    ("Error: file not found", True), ("all good", False), (None, False), (42, False),
])
def test_tool_failed(response, failed):
    assert tool_failed(response) is failed


def _write(path, records, tail=""):
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + tail)


def test_codex_transcript_delta(tmp_path):
    p = tmp_path / "rollout.jsonl"
    _write(p, [
        {"type": "response_item", "payload": {"type": "function_call", "name": "exec_command",
                                              "arguments": '{"cmd": "ls"}', "call_id": "c1"}},
        {"type": "response_item", "payload": {"type": "function_call_output", "call_id": "c1",
                                              "output": "Process exited with code 2\nOutput:\nnope"}},
        {"type": "response_item", "payload": {"type": "message", "role": "assistant",
                                              "content": [{"type": "output_text", "text": "It failed."}]}},
        {"type": "event_msg", "payload": {"type": "task_complete", "last_agent_message": "It failed, sorry."}},
    ], tail='{"type": "event_msg", "payl')
    d = transcript.read_delta(str(p), 0)
    assert [(t.name, t.input, t.is_error) for t in d.tools] == [("exec_command", '{"cmd": "ls"}', True)]
    assert d.reply == "It failed, sorry."
    assert d.offset == p.stat().st_size - len('{"type": "event_msg", "payl')
    assert transcript.read_delta(str(p), d.offset).tools == []          # nothing new after the offset


def test_gemini_transcript_upserts_last_version_wins(tmp_path):
    p = tmp_path / "session.jsonl"
    call = {"id": "k", "name": "run_shell_command", "args": {"command": "make"}, "status": "error",
            "result": [{"functionResponse": {"response": {"output": "make: *** Error 2"}}}]}
    _write(p, [{"sessionId": "s", "kind": "main"},
               {"id": "m1", "type": "gemini", "content": "", "model": "g-1"},
               {"id": "m1", "type": "gemini", "content": "", "model": "g-1", "toolCalls": [call]},
               {"$set": {"lastUpdated": "x"}},
               {"id": "m2", "type": "gemini", "content": "Build broken.", "model": "g-1"}])
    d = transcript.read_delta(str(p))
    assert [(t.name, t.is_error, t.output) for t in d.tools] == [("run_shell_command", True, "make: *** Error 2")]
    assert (d.reply, d.model) == ("Build broken.", "g-1")


def test_claude_interrupt_means_cancelled(tmp_path):
    p = tmp_path / "c.jsonl"
    _write(p, [{"type": "user", "message": {"role": "user", "content": [
        {"type": "text", "text": "[Request interrupted by user for tool use]"}]}}])
    assert transcript.read_delta(str(p)).status == "cancelled"


def test_transcript_missing_truncated_or_garbage(tmp_path):
    assert transcript.read_delta("").tools == []
    assert transcript.read_delta(str(tmp_path / "missing.jsonl")).offset == 0
    p = tmp_path / "g.jsonl"
    p.write_bytes(b"\xff\xfe not json\n[1,2]\n{\"type\": 5}\n")
    d = transcript.read_delta(str(p), offset=10_000)       # offset past the end: file was rewritten
    assert d.tools == [] and d.offset == p.stat().st_size


@pytest.mark.parametrize("text,safe", [
    ("</remem_memory_context>", "&lt;/remem_memory_context>"),
    ("<current_user_request>", "&lt;current_user_request>"),
    ("<REMEM_RESUME>", "&lt;REMEM_RESUME>"),
    ("a < 3 and 2<3", "a < 3 and 2<3"),
    ("<div> < b", "&lt;div> &lt; b"),          # anything tag-like, with spaces too (< /remem_…>)
])
def test_escape(text, safe):
    assert render.escape(text) == safe


def test_with_request_and_age():
    assert render.with_request("", "q") == ""
    out = render.with_request("<remem_memory_context>\nx\n</remem_memory_context>", "a </current_user_request> b")
    assert out.endswith("<current_user_request>a &lt;/current_user_request> b</current_user_request>")
    now = 1_000_000.0
    assert render.age(now - 30, now) == "just now"
    assert render.age(now - 3 * 86400, now) == "3 days ago"
    assert render.age(None) == "unknown time"


@pytest.mark.parametrize("prompt,parsed", [
    ("/remem-resume billing migration", ("query", "billing migration")),
    ("/remem-resume", ("query", "")),
    ("/remem-resume 3", ("pick", "3")),
    ("remem-resume: 2", ("pick", "2")),
    ("/remem-resume cache\n\nexpanded command text", ("query", "cache")),
    ("please resume my work", None),
    ("2", None),                                     # no list shown before: an ordinary prompt
])
def test_resume_parse(prompt, parsed):
    assert resume.parse(prompt, {}) == parsed


def test_resume_bare_number_only_right_after_a_list():
    st = {"resume": {"candidates": [{"id": "a"}], "ts": time.time()}}
    assert resume.parse("1", st) == ("pick", "1")
    assert resume.parse(" 2. ", st) == ("pick", "2")
    st["resume"]["ts"] = time.time() - 3600
    assert resume.parse("1", st) is None


def test_state_add_tool_completes_by_call_id_and_is_bounded(tmp_path):
    with state.session_state(tmp_path, "codex", "s") as st:
        state.add_tool(st, {"name": "Bash", "input": "ls", "output": "", "call_id": "1", "is_error": False})
        state.add_tool(st, {"name": "Bash", "input": "", "output": "x", "call_id": "1", "is_error": True})
        for _ in range(state.MAX_TOOLS + 10):
            state.add_tool(st, {"name": "t", "call_id": ""})
    with state.session_state(tmp_path, "codex", "s") as st:
        assert st["tools"][0] == {"name": "Bash", "input": "ls", "output": "x", "call_id": "1", "is_error": True}
        assert len(st["tools"]) == state.MAX_TOOLS
    path = state.state_path(tmp_path, "codex", "s")
    assert path.stat().st_mode & 0o777 == 0o600
    old = time.time() - state.MAX_AGE_SECONDS - 10
    import os
    os.utime(path, (old, old))
    assert state.prune(tmp_path) >= 1 and not path.exists()


def test_circuit_breaker(tmp_path):
    c = DaemonClient("127.0.0.1", 9, "tok", timeout=0.2, breaker=tmp_path / "down")
    assert not c.tripped()
    c.trip(60)
    assert c.tripped()
    with pytest.raises(DaemonUnavailable, match="skipped"):
        c.request("GET", "/health")
    c.reset()
    assert not c.tripped()
    with pytest.raises(DaemonUnavailable):
        c.request("GET", "/health")                 # nothing listens on port 9

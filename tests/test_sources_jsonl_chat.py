"""Generic chat JSONL (WorkBuddy, Pi, qwenwork, custom agents): the three line shapes it recognises."""

from __future__ import annotations

import json
from pathlib import Path

from remem.sources import SOURCES, ParseStats, assemble_turns, scan


def write(path: Path, *records: dict, raw: bytes = b"") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        for r in records:
            f.write(json.dumps(r).encode() + b"\n")
        f.write(raw)
    return path


def run(agent: str, env: dict[str, str], stats: ParseStats | None = None):
    stats = stats if stats is not None else ParseStats()
    src = SOURCES[agent]
    units = scan(src, env, stats)
    return units, [t for u in units for t in assemble_turns(src.read(u, stats), agent=agent).turns]


def test_workbuddy_claude_like_lines(tmp_path):
    env_ = dict(sessionId="wb-1", cwd="/w/app", isSidechain=False)
    write(tmp_path / ".workbuddy" / "projects" / "-w-app" / "wb-1.jsonl",
          {"type": "summary", "summary": "x"},
          {**env_, "type": "user", "uuid": "u0", "timestamp": "2026-01-01T00:00:00Z", "isMeta": True,
           "message": {"role": "user", "content": "<local-command-caveat>…</local-command-caveat>"}},
          {**env_, "type": "user", "uuid": "u1", "timestamp": "2026-01-01T00:00:01Z",
           "message": {"role": "user", "content": [{"type": "text", "text": "rename foo"},
                                                   {"type": "text", "text": "<system-reminder>ctx</system-reminder>"}]}},
          {**env_, "type": "assistant", "uuid": "a1", "timestamp": "2026-01-01T00:00:02Z",
           "message": {"id": "m1", "model": "wb-model", "content": [{"type": "text", "text": "Renaming."}]}},
          {**env_, "type": "assistant", "uuid": "a2", "timestamp": "2026-01-01T00:00:03Z",
           "message": {"id": "m1", "model": "wb-model", "content": [
               {"type": "tool_use", "id": "t1", "name": "Edit", "input": {"f": "a.py"}}]}},
          {**env_, "type": "user", "uuid": "r1", "timestamp": "2026-01-01T00:00:04Z",
           "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}},
          {**env_, "type": "assistant", "uuid": "a3", "timestamp": "2026-01-01T00:00:05Z",
           "message": {"id": "m2", "model": "wb-model", "content": [{"type": "text", "text": "Renamed foo to bar."}]}},
          {**env_, "type": "assistant", "uuid": "a3", "timestamp": "2026-01-01T00:00:05Z",
           "message": {"id": "m2", "model": "wb-model", "content": [{"type": "text", "text": "Renamed foo to bar."}]}})
    env = {"HOME": str(tmp_path)}
    assert SOURCES["workbuddy"].discover(env) == [tmp_path / ".workbuddy" / "projects"]
    stats = ParseStats()
    _, [t] = run("workbuddy", env, stats)
    assert (t.request, t.reply) == ("rename foo", "Renamed foo to bar.")
    assert [(a.name, a.output) for a in t.actions] == [("note", "Renaming."), ("Edit", "ok")]
    assert (t.source_key, t.project, t.model) == ("workbuddy:wb-1:u1", "/w/app", "wb-model")
    assert stats.ignored["duplicate id"] == 1 and stats.bad == 0


def test_pi_style_entries(tmp_path):
    write(tmp_path / ".pi" / "agent" / "sessions" / "--w-app--" / "2026-01-01_abc.jsonl",
          {"type": "session", "id": "pi-1", "cwd": "/w/app", "timestamp": "2026-01-01T00:00:00Z"},
          {"type": "model_change", "provider": "x", "modelId": "y"},
          {"type": "message", "id": "e1", "timestamp": "2026-01-01T00:00:01Z",
           "message": {"role": "user", "content": [{"type": "text", "text": "list files"}]}},
          {"type": "message", "id": "e2", "timestamp": "2026-01-01T00:00:02Z",
           "message": {"role": "assistant", "model": "pi-model", "content": [
               {"type": "thinking", "thinking": "hm"}, {"type": "toolCall", "id": "c1", "name": "bash",
                                                        "arguments": {"command": "ls"}}]}},
          {"type": "message", "id": "e3", "timestamp": "2026-01-01T00:00:03Z",
           "message": {"role": "toolResult", "toolCallId": "c1", "isError": True,
                       "content": [{"type": "text", "text": "permission denied"}]}},
          {"type": "message", "id": "e4", "timestamp": "2026-01-01T00:00:04Z",
           "message": {"role": "assistant", "model": "pi-model", "stopReason": "error", "errorMessage": "overloaded",
                       "content": [{"type": "text", "text": "Could not list."}]}})
    _, [t] = run("pi", {"HOME": str(tmp_path)})
    assert (t.request, t.reply, t.status, t.session_id) == ("list files", "Could not list.", "failed", "pi-1")
    assert [(a.name, a.input, a.output, a.is_error) for a in t.actions] == [
        ("bash", '{"command": "ls"}', "permission denied", True)]
    assert t.source_key == "pi:pi-1:e1" and t.project == "/w/app"


def test_qwenwork_plain_role_content_lines_and_bad_input(tmp_path):
    f = write(tmp_path / ".qwenworkcn" / "projects" / "p" / "q-1.jsonl",
              {"role": "system", "content": "You are helpful.", "timestamp": 1767225600},
              {"role": "user", "content": "what is 2+2?", "timestamp": 1767225601},
              {"role": "assistant", "content": "", "timestamp": 1767225602,
               "tool_calls": [{"id": "k1", "type": "function", "function": {"name": "calc", "arguments": "{\"e\": \"2+2\"}"}}]},
              {"role": "tool", "tool_call_id": "k1", "content": "4", "timestamp": 1767225603},
              {"role": "assistant", "content": "4", "timestamp": 1767225604},
              {"role": "user", "content": "no timestamp"},
              {"role": "alien", "content": "?", "timestamp": 1767225605},
              {"kind": "mystery"},
              {"role": "user", "content": [{"type": "image", "source": {"type": "base64", "media_type": "image/jpeg",
                                                                         "data": "AAAA"}}], "timestamp": 1767225606},
              raw=b'{"role": "user", "content": "\xff"}\n{"role": "assistant", "content": "half')
    stats = ParseStats()
    units, [t] = run("qwenwork", {"HOME": str(tmp_path)}, stats)
    assert units[0].path == f and units[0].session_id == "q-1"
    second_line_offset = len(f.read_bytes().split(b"\n")[0]) + 1
    assert (t.request, t.reply, t.source_key) == ("what is 2+2?", "4", f"qwenwork:q-1:q-1@{second_line_offset}")
    assert [(a.name, a.output) for a in t.actions] == [("calc", "4")]
    assert stats.errors == {"missing timestamp": 1, "non-utf8 bytes": 1}
    assert stats.unknown == {"unknown role: alien": 1, "unknown record type: none": 1}
    assert stats.partial_tail


def test_discovery_of_all_three_from_a_temp_home(tmp_path):
    for rel in (".workbuddy/projects", ".pi/agent/sessions", ".qwenworkcn/projects"):
        (tmp_path / rel).mkdir(parents=True)
    env = {"HOME": str(tmp_path)}
    assert [SOURCES[a].discover(env)[0].relative_to(tmp_path).as_posix() for a in ("workbuddy", "pi", "qwenwork")] == [
        ".workbuddy/projects", ".pi/agent/sessions", ".qwenworkcn/projects"]

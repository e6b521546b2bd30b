"""Codex rollouts ($CODEX_HOME/sessions) → messages → turns, against the agent fixtures (tests/fixtures/agents)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import copy_fixture
from remem.sources import SOURCES, ParseStats, assemble_turns, scan

SRC = SOURCES["codex"]
SYN = "019a2d7a-41c4-78b1-b7cc-a45d62a89cd5"
REAL = "11111111-1111-4111-8111-111111111111"



@pytest.fixture
def env(tmp_path) -> dict[str, str]:
    copy_fixture("codex", tmp_path / ".codex")
    return {"HOME": str(tmp_path)}


def parse(env):
    out = {}
    for unit in scan(SRC, env):
        stats = ParseStats()
        msgs = list(SRC.read(unit, stats))
        out[unit.session_id] = (unit, msgs, assemble_turns(msgs, agent="codex"), stats)
    return out


def test_discovery_units_and_codex_home(env, tmp_path):
    assert SRC.discover(env) == [tmp_path / ".codex"]
    assert sorted(parse(env)) == [SYN, REAL, "rollout-ccusage-token-count-only"]
    moved = tmp_path / "elsewhere"
    (tmp_path / ".codex").rename(moved)
    assert SRC.discover(env) == []
    assert SRC.discover({**env, "CODEX_HOME": str(moved)}) == [moved]


def test_turn_counts(env):
    got = {sid: (len(r.turns), r.incomplete) for sid, (_u, _m, r, _s) in parse(env).items()}
    assert got == {REAL: (1, 0), SYN: (1, 1), "rollout-ccusage-token-count-only": (0, 0)}


def test_synthetic_full_turn(env):
    _u, msgs, res, stats = parse(env)[SYN]
    [t] = res.turns
    assert t.request == "Add a --since flag to the sync command\n[image: image/png]"
    assert t.reply == "Added `--since` to `sync` (src/remem/cli.py)."
    assert [(a.name, a.call_id, a.is_error) for a in t.actions] == [
        ("shell_command", "call_Qx1", False), ("apply_patch", "call_P1", False)]
    assert json.loads(t.actions[0].input)["command"] == "rg -n 'def sync' src"
    assert "src/remem/cli.py:88:def sync(args):" in t.actions[0].output
    assert t.actions[1].input.startswith("*** Begin Patch\n*** Update File: src/remem/cli.py")
    assert t.actions[1].output == "Success. Updated the following files:\nM src/remem/cli.py\n"
    assert (t.model, t.project, t.status) == ("gpt-5.3-codex", "/home/alice/proj/remem-demo", "succeeded")
    assert t.source_key.startswith(f"codex:{SYN}:{SYN}@")
    # injected context and the duplicate families never show up as prompts or replies
    users = [m.text for m in msgs if m.role == "user"]
    assert users == ["Add a --since flag to the sync command\n[image: image/png]", "now write a test"]
    assert sum(m.role == "assistant" for m in msgs) == 1
    assert not any("AGENTS.md" in m.text or "environment_context" in m.text or "permissions" in m.text
                   for m in msgs)
    assert stats.ignored["injected context"] == 2 and stats.ignored["developer message"] == 1
    assert stats.ignored["prompt echo"] == 2 and stats.ignored["assistant echo"] == 1
    # the aborted 2nd turn: cancelled marker, no reply yet → incomplete
    assert msgs[-1].status == "cancelled" and msgs[-1].extra["kind"] == "turn_aborted"


def test_real_fixture_turn_and_unknown_record(env):
    _u, _m, res, stats = parse(env)[REAL]
    [t] = res.turns
    assert (t.request, t.reply) == ("List the synthetic files.", "The synthetic files are alpha.txt and beta.txt.")
    assert [(a.name, a.output) for a in t.actions] == [
        ("exec_command", "./alpha.txt\n./beta.txt"), ("apply_patch", "Done!"),
        ("mcp__synthetic__lookup", '{"status":"ok"}')]
    assert (t.model, t.project) == ("synthetic-model", "/workspace/synthetic-project")
    assert not stats.errors and stats.unknown == {"unknown record type: future_synthetic_record": 1}


def test_degenerate_file_uses_filename_and_yields_nothing(env):
    unit, msgs, res, stats = parse(env)["rollout-ccusage-token-count-only"]
    assert msgs == [] and res.turns == [] and stats.bad == 0
    assert unit.session_id == "rollout-ccusage-token-count-only"


def test_source_keys_are_stable(env):
    a = [t.source_key for _u, _m, r, _s in parse(env).values() for t in r.turns]
    b = [t.source_key for _u, _m, r, _s in parse(env).values() for t in r.turns]
    assert a == b and len(set(a)) == 2


def _append(path: Path, *records: dict) -> None:
    with open(path, "a", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")


def test_aborted_turn_with_partial_text_is_cancelled(env, tmp_path):
    [f] = (tmp_path / ".codex" / "sessions").rglob(f"*{SYN}.jsonl")
    ev = lambda ts, p: {"timestamp": ts, "type": "event_msg", "payload": p}  # noqa: E731
    ri = lambda ts, p: {"timestamp": ts, "type": "response_item", "payload": p}  # noqa: E731
    _append(f,
            ev("2026-03-03T10:40:00Z", {"type": "user_message", "message": "try again"}),
            ri("2026-03-03T10:40:01Z", {"type": "message", "role": "assistant",
                                        "content": [{"type": "output_text", "text": "Starting the test…"}]}),
            ri("2026-03-03T10:40:02Z", {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c9"}),
            ri("2026-03-03T10:40:03Z", {"type": "function_call_output", "call_id": "c9",
                                        "output": "Exit code: 2\nOutput:\nno tests ran"}),
            ev("2026-03-03T10:40:04Z", {"type": "turn_aborted", "reason": "interrupted"}),
            ev("2026-03-03T10:41:00Z", {"type": "user_message", "message": "ok stop"}),
            ri("2026-03-03T10:41:01Z", {"type": "message", "role": "assistant",
                                        "content": [{"type": "output_text", "text": "Stopped."}]}),
            {"timestamp": "2026-03-03T10:41:02Z", "type": "event_msg"},          # payload missing
            {"type": "response_item", "payload": {"type": "message", "role": "user", "content": []}})
    _u, _m, res, stats = parse({"HOME": str(tmp_path)})[SYN]
    assert [(t.request, t.reply, t.status) for t in res.turns] == [
        ("Add a --since flag to the sync command\n[image: image/png]", "Added `--since` to `sync` (src/remem/cli.py).",
         "succeeded"),
        ("now write a test", "", "cancelled"),        # never got a reply; the next request closes it
        ("try again", "Starting the test…", "cancelled"),
        ("ok stop", "Stopped.", "succeeded")]
    assert res.turns[2].actions[0].is_error           # non-zero exit code
    assert res.incomplete == 0
    assert stats.errors == {"missing timestamp": 1}
    assert stats.unknown == {"unknown record type: event_msg": 1}


def test_event_only_and_response_only_files_both_import(tmp_path):
    day = tmp_path / ".codex" / "sessions" / "2026" / "01" / "01"
    day.mkdir(parents=True)
    meta = {"timestamp": "2026-01-01T00:00:00Z", "type": "session_meta", "payload": {"id": "sid-x", "cwd": "/w"}}
    events = day / "rollout-2026-01-01T00-00-00-aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa.jsonl"
    _append(events, meta,
            {"timestamp": "2026-01-01T00:00:01Z", "type": "event_msg", "payload": {"type": "user_message", "message": "q"}},
            {"timestamp": "2026-01-01T00:00:02Z", "type": "event_msg", "payload": {"type": "agent_message", "message": "a"}})
    items = day / "rollout-2026-01-01T00-00-00-bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb.jsonl"
    _append(items,
            {"timestamp": "2026-01-01T00:00:01Z", "type": "response_item",
             "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "q2"}]}},
            {"timestamp": "2026-01-01T00:00:02Z", "type": "response_item",
             "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "a2"}]}})
    got = {u.session_id: [(t.source_key, t.request, t.reply) for t in assemble_turns(SRC.read(u), agent="codex").turns]
           for u in scan(SRC, {"HOME": str(tmp_path)})}
    assert got == {
        "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa": [("codex:sid-x:sid-x@103", "q", "a")],
        "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb": [("codex:bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb:"
                                                  "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb@0", "q2", "a2")],
    }

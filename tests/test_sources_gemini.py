"""Gemini CLI chats (~/.gemini/tmp/*/chats) → turns, against the agent fixtures (tests/fixtures/agents): replay, rewind, upserts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import copy_fixture
from remem.sources import SOURCES, ParseStats, assemble_turns, scan

SRC = SOURCES["gemini"]
SID = "5d7a9e3c-1b2f-4a6d-8c0e-9f1a2b3c4d5e"
STEM = "session-2026-03-03T10-00-5d7a9e3c"



@pytest.fixture
def gemini_home(tmp_path) -> Path:
    return copy_fixture("gemini", tmp_path / ".gemini")


@pytest.fixture
def chats(gemini_home) -> Path:
    return gemini_home / "tmp" / "remem-demo" / "chats"


@pytest.fixture
def env(tmp_path, gemini_home) -> dict[str, str]:
    return {"HOME": str(tmp_path)}


def run(env, stats: ParseStats | None = None):
    stats = stats if stats is not None else ParseStats()
    units = scan(SRC, env, stats)
    return units, [t for u in units for t in assemble_turns(SRC.read(u, stats), agent="gemini").turns]


def test_jsonl_wins_over_legacy_json_of_same_session(env, gemini_home):
    assert SRC.discover(env) == [gemini_home]
    units, [t] = run(env)
    assert [u.path.name for u in units] == [f"{STEM}.jsonl"]
    assert (t.request, t.reply) == ("Add a --since flag to the sync command", "Added `--since` to `sync`.")
    [a] = t.actions
    assert (a.name, a.call_id, a.output, a.is_error) == (
        "run_shell_command", "run_shell_command-1772532003-1", "src/remem/cli.py:88:def sync(args):", False)
    assert json.loads(a.input) == {"command": "rg -n 'def sync' src"}
    assert t.source_key == f"gemini:{SID}:m-u1"
    assert (t.project, t.model, t.status) == ("remem-demo", "gemini-2.5-pro", "succeeded")   # no projects.json
    assert t.message_ids == ["m-u1", "m-g1:tools", "m-g1"]
    assert [x.source_key for x in run(env)[1]] == [t.source_key]


def test_upsert_last_write_wins(env, chats):
    unit = scan(SRC, env)[0]
    msgs = list(SRC.read(unit))
    assert [m.source_id for m in msgs] == ["m-u1", "m-g1:tools", "m-g1"]        # m-g1 once, with its final content
    assert msgs[2].text == "Added `--since` to `sync`."


def test_legacy_json_alone_gives_the_same_turn(env, chats):
    (chats / f"{STEM}.jsonl").unlink()
    units, [t] = run(env)
    assert units[0].path.suffix == ".json"
    assert (t.source_key, t.reply) == (f"gemini:{SID}:m-u1", "Added `--since` to `sync`.")


def test_projects_json_maps_the_directory_to_a_path(env, gemini_home):
    (gemini_home / "projects.json").write_text(json.dumps({"projects": {"/home/alice/proj/remem-demo": "remem-demo"}}))
    _, [t] = run(env)
    assert t.project == "/home/alice/proj/remem-demo"


def _append(path: Path, *records: dict) -> None:
    with open(path, "a", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")


def test_rewind_drops_the_message_and_everything_after(env, chats):
    f = chats / f"{STEM}.jsonl"
    _append(f,
            {"id": "m-u2", "timestamp": "2026-03-03T10:01:00Z", "type": "user", "content": [{"text": "wrong question"}]},
            {"id": "m-g2", "timestamp": "2026-03-03T10:01:05Z", "type": "gemini", "content": "wrong answer"},
            {"$rewindTo": "m-u2"},
            {"id": "m-u3", "timestamp": "2026-03-03T10:02:00Z", "type": "user", "content": "better question"},
            {"id": "m-e3", "timestamp": "2026-03-03T10:02:01Z", "type": "error", "content": "quota"},
            {"id": "m-g3", "timestamp": "2026-03-03T10:02:05Z", "type": "gemini", "content": [{"text": "better answer"}],
             "toolCalls": [{"id": "t3", "name": "read_file", "args": {"p": "x"}, "status": "error",
                            "result": [{"functionResponse": {"response": {"error": "not found"}}}]}]},
            {"$rewindTo": "no-such-id"},
            {"id": "m-x", "timestamp": "2026-03-03T10:03:00Z", "type": "telemetry"},
            {"something": "else"})
    stats = ParseStats()
    _, ts = run(env, stats)
    assert [(t.request, t.reply, t.status) for t in ts] == [
        ("Add a --since flag to the sync command", "Added `--since` to `sync`.", "succeeded"),
        ("better question", "better answer", "failed")]
    assert [(a.name, a.output, a.is_error) for a in ts[1].actions] == [("read_file", "not found", True)]
    assert "wrong" not in repr(ts)
    assert stats.errors == {"rewind to unknown id": 1}
    assert stats.unknown == {"unknown message type: telemetry": 1, "unknown record: none": 1}
    assert stats.ignored["error"] == 1


def test_set_with_messages_replaces_the_checkpoint(env, chats):
    f = chats / f"{STEM}.jsonl"
    _append(f, {"$set": {"messages": [
        {"id": "c-u", "timestamp": "2026-03-03T11:00:00Z", "type": "user", "content": "checkpoint q"},
        {"id": "c-g", "timestamp": "2026-03-03T11:00:01Z", "type": "gemini", "content": "checkpoint a"}],
        "summary": "restored"}})
    _, ts = run(env)
    assert [(t.request, t.reply) for t in ts] == [("checkpoint q", "checkpoint a")]


def test_subagent_log_folds_into_parent(env, chats):
    sub = chats / SID
    sub.mkdir()
    _append(sub / "sub-1.jsonl",
            {"sessionId": "sub-1", "kind": "subagent"},
            {"id": "s-u", "timestamp": "2026-03-03T10:00:04Z", "type": "user", "content": "sub task"},
            {"id": "s-g", "timestamp": "2026-03-03T10:00:05Z", "type": "gemini", "content": "sub result",
             "toolCalls": [{"id": "st", "name": "glob", "args": {}, "status": "success", "result": []}]})
    units, [t] = run(env)
    assert [p.name for p in units[0].parts] == ["sub-1.jsonl"]
    assert t.reply == "Added `--since` to `sync`."
    assert [a.name for a in t.actions] == ["run_shell_command", "glob"]
    assert {"s-u", "s-g"} <= set(t.message_ids)


def test_truncated_tail_and_non_utf8(env, chats):
    f = chats / f"{STEM}.jsonl"
    with open(f, "ab") as fh:
        fh.write(b'{"id": "bad", "type": "user", "content": "\xc3\x28"}\n')
        fh.write(b'{"id": "m-u9", "timestamp": "2026-03-03T10:09:00Z", "type": "us')
    stats = ParseStats()
    _, ts = run(env, stats)
    assert len(ts) == 1 and stats.errors == {"non-utf8 bytes": 1} and stats.partial_tail

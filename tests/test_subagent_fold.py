"""Sub-agent work folds into the parent's turn (Codex rollouts, Gemini sub-agent logs), end to end
through the sync engine on a temporary HOME; an orphan sub-agent is still imported on its own."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import copy_fixture
from remem.model import Message, ToolCall
from remem.sources.codex import SOURCE as CODEX
from remem.sources.codex import fold_groups, rollout_head
from remem.sources.sync import run_sync
from remem.sources.turns import assemble_turns

PARENT = "0199aaaa-0000-7000-8000-000000000001"
CHILD = "0199bbbb-0000-7000-8000-000000000002"
GRANDCHILD = "0199cccc-0000-7000-8000-000000000003"


# ----------------------------------------------------------------------------- helpers


def _write(path: Path, records: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
    return path


def _rollout(sid: str) -> Path:
    return Path(os.environ["HOME"]) / ".codex" / "sessions" / "2026" / "03" / "04" / (
        f"rollout-2026-03-04T10-00-00-{sid}.jsonl")


def ts(sec: int) -> str:
    return f"2026-03-04T10:{sec // 60:02d}:{sec % 60:02d}.000Z"


def meta(sid: str, sec: int, parent: str = "") -> dict:
    source: object = "cli"
    if parent:
        source = {"subagent": {"thread_spawn": {"parent_thread_id": parent, "depth": 1,
                                                "agent_nickname": "Scout", "agent_role": "explorer"}}}
    return {"timestamp": ts(sec), "type": "session_meta",
            "payload": {"id": sid, "timestamp": ts(sec), "cwd": "/w/app", "originator": "codex_cli_rs",
                        "cli_version": "0.130.0", "source": source, "base_instructions": {"text": "x" * 5000}}}


def prompt(sec: int, text: str) -> dict:
    return {"timestamp": ts(sec), "type": "event_msg", "payload": {"type": "user_message", "message": text}}


def say(sec: int, text: str) -> dict:
    return {"timestamp": ts(sec), "type": "event_msg", "payload": {"type": "agent_message", "message": text}}


def call(sec: int, name: str, call_id: str, args: dict | None = None) -> dict:
    return {"timestamp": ts(sec), "type": "response_item",
            "payload": {"type": "function_call", "name": name, "arguments": json.dumps(args or {}),
                        "call_id": call_id}}


def output(sec: int, call_id: str, text: str) -> dict:
    return {"timestamp": ts(sec), "type": "response_item",
            "payload": {"type": "function_call_output", "call_id": call_id, "output": text}}


def context(sec: int) -> dict:
    return {"timestamp": ts(sec), "type": "turn_context", "payload": {"cwd": "/w/app", "model": "gpt-5.3-codex"}}


def parent_records() -> list[dict]:
    """A parent turn that spawns a sub-agent, waits for it and replies."""
    return [meta(PARENT, 0), context(1), prompt(2, "Why is sync slow?"),
            call(3, "spawn_agent", "call_spawn", {"message": "profile the sync loop"}),
            output(4, "call_spawn", json.dumps({"agent_id": CHILD})),
            call(5, "wait", "call_wait", {"ids": [CHILD]}),
            output(30, "call_wait", "completed: the loop re-parses every file"),
            say(31, "Sync re-parsed every file; it now checks size and mtime first.")]


def child_records(parent: str = PARENT) -> list[dict]:
    """The sub-agent's own rollout: its task, two tool calls, its report."""
    return [meta(CHILD, 4, parent), context(5), prompt(6, "profile the sync loop"),
            call(7, "shell", "call_c1", {"cmd": "py-spy top"}), output(9, "call_c1", "parse_file 91%"),
            call(10, "shell", "call_c2", {"cmd": "rg parse_file"}), output(11, "call_c2", "sync.py:40"),
            say(12, "The loop re-parses every file.")]


def codex_turns(mem) -> list[dict]:
    rows = mem.store.conn.execute("SELECT session_id, source_key, request, reply, actions_json FROM turns "
                          "WHERE agent = 'codex' AND deleted = 0 ORDER BY started_at").fetchall()
    return [{**dict(r), "actions": json.loads(r["actions_json"])} for r in rows]


def sync(mem, agent: str = "codex") -> dict:
    [src] = run_sync(mem, [agent])["sources"]
    return src


# ----------------------------------------------------------------------------- Codex


def test_codex_subagent_folds_into_parent_turn_and_resync_adds_nothing(mem):
    _write(_rollout(PARENT), parent_records())
    _write(_rollout(CHILD), child_records())
    first = sync(mem)
    assert (first["units_total"], first["turns_added"], first["failed"]) == (1, 1, 0)
    [t] = codex_turns(mem)
    assert t["session_id"] == PARENT
    assert (t["request"], t["reply"]) == ("Why is sync slow?",
                                          "Sync re-parsed every file; it now checks size and mtime first.")
    # the sub-agent's tool calls join the parent's trajectory, in time order (after the wait began)
    assert [(a["name"], a["call_id"], a["output"]) for a in t["actions"]] == [
        ("spawn_agent", "call_spawn", json.dumps({"agent_id": CHILD})),
        ("wait", "call_wait", "completed: the loop re-parses every file"),
        ("shell", "call_c1", "parse_file 91%"), ("shell", "call_c2", "sync.py:40")]
    # its prompt and report are no memories of their own
    assert "profile the sync loop" not in t["request"] and t["reply"] != "The loop re-parses every file."
    assert not mem.store.conn.execute("SELECT 1 FROM turns WHERE session_id = ?", (CHILD,)).fetchone()
    second = sync(mem)
    assert (second["turns_added"], second["turns_updated"], second["units_unchanged"]) == (0, 0, 1)
    again = run_sync(mem, ["codex"], full=True)["total"]
    assert (again["turns_added"], again["turns_updated"], again["duplicates"]) == (0, 0, 1)


def test_parent_resynced_after_its_subagent_appears_updates_the_turn(mem):
    _write(_rollout(PARENT), parent_records())
    assert sync(mem)["turns_added"] == 1
    [before] = codex_turns(mem)
    assert [a["name"] for a in before["actions"]] == ["spawn_agent", "wait"]
    _write(_rollout(CHILD), child_records())
    res = sync(mem)
    assert (res["turns_added"], res["turns_updated"], res["turns_removed"]) == (0, 1, 0)
    [after] = codex_turns(mem)
    assert after["source_key"] == before["source_key"]
    assert [a["name"] for a in after["actions"]] == ["spawn_agent", "wait", "shell", "shell"]
    assert sync(mem)["turns_added"] == 0


def test_orphan_codex_subagent_is_imported_on_its_own(mem):
    _write(_rollout(CHILD), child_records())
    [unit] = CODEX.list_units(Path(os.environ["HOME"]) / ".codex")
    assert unit.meta["orphan"] is True and unit.parts == ()
    res = sync(mem)
    assert (res["turns_added"], res["failed"], res["skipped_incomplete"]) == (1, 0, 0)
    [t] = codex_turns(mem)
    assert (t["session_id"], t["request"], t["reply"]) == (CHILD, "profile the sync loop",
                                                           "The loop re-parses every file.")
    assert [a["call_id"] for a in t["actions"]] == ["call_c1", "call_c2"]
    assert sync(mem)["turns_added"] == 0


def test_parent_appearing_after_an_orphan_import_takes_over_its_turns(mem):
    _write(_rollout(CHILD), child_records())
    assert sync(mem)["turns_added"] == 1
    _write(_rollout(PARENT), parent_records())
    res = sync(mem)
    assert (res["turns_added"], res["turns_removed"]) == (1, 1)
    [t] = codex_turns(mem)
    assert t["session_id"] == PARENT and [a["call_id"] for a in t["actions"]] == [
        "call_spawn", "call_wait", "call_c1", "call_c2"]
    assert mem.store.conn.execute("SELECT count(*) FROM checkpoints WHERE source = 'codex'").fetchone()[0] == 1
    res = sync(mem)
    assert (res["turns_added"], res["turns_updated"], res["turns_removed"]) == (0, 0, 0)


def test_nested_subagent_folds_into_the_top_parent(mem):
    _write(_rollout(PARENT), parent_records())
    _write(_rollout(CHILD), child_records())
    _write(_rollout(GRANDCHILD), [meta(GRANDCHILD, 8, CHILD), prompt(8, "read sync.py"),
                                  call(8, "read_file", "call_g1"), output(8, "call_g1", "def sync(): ..."),
                                  say(9, "sync.py read")])
    res = sync(mem)
    assert (res["units_total"], res["turns_added"]) == (1, 1)
    [t] = codex_turns(mem)
    assert [a["call_id"] for a in t["actions"]] == ["call_spawn", "call_wait", "call_c1", "call_g1", "call_c2"]


def test_forked_subagent_copies_of_parent_history_are_dropped(mem):
    """A forked sub-agent's rollout repeats the parent's history (and its session_meta) before its own
    work; the copies must not duplicate the parent's tool calls or re-key the sub-agent's messages."""
    earlier = [prompt(2, "List the sync modules."), call(2, "shell", "call_ls", {"cmd": "ls"}),
               output(2, "call_ls", "sync.py"), say(2, "Just sync.py.")]
    parent = [meta(PARENT, 0), context(1), *earlier, prompt(3, "Why is sync slow?"),
              call(3, "spawn_agent", "call_spawn", {"message": "profile the sync loop", "fork_context": True}),
              output(4, "call_spawn", json.dumps({"agent_id": CHILD})),
              call(5, "wait", "call_wait"), output(30, "call_wait", "completed"),
              say(31, "Sync re-parsed every file.")]
    _write(_rollout(PARENT), parent)
    copied = [meta(PARENT, 4), context(4), *[{**r, "timestamp": ts(4)} for r in earlier],
              {**prompt(3, "Why is sync slow?"), "timestamp": ts(4)},
              {**call(3, "spawn_agent", "call_spawn"), "timestamp": ts(4)},
              {"timestamp": ts(4), "type": "fork_reference",
               "payload": {"rollout_path": str(_rollout(PARENT)), "nth_user_message": 18446744073709551615}},
              output(4, "call_spawn", "You are the newly spawned agent.")]
    _write(_rollout(CHILD), [meta(CHILD, 4, PARENT), *copied, *child_records()[1:]])
    res = sync(mem)
    assert (res["turns_added"], res["failed"]) == (2, 0), res["errors"]
    first, second = codex_turns(mem)
    assert [a["call_id"] for a in first["actions"]] == ["call_ls"]
    assert [(a["call_id"], a["output"]) for a in second["actions"]] == [
        ("call_spawn", json.dumps({"agent_id": CHILD})), ("call_wait", "completed"),
        ("call_c1", "parse_file 91%"), ("call_c2", "sync.py:40")]
    assert {first["session_id"], second["session_id"]} == {PARENT}
    assert sync(mem)["turns_added"] == 0


def test_rollout_head_reads_the_parent_from_the_first_line(tmp_path):
    child = _write(tmp_path / f"rollout-x-{CHILD}.jsonl", child_records())
    plain = _write(tmp_path / f"rollout-x-{PARENT}.jsonl", parent_records())
    review = _write(tmp_path / "rollout-review.jsonl",
                    [{**meta("rev-1", 0), "payload": {"id": "rev-1", "source": {"subagent": "review"}}}])
    bare = _write(tmp_path / "rollout-old.jsonl", [{"id": "old-1", "timestamp": ts(0)}])
    assert rollout_head(child) == (CHILD, PARENT)
    assert rollout_head(plain) == (PARENT, "")
    assert rollout_head(review) == ("rev-1", "")          # review/compact sub-agents name no parent
    assert rollout_head(bare) == ("old-1", "")
    assert rollout_head(tmp_path / "gone.jsonl") == ("gone", "")


@pytest.mark.parametrize(("heads", "expected"), [
    ({"p": ("P", ""), "c": ("C", "P")}, {"p": ["c"]}),
    ({"c": ("C", "P")}, {"c": []}),                                           # orphan
    ({"p": ("P", ""), "c": ("C", "P"), "g": ("G", "C")}, {"p": ["c", "g"]}),   # nested
    ({"c": ("C", "X"), "g": ("G", "C")}, {"c": ["g"]}),                        # orphan with a child
    ({"a": ("A", "B"), "b": ("B", "A")}, {"a": [], "b": []}),                  # a loop: each read once
    ({"a": ("A", "A")}, {"a": []}),
    ({"p": ("P", ""), "q": ("Q", "")}, {"p": [], "q": []}),
])
def test_fold_groups(heads, expected):
    assert fold_groups(heads) == expected


# ----------------------------------------------------------------------------- Gemini


GEMINI_SID = "5d7a9e3c-1b2f-4a6d-8c0e-9f1a2b3c4d5e"
LOST = "77777777-aaaa-4bbb-8ccc-dddddddddddd"


def _gemini_sub(chats: Path, parent: str, name: str = "sub-9") -> Path:
    return _write(chats / parent / f"{name}.jsonl", [
        {"sessionId": name, "kind": "subagent"},
        {"id": f"{name}-u", "timestamp": "2026-03-03T10:00:04Z", "type": "user", "content": "find the flag parser"},
        {"id": f"{name}-g", "timestamp": "2026-03-03T10:00:05Z", "type": "gemini", "content": "cli.py:88",
         "toolCalls": [{"id": f"{name}-t", "name": "glob", "args": {"p": "*.py"}, "status": "success",
                        "result": []}]}])


@pytest.fixture
def chats() -> Path:
    home = Path(os.environ["HOME"])
    copy_fixture("gemini", home / ".gemini")
    return home / ".gemini" / "tmp" / "remem-demo" / "chats"


def gemini_turns(mem) -> list[tuple[str, str, list[str]]]:
    rows = mem.store.conn.execute("SELECT session_id, request, actions_json FROM turns WHERE agent = 'gemini' "
                          "AND deleted = 0 ORDER BY session_id").fetchall()
    return [(r[0], r[1], [a["name"] for a in json.loads(r[2])]) for r in rows]


def test_gemini_subagent_folds_and_orphan_is_imported_on_its_own(mem, chats):
    _gemini_sub(chats, GEMINI_SID)
    _gemini_sub(chats, LOST, "sub-lost")
    res = sync(mem, "gemini")
    assert (res["units_total"], res["failed"]) == (2, 0)
    got = gemini_turns(mem)
    assert got == [(GEMINI_SID, "Add a --since flag to the sync command", ["run_shell_command", "glob"]),
                   ("sub-lost", "find the flag parser", ["glob"])]
    assert sync(mem, "gemini")["turns_added"] == 0


def test_gemini_parent_appearing_after_an_orphan_import_takes_over(mem, chats):
    _gemini_sub(chats, LOST)
    sync(mem, "gemini")
    assert ("sub-9", "find the flag parser", ["glob"]) in gemini_turns(mem)
    _write(chats / f"session-2026-03-03T11-00-{LOST[:8]}.jsonl", [
        {"sessionId": LOST, "projectHash": "h", "startTime": "2026-03-03T10:00:00Z"},
        {"id": "p-u", "timestamp": "2026-03-03T10:00:01Z", "type": "user", "content": "where is the flag parsed?"},
        {"id": "p-g", "timestamp": "2026-03-03T10:00:09Z", "type": "gemini", "content": "In cli.py."}])
    res = sync(mem, "gemini")
    assert (res["turns_added"], res["turns_removed"]) == (1, 1)
    assert (LOST, "where is the flag parsed?", ["glob"]) in gemini_turns(mem)
    assert not [t for t in gemini_turns(mem) if t[0] == "sub-9"]


# ----------------------------------------------------------------------------- turn assembly


def test_sidechain_activity_after_the_parent_reply_keeps_the_turn_complete():
    side = {"sidechain": True}
    msgs = [Message("u", "s", "user", text="q", ts=1, real_user=True),
            Message("a", "s", "assistant", text="spawned a helper; done here", ts=2),
            Message("sa", "s", "assistant", ts=3, tool_calls=[ToolCall(name="Grep", call_id="g")], **side),
            Message("sr", "s", "tool", ts=4, tool_results={"g": ("hit", True)}, **side)]
    res = assemble_turns(msgs, agent="x")
    [t] = res.turns
    assert res.incomplete == 0 and t.reply == "spawned a helper; done here"
    assert [(a.name, a.is_error) for a in t.actions] == [("Grep", True)] and t.status == "succeeded"


# ----------------------------------------------------------------------------- OpenCode, Hermes (already folded by
# their database readers; an orphan child must still be imported on its own)


def test_opencode_orphan_subagent_session_is_imported_on_its_own(mem):
    import sqlite3

    data = copy_fixture("opencode", Path(os.environ["HOME"]) / ".local" / "share" / "opencode")
    con = sqlite3.connect(data / "opencode.db")
    with con:
        con.execute("INSERT INTO session (id, project_id, parent_id, slug, directory, title, version, time_created, "
                    "time_updated) SELECT 'ses_orphan', project_id, 'ses_gone', 'o', directory, 'o', version, "
                    "1772540000000, 1772540002000 FROM session LIMIT 1")
        for mid, role, t0, part in (
                ("msg_o1", "user", 1772540000000, {"type": "text", "text": "grep for the flag"}),
                ("msg_o2", "assistant", 1772540002000, {"type": "text", "text": "found it in cli.py"})):
            con.execute("INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES (?,?,?,?,?)",
                        (mid, "ses_orphan", t0, t0, json.dumps({"role": role, "time": {"created": t0}})))
            con.execute("INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) "
                        "VALUES (?,?,?,?,?,?)", (f"prt_{mid}", mid, "ses_orphan", t0, t0, json.dumps(part)))
    con.close()
    res = sync(mem, "opencode")
    assert res["failed"] == 0
    rows = mem.store.conn.execute("SELECT session_id, request FROM turns WHERE agent = 'opencode' ORDER BY session_id")
    assert [tuple(r) for r in rows] == [("ses_3a1f9e2c7ffeAbCdEfGhIjKlMn", "Add a --since flag to the sync command\n"
                                         "[image: image/png]"), ("ses_orphan", "grep for the flag")]
    assert sync(mem, "opencode")["turns_added"] == 0


def test_hermes_orphan_delegate_is_imported_on_its_own(mem):
    import sqlite3

    hermes = copy_fixture("hermes", Path(os.environ["HOME"]) / ".hermes")
    con = sqlite3.connect(hermes / "state.db")
    with con:
        con.execute("PRAGMA foreign_keys = OFF")
        con.execute("INSERT INTO sessions (id, source, parent_session_id, started_at, model_config) VALUES (?,?,?,?,?)",
                    ("delegate-9", "cli", "gone-1", 1772540000.0, json.dumps({"_delegate_from": "gone-1"})))
        for i, (role, text) in enumerate((("user", "run the linters"), ("assistant", "ruff: clean"))):
            con.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES (?,?,?,?)",
                        ("delegate-9", role, text, 1772540001.0 + i))
    con.close()
    res = sync(mem, "hermes")
    assert res["failed"] == 0
    rows = mem.store.conn.execute("SELECT request, reply FROM turns WHERE agent = 'hermes' AND session_id = 'delegate-9'")
    assert [tuple(r) for r in rows] == [("run the linters", "ruff: clean")]
    assert sync(mem, "hermes")["turns_added"] == 0

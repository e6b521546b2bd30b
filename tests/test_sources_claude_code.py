"""Claude Code history (~/.claude/projects) → messages → turns, against the agent fixtures (tests/fixtures/agents)."""

from __future__ import annotations

import json

import pytest

from conftest import copy_fixture
from remem.sources import SOURCES, ParseStats, assemble_turns, scan

SRC = SOURCES["claude-code"]
DEMO = "7f3c2a10-5b6e-4c1d-9a8b-0e1f2a3b4c5d"


@pytest.fixture
def env(tmp_path) -> dict[str, str]:
    copy_fixture("claude-code", tmp_path / ".claude")
    return {"HOME": str(tmp_path)}


def parse(env):
    out = {}
    for unit in scan(SRC, env):
        stats = ParseStats()
        res = assemble_turns(SRC.read(unit, stats), agent="claude-code")
        out[unit.path.name] = (unit, res, stats)
    return out


def test_discovery_and_units(env, tmp_path):
    assert SRC.discover(env) == [tmp_path / ".claude" / "projects"]
    units = {u.path.name: u for u in scan(SRC, env)}
    assert sorted(units) == ["7f3c2a10-5b6e-4c1d-9a8b-0e1f2a3b4c5d.jsonl", "agent-showcol1.jsonl",
                             "edge_cases.jsonl", "s1_compact_after_rewind.jsonl", "session_b.jsonl",
                             "test_session_representative.jsonl"]
    demo = units[f"{DEMO}.jsonl"]
    assert [p.name for p in demo.parts] == ["agent-a1b2c3d4.jsonl"]     # sub-agent is part of the session
    assert demo.size == sum(p.stat().st_size for p in (demo.path, *demo.parts))
    assert demo.key == f"claude-code:{demo.path}" and demo.session_id == DEMO
    assert units["agent-showcol1.jsonl"].meta["orphan"] is True


def test_turn_counts_per_file(env):
    got = {name: (len(res.turns), res.incomplete) for name, (_u, res, _s) in parse(env).items()}
    assert got == {
        f"{DEMO}.jsonl": (1, 1),                    # 2nd prompt was interrupted before any reply
        "edge_cases.jsonl": (2, 1),
        "s1_compact_after_rewind.jsonl": (5, 0),    # both rewind branches kept, compaction summary skipped
        "session_b.jsonl": (1, 1),
        "test_session_representative.jsonl": (3, 1),
        "agent-showcol1.jsonl": (1, 0),             # orphan sub-agent transcript
    }


def test_modern_session_turn_content(env):
    _u, res, stats = parse(env)[f"{DEMO}.jsonl"]
    [t] = res.turns
    assert t.request == ("Why does test_retry_backoff fail intermittently? Here is the CI screenshot.\n"
                         "[image: image/png]")
    assert t.reply == ("The assertion uses wall-clock time while `retry.py:42` sleeps with jitter; "
                       "inject a fake clock instead.")
    assert [(a.name, a.call_id) for a in t.actions] == [("note", ""), ("Read", "toolu_01R"), ("Task", "toolu_01T")]
    assert t.actions[0].output == "Let me look at the test first."
    assert json.loads(t.actions[1].input) == {"file_path": "/home/alice/proj/remem-demo/tests/test_retry.py"}
    assert "assert elapsed < 0.35" in t.actions[1].output
    assert t.actions[2].output == "src/http/retry.py:42 time.sleep(delay)"
    assert t.source_key == f"claude-code:{DEMO}:u-001"
    assert (t.project, t.model, t.status) == ("/home/alice/proj/remem-demo", "claude-sonnet-4-5-20250929", "succeeded")
    # streaming split: three lines of msg_01AAA are one message; sub-agent lines fold into this turn
    assert t.message_ids[:6] == ["u-001", "u-001b", "a-001", "a-002", "a-003", "u-002"]
    assert {"sa-u1", "sa-a1"} <= set(t.message_ids)
    assert t.started_at == pytest.approx(1772442000.0) and t.ended_at == pytest.approx(1772442300.0)
    assert stats.bad == 0 and stats.ignored["summary"] == 1 and stats.ignored["file-history-snapshot"] == 1


def test_modern_session_messages_classify_non_prompts(env, tmp_path):
    unit = next(u for u in scan(SRC, env) if u.session_id == DEMO)
    msgs = {m.source_id: m for m in SRC.read(unit)}
    assert msgs["u-000"].extra["kind"] == "meta" and not msgs["u-000"].real_user
    assert msgs["u-001b"].extra["kind"] == "attachment" and "base64" not in msgs["u-001b"].text
    assert "iVBOR" not in "".join(m.text for m in msgs.values())
    assert msgs["u-004"].extra["kind"] == "command" and not msgs["u-004"].real_user
    assert msgs["u-005"].real_user and msgs["u-005"].text == "Please apply the fix."    # system-reminder stripped
    assert msgs["u-006"].tool_results == {"toolu_01E": ("<tool_use_error>File has been modified since read"
                                                        "</tool_use_error>", True)}
    assert msgs["u-007"].extra["kind"] == "interrupt" and msgs["u-007"].status == "cancelled"
    a = msgs["a-001"]
    assert a.text == "Let me look at the test first." and [c.name for c in a.tool_calls] == ["Read"]
    assert a.extra["source_ids"] == ["a-001", "a-002", "a-003"]
    assert "a-002" not in msgs and "a-003" not in msgs
    assert msgs["sa-a1"].sidechain and msgs["sa-a1"].session_id == DEMO


def test_edge_cases_file(env):
    _u, res, stats = parse(env)["edge_cases.jsonl"]
    assert [t.request[:30] for t in res.turns] == ["Here's a message with some **m", "Let's test a very long message"]
    t = res.turns[1]
    assert t.reply.startswith("I see the long Lorem ipsum text wraps nicely!")
    assert [(a.name, a.is_error) for a in t.actions] == [("FailingTool", True), ("MultiEdit", False)]
    assert t.status == "succeeded"        # the error was not the final state
    # bad lines: 3 non-object JSON values, an object without type, a record with no timestamp
    assert stats.errors == {"not a json object": 3, "missing timestamp": 1}
    assert stats.unknown == {"unknown record type: none": 1}
    assert stats.ignored["duplicate uuid"] == 1


def test_rewind_and_compaction_file(env):
    _u, res, _s = parse(env)["s1_compact_after_rewind.jsonl"]
    assert [(t.request, t.reply) for t in res.turns] == [
        ("Start", "Ready"), ("First attempt", "First answer"), ("Second attempt", "Second answer"),
        ("Keep going", "Kept going"), ("After compaction", "Final answer")]
    assert all(not t.request.startswith("This session is being continued") for t in res.turns)


def test_representative_file(env):
    _u, res, _s = parse(env)["test_session_representative.jsonl"]
    assert [(t.source_key, [a.name for a in t.actions]) for t in res.turns] == [
        ("claude-code:test_session:msg_001", []),
        ("claude-code:test_session:msg_003", ["Edit"]),
        ("claude-code:test_session:msg_007", ["Bash"])]
    assert res.turns[2].actions[0].output == "Hello, Alice!\nHello, Alice!\nHello, Alice!"


def test_orphan_subagent_transcript(env):
    _u, res, _s = parse(env)["agent-showcol1.jsonl"]
    [t] = res.turns
    assert t.request == "Survey src/web and report its layout, with a screenshot."
    assert t.reply.startswith("## The web module") and t.model == "claude-haiku-4-5-20251001"


def test_source_keys_are_stable_across_parses(env):
    first = sorted(t.source_key for _u, r, _s in parse(env).values() for t in r.turns)
    second = sorted(t.source_key for _u, r, _s in parse(env).values() for t in r.turns)
    assert first == second and len(first) == len(set(first)) == 13


def test_old_layout_subagent_beside_session_folds_into_parent(env, tmp_path):
    pdir = tmp_path / ".claude" / "projects" / "-home-alice-proj-remem-demo"
    (pdir / DEMO / "subagents" / "agent-a1b2c3d4.jsonl").rename(pdir / "agent-a1b2c3d4.jsonl")
    [unit] = [u for u in scan(SRC, env) if u.session_id == DEMO]
    assert [p.name for p in unit.parts] == ["agent-a1b2c3d4.jsonl"]
    [t] = assemble_turns(SRC.read(unit), agent="claude-code").turns
    assert {"sa-u1", "sa-a1"} <= set(t.message_ids)


def test_bad_input_is_counted_and_skipped(env, tmp_path):
    f = tmp_path / ".claude" / "projects" / "-tmp" / "session_b.jsonl"
    good = {"type": "assistant", "uuid": "late", "sessionId": "session_b", "timestamp": "2025-06-14T12:02:00Z",
            "message": {"id": "m-late", "model": "claude-3", "content": [{"type": "text", "text": "Glad it works."}]}}
    with open(f, "ab") as fh:
        fh.write(b"\n{broken json\n")
        fh.write(b'{"type": "user", "text": "\xff\xfe"}\n')
        fh.write(b'{"type": "queue-operation"}\n{"type": "brand-new-type"}\n')
        fh.write(json.dumps({**good, "uuid": "no-ts", "timestamp": None}).encode() + b"\n")
        fh.write(json.dumps({**good, "message": {**good["message"], "model": "<synthetic>"}, "uuid": "syn"}).encode()
                 + b"\n")
        fh.write(json.dumps(good).encode() + b"\n")
        fh.write(b'{"type": "user", "uuid": "half", "mess')        # still being written
    [unit] = [u for u in scan(SRC, env) if u.path == f]
    stats = ParseStats()
    res = assemble_turns(SRC.read(unit, stats), agent="claude-code")
    assert stats.errors == {"malformed json": 1, "non-utf8 bytes": 1, "missing timestamp": 1}
    assert stats.unknown == {"unknown record type: brand-new-type": 1}
    assert stats.partial_tail and stats.ignored["synthetic assistant"] == 1
    assert [t.reply[:30] for t in res.turns] == ["Indeed! This message is from a", "Glad it works."]
    assert res.incomplete == 0

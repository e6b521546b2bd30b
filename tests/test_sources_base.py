"""The source contract: JSONL streaming, bad-input accounting, timestamps, registry, discovery, memory."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

import remem.sources as sources
from remem.agents import CANONICAL
from remem.sources import SOURCES, ParseStats, assemble_turns, get_source, register_custom, scan
from remem.sources.base import iter_jsonl, parse_ts

# ----------------------------------------------------------------------------- JSONL reading


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_iter_jsonl_counts_bad_lines_with_reasons(tmp_path):
    good = json.dumps({"a": 1}).encode()
    data = b"\n".join([good, b"{not json", b"\xff\xfe broken utf8", b"", b"[1, 2]", b"42", good]) + b"\n"
    stats = ParseStats()
    objs = [o for _, o in iter_jsonl(_write(tmp_path / "f.jsonl", data), stats)]
    assert objs == [{"a": 1}, {"a": 1}]
    assert stats.errors == {"malformed json": 1, "non-utf8 bytes": 1, "not a json object": 2}
    assert stats.bad == 4 and stats.lines == 6
    assert not stats.partial_tail
    assert stats.offset == len(data)
    assert any("f.jsonl@" in s for s in stats.samples)


def test_truncated_last_line_is_ignored_silently(tmp_path):
    head = b'{"a": 1}\n'
    stats = ParseStats()
    objs = [o for _, o in iter_jsonl(_write(tmp_path / "f.jsonl", head + b'{"a": 2, "b": "hal'), stats)]
    assert objs == [{"a": 1}]
    assert stats.bad == 0 and stats.partial_tail
    assert stats.offset == len(head)      # the next read resumes at the half-written line


def test_complete_last_line_without_newline_is_used(tmp_path):
    stats = ParseStats()
    objs = [o for _, o in iter_jsonl(_write(tmp_path / "f.jsonl", b'{"a": 1}\n{"a": 2}'), stats)]
    assert objs == [{"a": 1}, {"a": 2}]
    assert not stats.partial_tail and stats.bad == 0


def test_offsets_identify_lines_and_reading_can_resume(tmp_path):
    data = b'{"n": 1}\n{"n": 2}\n{"n": 3}\n'
    f = _write(tmp_path / "f.jsonl", data)
    pairs = list(iter_jsonl(f, ParseStats()))
    assert [off for off, _ in pairs] == [0, 9, 18]
    assert [o["n"] for _, o in iter_jsonl(f, ParseStats(), start=9)] == [2, 3]


def test_missing_file_is_an_error_not_an_exception(tmp_path):
    stats = ParseStats()
    assert list(iter_jsonl(tmp_path / "nope.jsonl", stats)) == []
    assert stats.bad == 1


@pytest.mark.parametrize(("value", "expected"), [
    ("2026-03-02T09:00:00.000Z", 1772442000.0),
    ("2026-03-02T09:00:00+00:00", 1772442000.0),
    ("2026-03-02T09:00:00", 1772442000.0),            # naive = UTC
    (1772442000, 1772442000.0),
    (1772442000000, 1772442000.0),                    # ms
    (1772442000000000, 1772442000.0),                 # µs
    ("1772442000000", 1772442000.0),
    (None, None), ("", None), ("yesterday", None), (True, None), (0, None), ({"t": 1}, None),
])
def test_parse_ts_table(value, expected):
    assert parse_ts(value) == expected


# ----------------------------------------------------------------------------- registry


def test_every_canonical_agent_has_a_source():
    assert set(CANONICAL) <= set(SOURCES)
    for key, src in SOURCES.items():   # a second format of an agent (SpecStory's Cursor chats) has its own name
        assert getattr(src, "name", src.agent) == key and src.format
    assert get_source("Claude Code") is SOURCES["claude-code"]
    assert get_source("gemini-cli") is SOURCES["gemini"]


def test_register_custom_agent_reads_role_content_jsonl(tmp_path, monkeypatch):
    monkeypatch.setattr(sources.base, "SOURCES", dict(SOURCES))
    monkeypatch.setattr(sources, "SOURCES", sources.base.SOURCES)
    root = tmp_path / "my-agent-logs"
    (root / "p").mkdir(parents=True)
    lines = [{"role": "user", "content": "hi there", "timestamp": 1},
             {"role": "assistant", "content": "hello", "timestamp": 2}]
    (root / "p" / "s1.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    src = register_custom("My Agent", root)
    assert sources.base.SOURCES["my-agent"] is src
    with pytest.raises(ValueError):
        register_custom("my_agent", root)
    units = scan(src, {"HOME": str(tmp_path)})
    assert [u.session_id for u in units] == ["s1"]
    res = assemble_turns(src.read(units[0]), agent=src.agent)
    assert [(t.source_key, t.request, t.reply) for t in res.turns] == [("my-agent:s1:s1@0", "hi there", "hello")]


def test_register_source_rejects_non_sources():
    with pytest.raises(ValueError):
        sources.register_source(object())  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- discovery


def _mk(*paths: Path) -> None:
    for p in paths:
        p.mkdir(parents=True, exist_ok=True)


def test_discovery_uses_only_the_given_environment(tmp_path):
    home = tmp_path / "home"
    env = {"HOME": str(home)}
    assert all(src.discover(env) == [] for src in SOURCES.values())
    _mk(home / ".claude" / "projects", home / ".codex", home / ".hermes", home / ".openclaw",
        home / ".gemini" / "tmp", home / ".local" / "share" / "opencode" / "storage",
        home / ".workbuddy" / "projects", home / ".pi" / "agent" / "sessions", home / ".qwenworkcn" / "projects")
    cursor_user = home / "Library" / "Application Support" / "Cursor" / "User"   # macOS layout
    _mk(cursor_user / "globalStorage")
    (cursor_user / "globalStorage" / "state.vscdb").write_bytes(b"")
    found = {agent: src.discover(env) for agent, src in SOURCES.items()}
    assert found["claude-code"] == [home / ".claude" / "projects"]
    assert found["codex"] == [home / ".codex"]
    assert found["cursor"] == [cursor_user]
    assert found["opencode"] == [home / ".local" / "share" / "opencode"]
    assert found["hermes"] == [home / ".hermes"]
    assert found["openclaw"] == [home / ".openclaw"]
    assert found["gemini"] == [home / ".gemini"]
    assert found["workbuddy"] == [home / ".workbuddy" / "projects"]
    assert found["pi"] == [home / ".pi" / "agent" / "sessions"]
    assert found["qwenwork"] == [home / ".qwenworkcn" / "projects"]


def test_discovery_honours_override_variables(tmp_path):
    home = tmp_path / "home"
    claude, codex, hermes = tmp_path / "cc", tmp_path / "cx", tmp_path / "hh"
    xdg_config, xdg_data, oc_data = tmp_path / "xc", tmp_path / "xd", tmp_path / "ocd"
    _mk(home, claude / "projects", codex, hermes, xdg_config / "Cursor" / "User" / "globalStorage",
        xdg_data / "opencode" / "storage", oc_data)
    (xdg_config / "Cursor" / "User" / "globalStorage" / "state.vscdb").write_bytes(b"")
    (oc_data / "opencode.db").write_bytes(b"")
    env = {"HOME": str(home), "CLAUDE_CONFIG_DIR": str(claude), "CODEX_HOME": str(codex),
           "HERMES_HOME": str(hermes), "XDG_CONFIG_HOME": str(xdg_config), "XDG_DATA_HOME": str(xdg_data),
           "OPENCODE_DATA_DIR": str(oc_data)}
    assert SOURCES["claude-code"].discover(env) == [claude / "projects"]
    assert SOURCES["codex"].discover(env) == [codex]
    assert SOURCES["hermes"].discover(env) == [hermes]
    assert SOURCES["cursor"].discover(env) == [xdg_config / "Cursor" / "User"]
    assert SOURCES["opencode"].discover(env) == [oc_data, xdg_data / "opencode"]


# ----------------------------------------------------------------------------- memory


def _big_claude_file(path: Path, target_bytes: int) -> int:
    """A Claude-Code-like session of many turns with 20 kB tool outputs; returns the turn count."""
    blob = "x" * 20_000
    turns = 0
    with open(path, "w", encoding="utf-8") as f:
        while f.tell() < target_bytes:
            i = turns
            env = {"sessionId": "big", "cwd": "/big", "isSidechain": False}
            f.write(json.dumps({**env, "type": "user", "uuid": f"u{i}", "timestamp": 1e9 + i * 10,
                                "message": {"role": "user", "content": f"question {i}"}}) + "\n")
            f.write(json.dumps({**env, "type": "assistant", "uuid": f"a{i}", "timestamp": 1e9 + i * 10 + 1,
                                "message": {"id": f"m{i}", "model": "m", "content": [
                                    {"type": "tool_use", "id": f"c{i}", "name": "Bash", "input": {"cmd": "ls"}}]}}) + "\n")
            f.write(json.dumps({**env, "type": "user", "uuid": f"r{i}", "timestamp": 1e9 + i * 10 + 2,
                                "message": {"role": "user", "content": [
                                    {"type": "tool_result", "tool_use_id": f"c{i}", "content": blob}]}}) + "\n")
            f.write(json.dumps({**env, "type": "assistant", "uuid": f"b{i}", "timestamp": 1e9 + i * 10 + 3,
                                "message": {"id": f"n{i}", "model": "m", "content": [
                                    {"type": "text", "text": f"answer {i}"}]}}) + "\n")
            turns += 1
    return turns


def test_streaming_a_50mb_jsonl_keeps_memory_bounded(tmp_path):
    path = tmp_path / "big.jsonl"
    n = _big_claude_file(path, 50 * 1024 * 1024)
    size = path.stat().st_size
    src = SOURCES["claude-code"]
    unit = src.list_units(tmp_path)[0]

    tracemalloc.start()
    try:
        stats = ParseStats()
        count = sum(1 for _ in src.read(unit, stats))
        _, peak_read = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        res = assemble_turns(src.read(unit, ParseStats()), agent="claude-code", max_tool_output=200)
        _, peak_turns = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == 4 * n and stats.bad == 0
    assert len(res.turns) == n
    assert peak_read < size / 20, (peak_read, size)        # streaming: a few lines at a time
    assert peak_turns < size / 5, (peak_turns, size)       # only shortened turns are kept


def test_transient_versus_permanent_errors():
    s = ParseStats()
    s.error("malformed json")
    s.error("missing timestamp")
    s.unknown_type("x")
    assert s.bad == 2 and not s.transient and s.unknown == {"unknown record type: x": 1}
    s.error("database locked")
    assert s.transient
    assert ParseStats(partial_tail=True).transient

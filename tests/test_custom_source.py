"""Adding another agent by name: strict name matching, drafts, first import, boundary."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from remem.sources.custom import add_custom_source, find_installation, norm_name
from remem.sources.sync import detect_sources, run_sync


def _exe(d: Path, name: str) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    p = d / name
    p.write_text("#!/bin/sh\necho hi\n")
    p.chmod(p.stat().st_mode | stat.S_IXUSR)
    return p


def _chat(path: Path, turns: list[tuple[str, str, str]]) -> None:
    """turns: (timestamp, user text, assistant text) as plain role/content JSONL."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as f:
        for i, (ts, q, a) in enumerate(turns):
            f.write(json.dumps({"id": f"{path.stem}-{ts}-u{i}", "role": "user", "content": q, "timestamp": ts}) + "\n")
            f.write(json.dumps({"id": f"{path.stem}-{ts}-a{i}", "role": "assistant", "content": a,
                                "timestamp": ts}) + "\n")


@pytest.mark.parametrize("a,b,same", [
    ("kimi code", "Kimi-Code", True), ("kimi code", "kimi_code", True), ("kimi code", "KIMICODE", True),
    ("kimi code", "kimi", False), ("zcode", "z-code", True), ("coder", "codex", False),
    ("minimax code", "minimax-coder", False),
])
def test_name_matching_ignores_only_case_spaces_hyphens_underscores(a, b, same):
    assert (norm_name(a) == norm_name(b)) is same


def test_not_installed_reports_and_stops(mem, monkeypatch, tmp_path):
    home = Path(os.environ["HOME"])
    # a different agent IS installed and has history: discovery must not fall back to it
    _exe(tmp_path / "bin", "codex")
    _chat(home / ".codex-like/sessions/a.jsonl", [("2026-01-01T00:00:00Z", "q", "a")])
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    res = add_custom_source(mem, "kimi code")
    assert res["status"] == "not_installed"
    assert mem.stats()["turns"] == 0
    assert not [s for s in detect_sources(mem) if s["custom"]]
    assert find_installation("kimi code", {"PATH": str(tmp_path / "bin"), "HOME": str(home)}) == []


def test_installed_without_history_stays_draft(mem, monkeypatch, tmp_path):
    _exe(tmp_path / "bin", "zcode")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    res = add_custom_source(mem, "zcode")
    assert res["status"] == "no_history"
    assert not [s for s in detect_sources(mem) if s["custom"]], "a draft is not listed"
    row = mem.store.conn.execute("SELECT status FROM sources WHERE name = 'custom:zcode'").fetchone()
    assert row["status"] == "draft"


def test_discovery_imports_recent_500_then_only_newer(mem, monkeypatch, tmp_path):
    home = Path(os.environ["HOME"])
    _exe(tmp_path / "bin", "kimi-code")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    hist = home / ".kimi-code/sessions"
    old = [(f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}Z", f"old question {i}", f"old answer {i}") for i in range(520)]
    _chat(hist / "s1.jsonl", old)
    _chat(home / ".kimi-code/cache/notes.txt", [])  # not a chat file
    res = add_custom_source(mem, "Kimi Code")
    assert res["status"] == "imported", res
    assert res["result"]["turns_added"] == 500
    reqs = {r[0] for r in mem.store.conn.execute("SELECT request FROM turns")}
    assert "old question 519" in reqs and "old question 19" not in reqs and "old question 20" in reqs
    listed = [s for s in detect_sources(mem) if s["custom"]]
    assert [s["name"] for s in listed] == ["custom:kimi-code"]
    # a later sync imports only turns strictly newer than the boundary
    _chat(hist / "s1.jsonl", [("2026-02-01T00:00:00Z", "brand new question", "brand new answer")])
    r = run_sync(mem, ["kimi-code"])
    s = next(x for x in r["sources"] if x["source"] == "custom:kimi-code")
    assert s["turns_added"] == 1
    assert mem.search("brand new question", k=1)[0]["agent"] == "kimi-code"
    r = run_sync(mem, ["kimi-code"])
    assert sum(x["turns_added"] for x in r["sources"]) == 0


def test_user_given_paths_are_the_only_place_searched(mem, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    hist = tmp_path / "somewhere/history"
    _chat(hist / "x.jsonl", [("2026-01-01T00:00:00Z", "minimax question", "minimax answer")])
    with pytest.raises(ValueError):
        add_custom_source(mem, "minimax code", ["relative/path"])
    res = add_custom_source(mem, "minimax code", [str(hist)])
    assert res["status"] == "imported" and res["result"]["turns_added"] == 1
    assert mem.search("minimax question")[0]["agent"] == "minimax-code"


def test_cli_sources_add_not_installed(cli, monkeypatch, tmp_path):
    r = cli("sources", "add", "coder", "--json", env={"PATH": str(tmp_path)})
    assert r.returncode == 1
    assert json.loads(r.stdout)["status"] == "not_installed"

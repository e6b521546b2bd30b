"""SpecStory exports and aider histories: found inside the project folders the histories name (or the
user adds), parsed turn by turn, synced incrementally, redacted and searchable through the CLI.
Fixtures: tests/fixtures/agents/specstory/ and aider/ (synthesized, see SOURCES.md)."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

import remem
from conftest import FIXTURES, copy_fixture, run_cli
from remem.sources import aider, specstory
from remem.sources.base import ParseStats
from remem.sources.turns import TurnAssembler

HISTORY = FIXTURES / "specstory" / "ledger-app" / ".specstory" / "history"
OLD = "2025-05-06_08-14-fix-flaky-settlement-test.md"
V2 = "2025-10-26_05-51Z-migrate-ledger-to-postgres.md"
ZH = "2026-02-21_05-24Z-检查数据库连接池配置.md"
AIDER = FIXTURES / "aider" / "inventory-cli" / ".aider.chat.history.md"
SECRET = "Zr8pQ2vLx9Tk4Wm7Yc1Nb6Hd3Fs0Gj5Ke2Ua8Oi9"


def _contract_requests(data: bytes) -> list[str]:
    """The turn numbering the SpecStory benchmark uses: split on \\n only, every line starting with
    ``_**User`` opens the next turn, its request runs to the first assistant/agent header."""
    turns: list[list[bytes]] = []
    for ln in data.split(b"\n"):
        if ln.startswith(b"_**User"):
            turns.append([])
        elif turns:
            turns[-1].append(ln)
    out = []
    for body in turns:
        lines = []
        for ln in body:
            if ln.startswith((b"_**Assistant", b"_**Agent")):
                break
            lines.append(ln)
        text = b"\n".join(lines).decode("utf-8").replace("\r", "").strip()
        out.append(text[:-3].rstrip() if text.endswith("---") else text)
    return out


def _turns(messages, agent="cursor"):
    asm = TurnAssembler(agent)
    for m in messages:
        asm.feed(m)
    return asm.finish(complete=True)


@pytest.mark.parametrize("name", [OLD, V2, ZH])
def test_specstory_user_turns_follow_the_numbering_contract(name: str) -> None:
    data = (HISTORY / name).read_bytes()
    stats = ParseStats()
    msgs = specstory.parse(data, name, stats, project="/w/ledger-app")
    users = [m for m in msgs if m.role == "user"]
    assert [m.text for m in users] == _contract_requests(data)
    assert [m.extra["turn"] for m in users] == list(range(1, len(users) + 1))
    assert not stats.errors
    assert all("\r" not in m.text for m in msgs)                       # the CRLF export reads clean
    ts = [m.ts for m in msgs]
    assert None not in ts and ts == sorted(ts) and len(set(ts)) == len(ts)   # order survives
    assert {m.session_id for m in msgs} == {name[:-3]}


def test_specstory_times_formats_and_tool_blocks() -> None:
    def parsed(name):
        return specstory.parse((HISTORY / name).read_bytes(), name, project="/w/ledger-app")

    def utc(ts):
        return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")

    old = _turns(parsed(OLD))
    # the title's local 10:14:22 with the file name's UTC 08-14: the session started 08:14:22 UTC
    assert utc(old.turns[0].started_at) == "2025-05-06 08:14:22"
    assert old.skipped_empty == 1 and len(old.turns) == 3
    names = [a.name for a in old.turns[0].actions]
    assert {"codebase_search", "read_file", "list_dir", "edit_file"} <= set(names)
    listing = next(a for a in old.turns[0].actions if a.name == "list_dir")
    assert "part_39.py" in listing.output and len(listing.output) > 1000
    assert old.turns[0].reply.startswith("I replaced the float sum")
    run = old.turns[1].actions[0]
    assert "1 failed, 212 passed" in run.output and len(run.output) > 1500
    assert old.turns[1].status == "succeeded"      # "Cancelled" answered the empty request after it

    v2 = _turns(parsed(V2))
    assert [utc(t.started_at)[:16] for t in v2.turns] == ["2025-10-26 05:51", "2025-10-26 06:20"]
    assert v2.turns[0].model == "gpt-5"
    shell = next(a for a in v2.turns[0].actions if a.name == "run_terminal_cmd")
    assert shell.input.startswith("Run command: make migrate") and "applying 0039_ledger_disputes" in shell.output
    grep = v2.turns[1].actions[0]
    assert grep.name == "grep" and '"pattern": "5433"' in grep.input and "docker-compose.yml" in grep.output
    assert not any("Planning the move" in (a.input + a.output) for t in v2.turns for a in t.actions)
    assert "Planning the move" not in v2.turns[0].reply                 # thinking is no memory

    zh = _turns(parsed(ZH))
    assert [t.request for t in zh.turns][1].startswith("以后所有配置改动都写进 config/ledger.toml")
    assert utc(zh.turns[0].started_at)[:16] == "2026-02-21 05:24"        # from the session line
    assert "连接 059" in zh.turns[0].actions[0].output


def test_aider_sessions_requests_commands_and_console_output() -> None:
    stats = ParseStats()
    msgs = aider.parse(AIDER.read_bytes(), "/w/inventory-cli", stats)
    res = _turns(msgs, "aider")
    assert res.incomplete == 0
    by_session: dict[str, list] = {}
    for t in res.turns:
        by_session.setdefault(t.session_id, []).append(t)
    first, second = sorted(by_session)
    assert [t.request.splitlines()[0] for t in by_session[first]] == [
        "Reserving stock for an order with two lines of the same SKU double counts the reservation.",
        "Why does test_reserve_merges_skus still fail?"]
    reserve = by_session[first][0]
    assert reserve.request.splitlines()[1] == "Make reserve() merge lines by SKU first."   # multi-line input
    assert "<<<<<<< SEARCH" in reserve.reply or "merge the order lines" in reserve.reply
    run = next(a for a in reserve.actions if a.name == "run")
    assert run.input == "/run pytest -q tests/test_stock.py"
    assert "StockError: bin B-07 has 3 units" in run.output and "reserve_24" in run.output  # unquoted lines too
    console = "\n".join(a.output for a in reserve.actions)
    assert "Commit 3f2a9c1" in console and "Tokens:" not in console
    assert [t.request for t in by_session[second]][0].startswith("以后提交信息一律用英文")
    start = datetime.strptime("2025-03-14 09:30:05", "%Y-%m-%d %H:%M:%S").timestamp()   # aider's local time
    assert abs(by_session[first][0].started_at - start) < 1


# ----------------------------------------------------------------------------- through the CLI


def _claude_session(home: Path, sid: str, cwd: Path, request: str, reply: str) -> None:
    f = home / ".claude" / "projects" / ("-" + sid) / f"{sid}.jsonl"
    f.parent.mkdir(parents=True, exist_ok=True)
    common = {"sessionId": sid, "cwd": str(cwd), "userType": "external"}
    lines = [
        {**common, "type": "user", "uuid": f"{sid}-u", "parentUuid": None, "timestamp": "2026-01-05T09:00:00Z",
         "message": {"role": "user", "content": request}},
        {**common, "type": "assistant", "uuid": f"{sid}-a", "parentUuid": f"{sid}-u",
         "timestamp": "2026-01-05T09:00:09Z",
         "message": {"id": f"m-{sid}", "role": "assistant", "model": "claude-x",
                     "content": [{"type": "text", "text": reply}]}},
    ]
    f.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")


@pytest.fixture
def projects() -> dict[str, Path]:
    """Two project folders holding exports, named by a Claude Code history (one from a subfolder)."""
    home = Path(os.environ["HOME"])
    ledger = copy_fixture("specstory/ledger-app", home / "work" / "ledger-app")
    inventory = copy_fixture("aider/inventory-cli", home / "work" / "inventory-cli")
    (ledger / "src").mkdir()
    _claude_session(home, "c1", ledger / "src", "Where is the settlement batch defined?",
                    "In ledger/settlement/batch.py.")
    _claude_session(home, "c2", inventory, "List the inventory commands.", "reserve, release and count.")
    return {"ledger": ledger, "inventory": inventory}


def _sync(*args: str) -> dict:
    r = run_cli("sync", *args, "--json")
    assert r.returncode == 0, r.stderr.decode()
    return json.loads(r.stdout)


def _search(query: str) -> list[dict]:
    r = run_cli("search", query, "--json")
    assert r.returncode == 0, r.stderr.decode()
    return json.loads(r.stdout)["results"]


def test_remem_sync_finds_exports_in_projects_the_history_names(projects, remem_home: Path) -> None:
    out = _sync()
    per = {s["source"]: s for s in out["sources"]}
    assert per["specstory"]["agent"] == "cursor" and per["aider"]["agent"] == "aider"
    assert per["specstory"]["turns_added"] == 7 and per["aider"]["turns_added"] == 4
    for name in ("specstory", "aider"):
        assert per[name]["failed"] == 0 and per[name]["skipped_incomplete"] == 0
        assert per[name]["cursor"] is not None          # clean: the watermark moved

    hits = _search("ROUND_HALF_EVEN Decimal")
    assert hits and hits[0]["agent"] == "cursor"
    assert any("连接池" in h["text"] for h in _search("连接池 配置"))
    aider_hits = [h for h in _search("count_bins 查询") if h["agent"] == "aider"]
    assert aider_hits

    m = remem.open(remem_home)
    db = m.store.conn
    stored = " ".join(r[0] for r in db.execute("SELECT request || reply || actions FROM turns"))
    projects_seen = {r[0] for r in db.execute("SELECT DISTINCT project FROM turns WHERE agent IN ('cursor','aider')")}
    m.close()
    assert SECRET not in stored and "AKIAQ3EXZ7LMN4RT2PWV" not in stored     # redacted by the pipeline
    assert projects_seen == {str(projects["ledger"]), str(projects["inventory"])}

    again = {s["source"]: s for s in _sync()["sources"]}
    assert again["specstory"]["units_read"] == 0 and again["aider"]["units_read"] == 0
    assert again["specstory"]["turns_added"] == 0 and again["aider"]["turns_added"] == 0

    history = projects["inventory"] / ".aider.chat.history.md"
    with history.open("a", encoding="utf-8") as f:
        f.write("\n# aider chat started at 2025-03-16 08:00:00\n\n#### Add a --dry-run flag to count_bins.py  \n\n"
                "Added `--dry-run`: it prints the grouped query instead of running it.\n\n")
    grown = {s["source"]: s for s in _sync("aider")["sources"]}
    assert set(grown) == {"aider"}
    assert (grown["aider"]["turns_added"], grown["aider"]["duplicates"]) == (1, 4)


def test_sources_add_specstory_path_for_a_project_no_history_names(remem_home: Path) -> None:
    home = Path(os.environ["HOME"])
    ledger = copy_fixture("specstory/ledger-app", home / "elsewhere" / "ledger-app")
    # a second chat that asked the very same things (IDE quick-fix chats repeat): its own turns
    hist = ledger / ".specstory" / "history"
    (hist / "2025-05-07_09-00-fix-flaky-settlement-test-again.md").write_bytes((hist / OLD).read_bytes())
    assert {s["source"] for s in _sync()["sources"]} == set()       # nothing names that folder

    r = run_cli("sources", "add", "specstory", "--path", str(ledger), "--json")
    assert r.returncode == 0, r.stderr.decode()
    added = json.loads(r.stdout)
    assert added["status"] == "imported" and added["result"]["turns_added"] == 7 + 3

    r = run_cli("sources", "--json")
    listed = {s["name"]: s for s in json.loads(r.stdout)}
    assert listed["specstory"]["paths"] == [str(ledger / ".specstory" / "history")]
    assert listed["specstory"]["units"] == 4
    assert _sync()["sources"][0]["units_read"] == 0                 # remembered, synced incrementally

    bad = run_cli("sources", "add", "aider", "--path", "relative/dir")
    assert bad.returncode != 0 and b"absolute" in bad.stderr + bad.stdout


def test_an_export_of_a_chat_imported_from_cursors_database_is_not_stored_twice(projects, mem) -> None:
    from remem.model import TurnIn

    mem.add_turns([TurnIn(request="Move the ledger from SQLite to Postgres 16.", reply="Done.", agent="cursor",
                          session_id="7d1c2a90-4b3e-4f6a-9c21-0e5f3b8a6d42", source_name="cursor",
                          source_key="cursor:7d1c2a90:b1", message_ids=["b1"], started_at=1761457860.0)])
    out = _sync()
    per = {s["source"]: s for s in out["sources"]}
    assert per["specstory"]["turns_added"] == 5                      # 7 less the v2 file's 2
    assert any("already imported from cursor" in n for n in per["specstory"]["skipped"])

"""Real-shaped histories (remem.bench.realistic) import through the real sources, whole, with
every index recall reads at query time in place before the background index job runs."""

from __future__ import annotations

import json
import os
from pathlib import Path

from conftest import run_cli
from remem.bench.realistic import describe, write_real_history
from remem.text.entities import MAX_PER_TURN, extract, turn_text


def test_generated_history_has_real_shapes() -> None:
    home = Path(os.environ["HOME"])
    stats = write_real_history(home, turns=400, seed=3)
    d = describe(stats)
    assert d["turns"] == 400
    # issue 15's measured shape: turn median 4 KB, mean 7 KB, p90 23 KB; request median 77, mean 311
    assert 2_500 <= d["turn_median"] <= 6_000, d
    assert 4_500 <= d["turn_mean"] <= 10_000, d
    assert 13_000 <= d["turn_p90"] <= 32_000, d
    assert 40 <= d["request_median"] <= 140, d
    assert 150 <= d["request_mean"] <= 600, d
    assert 0.08 <= d["chinese_share"] <= 0.25, d
    claude = list((home / ".claude/projects").rglob("*.jsonl"))
    codex = list((home / ".codex/sessions").rglob("rollout-*.jsonl"))
    assert claude and codex
    text = "\n".join(p.read_text(encoding="utf-8") for p in claude[:20])
    for shape in ("Traceback (most recent call last)", "test session starts", "diff --git", "```python",
                  '"type": "tool_use"', '"is_error": true'):
        assert shape in text, shape
    assert "lorem" not in text.lower()
    again = Path(os.environ["HOME"]) / "again"
    assert describe(write_real_history(again, turns=400, seed=3)) == d  # deterministic by seed


def test_sync_imports_every_generated_turn(mem) -> None:
    home = Path(os.environ["HOME"])
    stats = write_real_history(home, turns=240, seed=5)
    r = run_cli("sync", "--json", env={"REMEM_EMBEDDING_ENABLED": "false"}, timeout=300)
    assert r.returncode == 0, r.stderr.decode()
    total = json.loads(r.stdout)["total"]
    assert total["turns_added"] == stats.turns, total
    assert total["failed"] == 0 and not total["errors"], total
    assert mem.store.conn.execute("SELECT count(*) FROM turns").fetchone()[0] == stats.turns
    zh = mem.store.conn.execute("SELECT count(*) FROM turns WHERE cjk != ''").fetchone()[0]
    assert zh >= stats.chinese > 0


def test_import_writes_entity_rows_before_the_index_job(mem) -> None:
    """The entity channel finds an imported turn at once, not only after the background job."""
    from remem.sources.sync import run_sync

    home = Path(os.environ["HOME"])
    stats = write_real_history(home, turns=120, seed=9)
    res = run_sync(mem, ["claude-code", "codex"])
    assert res["total"]["turns_added"] == stats.turns
    rows = mem.store.conn.execute("SELECT id, owner, request, reply, actions, trgm FROM turns").fetchall()
    assert rows and all(r["trgm"] == 0 for r in rows)  # the trigram index is still to come
    stored = {(r[0], r[1], r[2]) for r in mem.store.conn.execute(
        "SELECT m.turn_id, e.kind, e.name FROM entity_mentions m JOIN entities e ON e.id = m.entity_id")}
    for r in rows:
        want = {(r["id"], k, n) for k, n in extract(turn_text(r["request"], r["reply"], r["actions"]))}
        assert want <= stored, r["id"]
    before = len(stored)
    mem.index_pending(embed=False)  # the job adds the trigram index and no second copy of entities
    after = mem.store.conn.execute("SELECT count(*) FROM entity_mentions").fetchone()[0]
    assert after == before
    assert mem.store.conn.execute("SELECT count(*) FROM turns WHERE trgm = 0").fetchone()[0] == 0
    hit = mem.search("Traceback", k=5)
    assert hit


def test_tool_output_searched_by_its_head_and_tail(mem) -> None:
    """A long tool output is kept shortened for reading; its search text is the call, the head and
    the tail of the output (the final error line of a log is found, the middle is not indexed)."""
    from remem.model import ToolCall, TurnIn

    middle = "\n".join(f"    {i:>5}\tvalue = compute_{i}(value)" for i in range(300))
    log = "collected 40 items\n" + middle + "\nE   ZeroDivisionError: division by zero in quantise_bucket"
    mem.add_turns([TurnIn(request="why does the bucket test fail?", reply="It divides by zero.",
                          actions=[ToolCall(name="Bash", input="pytest -x tests/test_buckets.py", output=log,
                                            is_error=True)], session_id="s1")], defer_index=True)
    row = mem.store.conn.execute("SELECT actions, actions_json FROM turns").fetchone()
    assert "quantise_bucket" in row["actions"] and "collected 40 items" in row["actions"]
    assert len(row["actions"]) < 1_800
    assert "compute_150" not in row["actions"]
    assert "quantise_bucket" in row["actions_json"]  # what is read back keeps the call as shortened at import
    assert extract("x " * 10 + " ".join(f"src/m{i}.py" for i in range(40)))[:MAX_PER_TURN] == \
        [("path", f"src/m{i}.py") for i in range(MAX_PER_TURN)]

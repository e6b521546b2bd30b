"""A sync writes several files' turns per transaction (issue 15: per-file commits were a third of
an import's SQLite time); a file's checkpoint is saved only once all its turns are committed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from remem.bench.gen_history import write_claude_history
from remem.sources import sync as syncmod
from remem.sources.sync import run_sync


def _commits(mem) -> list[str]:
    seen: list[str] = []
    mem.store.conn.set_trace_callback(lambda sql: seen.append(sql) if sql.strip().upper() == "COMMIT" else None)
    return seen


@pytest.mark.sqlite_only("counts SQLite transactions with its trace callback")
def test_many_small_files_commit_in_few_transactions(mem):
    home = Path(os.environ["HOME"])
    write_claude_history(home / ".claude/projects", sessions=40, turns=5)
    seen = _commits(mem)
    res = run_sync(mem, ["claude-code"])
    mem.store.conn.set_trace_callback(None)
    assert res["total"]["turns_added"] == 200 and res["total"]["failed"] == 0
    # one per file and one per checkpoint before: 80+; now the turns and the checkpoints of up to
    # BATCH turns' files go together (plus the source's own state rows)
    assert len(seen) <= 6, len(seen)
    assert mem.store.conn.execute("SELECT count(*) FROM checkpoints WHERE source = 'claude-code'").fetchone()[0] == 40
    assert mem.store.conn.execute("SELECT count(*) FROM entity_mentions").fetchone()[0] > 0
    again = run_sync(mem, ["claude-code"])
    assert again["total"]["turns_added"] == 0 and again["sources"][0]["units_unchanged"] == 40


def test_failed_group_write_keeps_no_checkpoint_and_next_sync_imports_all(mem, monkeypatch):
    home = Path(os.environ["HOME"])
    write_claude_history(home / ".claude/projects", sessions=12, turns=5)
    real = syncmod._write
    monkeypatch.setattr(syncmod, "_write", lambda *a, **k: (_ for _ in ()).throw(OSError("disk full")))
    res = run_sync(mem, ["claude-code"])
    src = res["sources"][0]
    assert src["turns_added"] == 0 and src["failed"] == 12, src
    assert all("disk full" in e for e in src["errors"])
    assert src["cursor"] is None, "a failed write holds the cursor back"
    assert mem.store.conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0] == 0
    monkeypatch.setattr(syncmod, "_write", real)
    res = run_sync(mem, ["claude-code"])
    assert res["total"]["turns_added"] == 60 and res["total"]["failed"] == 0
    assert mem.stats()["turns"] == 60

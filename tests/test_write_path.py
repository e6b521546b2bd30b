"""The write side behind the store (issue 14): one write path, one function per background task,
one count of the embedding backlog, engine errors as StoreError."""

from __future__ import annotations

import ast
import json
import threading
from pathlib import Path
from typing import Any

import pytest

import remem
from remem import tasks
from remem.server.events import EventBus
from remem.server.jobkinds import HANDLERS
from remem.server.jobs import JobContext, JobControl, JobRunner
from remem.store import StoreError
from test_import_and_times import shop_turns

SRC = Path(__file__).resolve().parents[1] / "src" / "remem"


def _calls(name: str) -> dict[str, int]:
    """Files under src/remem (outside store/) calling ``name`` as a function or a method."""
    out: dict[str, int] = {}
    for f in SRC.rglob("*.py"):
        rel = f.relative_to(SRC).as_posix()
        if rel.startswith("store/"):
            continue
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                fn = node.func
                called = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
                if called == name:
                    out[rel] = out.get(rel, 0) + 1
    return out


def test_every_writer_ends_in_the_one_persist():
    # the pipeline is the only caller of the store's turn write, and the façade's add_turns the
    # only caller of the pipeline: sync, hooks, API, CLI, MCP and import all go through add_turns
    writes = {f for f, n in _calls("write").items() if "turns.write(" in (SRC / f).read_text(encoding="utf-8")}
    assert writes == {"ingest/pipeline.py"}
    assert set(_calls("persist")) == {"core.py"}
    assert not _calls("write_turn")
    for face in ("sources/sync.py", "integrations/backend.py", "server/routes/memories.py"):
        assert "add_turns(" in (SRC / face).read_text(encoding="utf-8"), face
    assert "mem.add(" in (SRC / "cli/memory.py").read_text(encoding="utf-8")
    assert "self.mem.add(" in (SRC / "mcp_server.py").read_text(encoding="utf-8")


def test_the_embed_backlog_is_counted_in_one_place():
    hits = []
    for f in (SRC).rglob("*.py"):
        text = f.read_text(encoding="utf-8")
        hits += [f.relative_to(SRC).as_posix()] * text.count("WHERE embed_state = 'pending'\")")
    assert hits == ["store/sqlite/turns.py"]


@pytest.mark.sqlite_only("two homes on one database server share that database")
def test_an_import_goes_through_persist_keeping_ids_times_counters_and_tombstones(tmp_path, cli, remem_home):
    src = remem.open(tmp_path / "src")
    src.add_turns(shop_turns(12))
    first = src.list(limit=50)
    with src.store.transaction():  # an access count and an archive flag the export carries
        src.store.turns.restore(first[0]["id"], created_at=first[0]["created_at"] - 3600, updated_at=None,
                                access_count=7, last_access=first[0]["created_at"], archived=True)
    export = tmp_path / "export.jsonl"
    with export.open("w", encoding="utf-8") as f:
        src.export_jsonl(f)
    src.close()
    records = {json.loads(x)["id"]: json.loads(x) for x in export.read_text(encoding="utf-8").splitlines()}
    # the target home forgot one of them: the import must keep it out like every other writer
    dst = remem.open(remem_home)
    dst.add_turns(shop_turns(12)[:1])
    gone = dst.forget(ids=[dst.list(limit=1)[0]["id"]])
    dst.close()
    r = cli("import", str(export), "--json")
    assert r.returncode == 0, r.stderr
    counts = json.loads(r.stdout)
    assert counts["added"] == 11 and counts["skipped_forgotten"] == 1
    mem = remem.open(remem_home)
    try:
        rows = {t["id"]: t for t in mem.list(limit=50)}
        assert gone[0] not in rows and len(rows) == 11
        for tid, row in rows.items():
            want = records[tid]
            assert (row["started_at"], row["created_at"], row["access_count"], row["archived"]) == (
                want["started_at"], want["created_at"], want["access_count"], want["archived"])
        assert any(t["access_count"] == 7 and t["archived"] for t in rows.values())
        assert mem.store.turns.text_backlog() == 0  # the CLI ran the index task after the import
        actions = [a["action"] for a in mem.store.audit.recent(10)]
        assert actions[0] == "write" and "forget" in actions
    finally:
        mem.close()


def _ctx(mem: remem.Remem, payload: dict[str, Any] | None = None) -> tuple[JobContext, list[dict[str, Any]]]:
    seen: list[dict[str, Any]] = []
    job = {"id": 1, "kind": "x", "payload": payload or {}, "attempts": 1}
    runner = JobRunner(mem, EventBus(), HANDLERS)
    return JobContext(job=job, mem=mem, control=JobControl(), report=seen.append, runner=runner), seen


@pytest.mark.parametrize(("kind", "task"), [("embed", "embed"), ("index", "index"), ("sync", "sync"),
                                            ("discover", "discover")])
def test_each_job_kind_runs_the_task_the_cli_runs(mem, monkeypatch, kind, task):
    called: list[tuple[Any, ...]] = []

    def fake(m: Any, *a: Any, **kw: Any) -> dict[str, Any]:
        called.append((m, a, kw))
        return {"ran": task}

    monkeypatch.setattr(tasks, task, fake)
    ctx, _ = _ctx(mem, {"name": "kimi code"} if kind == "discover" else None)
    assert HANDLERS[kind](ctx) == {"ran": task}
    assert called and called[0][0] is mem


def test_the_library_runs_the_same_tasks(mem, monkeypatch):
    called = []
    monkeypatch.setattr(tasks, "index", lambda m, **kw: called.append("index") or {"indexed": 3})
    monkeypatch.setattr(tasks, "embed", lambda m, **kw: called.append("embed") or {"embedded": 2})
    assert mem.index_pending() == {"trigram": 3, "embedded": 2}
    assert called == ["index", "embed"]


def test_the_index_task_fills_the_backlog_of_a_bulk_write_and_reports(mem):
    mem.add_turns(shop_turns(60), defer_index=True)
    assert mem.store.turns.text_backlog() == 60
    ctx, seen = _ctx(mem)
    assert HANDLERS["index"](ctx) == {"indexed": 60}
    assert mem.store.turns.text_backlog() == 0
    assert seen[0] == {"phase": "indexing", "done": 0, "total": 60} and seen[-1] == {"done": 60, "total": 60}
    hits = mem.search("retry_back")  # the substring channel finds the identifier
    assert hits and "test_retry_backoff" in hits[0]["text"]


def test_the_embed_task_stops_between_batches(mem):
    mem.add_turns(shop_turns(40), defer_index=True)
    stop = threading.Event()
    seen: list[dict[str, Any]] = []

    def report(d: dict[str, Any]) -> None:
        seen.append(d)
        if d.get("done"):
            stop.set()

    out = tasks.embed(mem, should_stop=stop.is_set, report=report)
    assert out["embedded"] == int(mem.config.get("embedding.batch_size")) < 40  # one batch, then stopped
    assert mem.store.turns.embed_backlog() == 40 - out["embedded"]
    assert seen[1]["phase"] == "embedding" and seen[1]["total"] == 40


def test_engine_errors_come_out_of_an_area_as_store_errors(mem):
    mem.add_turns(shop_turns(3))
    mem.store.conn.execute("DROP TABLE jobs")  # type: ignore[attr-defined]
    with pytest.raises(StoreError):
        mem.store.jobs.pending()
    with pytest.raises(StoreError):
        mem.stats()
    with pytest.raises(StoreError):  # inside a transaction too, and the turns stay
        mem.add_turns(shop_turns(6)[3:])
    assert mem.store.turns.counts(mem.scope())["turns"] == 3

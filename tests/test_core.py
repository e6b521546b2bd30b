"""Core store: pipeline statuses, dedup, scopes, forget, export/import, Python API."""

from __future__ import annotations

import io
import json
import sqlite3

import pytest

import remem
from conftest import ON_POSTGRES
from remem.ingest.normalize import InputError
from remem.model import ToolCall, TurnIn
from remem.scope import Scope, ScopeError


def test_open_initialises_empty_home(remem_home):
    mem = remem.open()
    assert (remem_home / "config.yaml").exists()
    assert (remem_home / "remem.db").exists() != ON_POSTGRES  # on a server, no file in the home
    tok = remem_home / "token"
    assert tok.exists() and oct(tok.stat().st_mode & 0o777) == "0o600"
    assert len(tok.read_text().strip()) >= 32
    assert mem.stats()["turns"] == 0
    assert mem.search("anything") == []


@pytest.mark.sqlite_only("the SQLite file's pragmas")
def test_pragmas(mem):
    db = mem.store.conn
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    assert db.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert db.execute("PRAGMA temp_store").fetchone()[0] == 2  # MEMORY
    assert db.execute("PRAGMA busy_timeout").fetchone()[0] >= 5000


def test_statuses_and_dedup(mem):
    r1 = mem.add("use uv instead of pip", agent="codex", project="app")
    assert r1.status == "added" and r1.id.startswith("t_")
    r2 = mem.add("use uv instead of pip", agent="codex", project="app")
    assert (r2.id, r2.status) == (r1.id, "duplicate")
    t = TurnIn(request="fix the login bug", reply="done", agent="claude-code", session_id="s1",
               source_key="claude-code:s1:u1", message_ids=["u1", "a1"], source_name="claude-code")
    a = mem.add_turns([t]).results[0]
    assert a.status == "added"
    t.reply = "done, and added a regression test"
    b = mem.add_turns([t]).results[0]
    assert (b.id, b.status) == (a.id, "updated")
    assert mem.get(a.id)["reply"] == "done, and added a regression test"
    assert mem.stats()["turns"] == 2
    big = TurnIn(request="x" * (2 * 1024 * 1024 + 1), agent="codex")
    empty = TurnIn(request="   \n ", reply="", agent="codex")
    res = mem.add_turns([big, empty]).results
    assert [r.status for r in res] == ["skipped_oversize", "skipped_empty"]
    assert mem.stats()["turns"] == 2


def test_same_message_reassembled_updates_not_duplicates(mem):
    t1 = TurnIn(request="q", reply="a", agent="codex", session_id="s", source_key="k1",
                source_name="codex", message_ids=["m1", "m2"])
    t2 = TurnIn(request="q", reply="a plus more", agent="codex", session_id="s", source_key="k2",
                source_name="codex", message_ids=["m1", "m2", "m3"])
    a = mem.add_turns([t1]).results[0]
    b = mem.add_turns([t2]).results[0]
    assert b.id == a.id and b.status == "updated"
    assert mem.stats()["turns"] == 1


def test_live_capture_then_import_is_one_turn(mem):
    live = TurnIn(request="Please apply the fix.", reply="Applied.", agent="claude-code", session_id="S")
    a = mem.add_turns([live], live=True).results[0]
    imported = TurnIn(request="Please apply the fix.", reply="Applied.", agent="claude-code", session_id="S",
                      source_key="claude-code:S:uuid-1", source_name="claude-code", message_ids=["uuid-1"],
                      actions=[ToolCall(name="Edit", input="a.py", output="ok")])
    b = mem.add_turns([imported]).results[0]
    assert b.id == a.id and b.status == "updated"
    assert mem.get(a.id)["actions"][0]["name"] == "Edit"
    # the hook capturing again afterwards does not overwrite the richer import
    again = mem.add_turns([live], live=True).results[0]
    assert again.id == a.id and again.status == "duplicate"
    assert mem.stats()["turns"] == 1


def test_redaction_before_storage(mem):
    key = "sk-ant-api03-" + "A1b2C3d4E5f6G7h8" * 5
    r = mem.add(f"my key is {key} please remember", agent="codex")
    rec = mem.get(r.id)
    assert key not in rec["request"] and "REDACTED" in rec["request"]
    raw = mem.store.conn.execute("SELECT group_concat(request) FROM turns").fetchone()[0]
    assert key not in raw


def test_private_and_data_urls_redacted(mem):
    img = "data:image/png;base64," + "iVBORw0KGgo" * 200
    r = mem.add(f"see <private>my diary</private> and {img}", agent="codex")
    text = mem.get(r.id)["request"]
    assert "my diary" not in text and "iVBORw0KGgo" not in text and "image/png" in text


def test_invalid_user_text_rejected(mem):
    for bad in ("", "   ", "a\x00b", "bad \udcff bytes"):
        with pytest.raises(InputError):
            mem.add(bad, agent="codex")
    assert mem.stats()["turns"] == 0


def test_scope_requires_owner():
    with pytest.raises(ScopeError):
        Scope(owners=())
    clause, params = Scope.of(["a", "b"], agent="claude_code", project="p").sql("t")
    assert clause == "t.owner IN (?,?) AND t.agent = ? AND t.project = ?"
    assert params == ["a", "b", "claude-code", "p"]


def test_agents_share_memory_by_default_and_isolation(mem):
    mem.config.set("agents.reviewer", {"isolated": True})
    a = mem.add("deploy with make release", agent="codex")
    b = mem.add("reviewer notes: release checklist", agent="reviewer")
    assert mem.get(a.id)["owner"] == "default"
    assert mem.get(b.id, owner="agent:reviewer")["owner"] == "agent:reviewer"
    # claude-code reads what codex wrote (shared owner), but not the isolated reviewer's notes
    hits = mem.search("release", scope=mem.scope(as_agent="claude-code"))
    assert [h["id"] for h in hits] == [a.id]
    # the isolated agent sees only its own owner unless configured to read shared owners
    assert [h["id"] for h in mem.search("release", scope=mem.scope(as_agent="reviewer"))] == [b.id]
    mem.config.set("agents.reviewer", {"isolated": True, "read_owners": ["default"]})
    assert {h["id"] for h in mem.search("release", scope=mem.scope(as_agent="reviewer"))} == {a.id, b.id}


def test_forget_by_id_session_source(mem):
    ids = [mem.add_turns([TurnIn(request=f"req {i}", reply="r", agent="codex", session_id=f"s{i % 2}",
                                 source_name="codex", source_key=f"k{i}", message_ids=[f"m{i}"])]).results[0].id
           for i in range(6)]
    mem.add("other agent memory", agent="gemini")
    assert mem.forget(ids=[ids[0]]) == [ids[0]]
    assert mem.get(ids[0]) is None
    gone = mem.forget(session="s1")
    assert sorted(gone) == sorted(ids[1::2])
    assert len(mem.forget(source="codex")) == 2
    assert mem.stats()["turns"] == 1
    assert mem.store.conn.execute("SELECT count(*) FROM messages WHERE turn_id IS NOT NULL").fetchone()[0] == 0
    assert mem.store.conn.execute("SELECT count(*) FROM audit WHERE action='forget'").fetchone()[0] == 3


def test_forget_removes_derived_rows(mem):
    r = mem.add("a turn with derived rows", agent="codex")
    db = mem.store.conn
    with mem.store.transaction():
        mem.store.vectors.put_many([("turn", r.id, "summary", "hash:8", 8, b"\x00" * 32, "h", "default", "", "")])
    assert db.execute("SELECT count(*) FROM embeddings").fetchone()[0] == 1
    mem.forget(ids=[r.id])
    assert db.execute("SELECT count(*) FROM embeddings").fetchone()[0] == 0


@pytest.mark.sqlite_only("SQLite's migration m010; PostgreSQL never had those tables")
def test_the_legacy_memories_tables_are_gone(mem):
    """m010: the first schema's never-written ``memories`` / ``memory_links`` tables are dropped;
    learned memories live in ``learned``."""
    names = {r[0] for r in mem.store.conn.execute("SELECT name FROM sqlite_master")}
    assert not names & {"memories", "memory_links", "memories_fts"} and "learned" in names



@pytest.mark.sqlite_only("two homes on one database server share that database")
def test_export_import_roundtrip(tmp_path, mem, monkeypatch):
    mem.add("first memory", agent="codex", project="p1", session="s1")
    mem.add_turns([TurnIn(request="second", reply="with tools", agent="claude-code", session_id="s2",
                          actions=[ToolCall(name="Bash", input="ls", output="a b", is_error=False)],
                          tags=["x"])])
    buf = io.StringIO()
    assert mem.export_jsonl(buf) == 2
    first = buf.getvalue()
    other = remem.open(tmp_path / "other")
    counts = other.import_jsonl(first.splitlines())
    assert counts["added"] == 2
    assert other.import_jsonl(first.splitlines())["added"] == 0
    buf2 = io.StringIO()
    other.export_jsonl(buf2)
    assert [json.loads(x) for x in buf2.getvalue().splitlines()] == [json.loads(x) for x in first.splitlines()]
    with pytest.raises(InputError):
        other.import_jsonl(["{not json"])


@pytest.mark.sqlite_only("a copy of the SQLite file; the PostgreSQL refusal is tested below")
def test_export_sqlite_is_consistent_copy(tmp_path, mem):
    mem.add("copied memory", agent="codex")
    dest = mem.export_sqlite(tmp_path / "copy.sqlite")
    con = sqlite3.connect(dest)
    assert con.execute("SELECT request FROM turns").fetchone()[0] == "copied memory"
    with pytest.raises(InputError):
        mem.export_sqlite(dest)


def test_a_copy_to_a_file_on_postgresql_says_what_to_use_instead(tmp_path, mem):
    if not ON_POSTGRES:
        pytest.skip("PostgreSQL only: SQLite writes the copy (above)")
    from remem.store import StoreError

    mem.add("not copied", agent="codex")
    with pytest.raises(StoreError, match="remem export"):
        mem.export_sqlite(tmp_path / "copy.sqlite")
    assert not (tmp_path / "copy.sqlite").exists()


def test_migrations_recorded_and_idempotent(mem):
    if ON_POSTGRES:
        from remem.store.postgres.migrations import MIGRATIONS, migrate
    else:
        from remem.store.sqlite.migrations import MIGRATIONS, migrate  # type: ignore[assignment]

    names = [r[0] for r in mem.store.conn.execute("SELECT name FROM schema_migrations ORDER BY id")]
    assert names == [m.__name__ for m in MIGRATIONS]
    mem.add("survives re-migration", agent="codex")
    assert migrate(mem.store.conn) == []
    assert mem.stats()["turns"] == 1


def test_config_layers(remem_home, monkeypatch):
    mem = remem.open()
    assert mem.config.get("recall.token_budget") == 2000
    mem.config.set("recall.token_budget", "3000")
    assert remem.open().config.get("recall.token_budget") == 3000
    monkeypatch.setenv("REMEM_TOKEN_BUDGET", "1200")
    assert remem.open().config.get("recall.token_budget") == 1200
    from remem.config import ConfigError

    with pytest.raises(ConfigError):
        mem.config.set("recall.token_budget", "50")
    with pytest.raises(ConfigError):
        mem.config.set("no.such.key", "1")
    with pytest.raises(ConfigError):
        mem.config.set("sync.auto", "maybe")


def test_embedding_job_runs_outside_write(mem):
    mem.add("embed me later", agent="codex")
    assert mem.store.conn.execute("SELECT embed_state FROM turns").fetchone()[0] == "pending"
    assert mem.embed_pending() == 1
    if mem.store.engine == "sqlite":  # float32 bytes
        row = mem.store.conn.execute("SELECT model_id, dim, length(vector) / 4 FROM embeddings").fetchone()
    else:  # pgvector's column
        row = mem.store.conn.execute("SELECT model_id, dim, vector_dims(vec) FROM embeddings").fetchone()
    assert row[0].startswith("hash") and row[2] == row[1]
    assert mem.store.conn.execute("SELECT embed_state FROM turns").fetchone()[0] == "done"


def test_injected_context_is_not_part_of_the_request(mem):
    packet = ("<remem_memory_context>\nHistorical notes…\n1. old memory\n</remem_memory_context>\n"
              "<current_user_request>fix the build</current_user_request>")
    a = mem.add_turns([TurnIn(request=packet, reply="fixed", agent="claude-code", session_id="S")]).results[0]
    assert mem.get(a.id)["request"] == "fix the build"
    g = mem.add_turns([TurnIn(request="<hook_context>digest</hook_context>\n\nrun tests", reply="ok",
                              agent="gemini", session_id="G")]).results[0]
    assert mem.get(g.id)["request"] == "run tests"


def test_sessions_clear_all_and_embedder_status(mem):
    mem.add("first in s1", agent="codex", session="s1")
    mem.add("second in s1", agent="codex", session="s1")
    mem.add("other owner", agent="codex", session="s2", owner="someone-else")
    sess = mem.sessions()
    assert [(s["session_id"], s["turn_count"]) for s in sess] == [("s1", 2)]
    assert mem.sessions(owner="someone-else")[0]["session_id"] == "s2"
    st = mem.embedder_status()
    assert st["configured"] == "hash" and st["loaded"] is None and st["pending"] == 3
    mem.embed_pending()
    assert mem.embedder_status()["loaded"].startswith("hash")
    mem.reset_embedder()
    assert mem.embedder_status()["loaded"] is None
    deleted = mem.clear_all()
    assert deleted["turns"] == 3 and mem.stats()["turns"] == 0 and mem.stats(owner="someone-else")["turns"] == 0
    assert (mem.home / "token").exists() and (mem.home / "config.yaml").exists()

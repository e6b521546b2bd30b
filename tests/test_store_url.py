"""The tests' store is opened by database URL: SQLite in the test's home unless REMEM_TEST_DATABASE_URL
names another engine; an engine that is not built is one clear StoreError, nothing created."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import database_url
from remem.scope import Scope
from remem.store import StoreError, open_store


def test_store_fixture_is_the_homes_database_by_url(store, remem_home: Path) -> None:
    if os.environ.get("REMEM_TEST_DATABASE_URL"):
        pytest.skip("the suite runs on another engine")
    assert database_url(remem_home).startswith("sqlite:///")
    assert store.engine == "sqlite"
    store.sources.ensure("claude-code", agent="claude-code", path="/h/.claude/projects", format="claude-jsonl")
    with store.transaction():
        store.sources.save_checkpoint("claude-code", "claude-code:/h/a.jsonl", path="/h/a.jsonl", size=10,
                                      mtime=1.5, last_ts=2.0, last_msg_id="m9", content_hash="abc")
        store.sources.record_run("claude-code", cursor=2.0, scan_start=1.0, clean=True, result={"turns_added": 1})

    import remem

    with remem.open() as m:   # the library opens the same database in the same home
        assert m.store.key == store.key
        st = m.store.sources.state("claude-code")
        assert st is not None and st["cursor"] == 2.0 and st["baseline"] == 1.0
        assert m.store.sources.checkpoints("claude-code")["claude-code:/h/a.jsonl"]["last_msg_id"] == "m9"
        assert m.store.sources.project_paths(Scope.of("default")) == []


def test_test_url_reaches_subprocesses_as_database_url(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("REMEM_DATABASE_URL", f"sqlite:///{tmp_path / 'other.db'}")
    assert database_url(tmp_path / "home") == f"sqlite:///{tmp_path / 'other.db'}"


@pytest.mark.parametrize("url", ["postgresql://remem:s3cret-pw@127.0.0.1:9/remem",
                                 "postgres://remem@127.0.0.1:9/remem"])
def test_a_server_that_does_not_answer_is_a_clear_store_error(url: str, tmp_path: Path) -> None:
    store = open_store(url, tmp_path)        # opened lazily: the first use connects
    assert store.engine == "postgresql" and "s3cret-pw" not in store.url
    with pytest.raises(StoreError) as e:
        store.migrate()
    msg = str(e.value)
    assert "cannot reach the PostgreSQL database postgres" in msg and "127.0.0.1:9/remem" in msg
    assert "s3cret-pw" not in msg            # the password never reaches a message
    assert list(tmp_path.iterdir()) == []    # nothing created


def test_unknown_engine_and_bad_sqlite_urls(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="unknown engine 'mysql'"):
        open_store("mysql://u@h/db", tmp_path)
    with pytest.raises(StoreError, match="three slashes"):
        open_store("sqlite://remem.db", tmp_path)

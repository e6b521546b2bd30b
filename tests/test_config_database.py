"""``database.url``: the store is opened from a URL (``sqlite:///remem.db`` by default, relative to the
home); an older config file's ``database: remem.db`` keeps working; ``REMEM_DATABASE_URL`` wins; a
``postgresql://`` URL opens the PostgreSQL engine, and a server it cannot reach is one clear error
without the password."""

from __future__ import annotations

import json
import sqlite3

import pytest

from remem import config as configmod
from remem.settings import SPECS

NOTES = [
    "Retry budget: test_retry_backoff times out on CI because the sandbox answers in 7 s; raised to 15 s "
    "in tests/conftest.py and pinned pytest-timeout==2.3.1",
    "数据库迁移：把 sessions 表的 started_at 改成整数秒，旧数据用 strftime('%s') 转换，迁移脚本在 "
    "migrations/0007_sessions_int.py",
    "Stripe webhook signature failures came from reading request.body() twice; read once, verify with "
    "stripe.Webhook.construct_event(payload, sig, secret)",
]


def _count(db) -> int:
    with sqlite3.connect(db) as c:
        return c.execute("SELECT count(*) FROM turns").fetchone()[0]


@pytest.mark.sqlite_only("the SQLite file config.yaml names; on PostgreSQL the suite's REMEM_DATABASE_URL wins")
def test_an_old_config_with_database_as_a_file_name_keeps_working(cli, remem_home):
    remem_home.mkdir(parents=True)
    (remem_home / "config.yaml").write_text("owner: alice   # me\ndatabase: old-memories.db\nlegacy_key: kept\n",
                                            encoding="utf-8")
    for note in NOTES:
        r = cli("add", note)
        assert r.returncode == 0, r.stderr.decode()
    assert (remem_home / "old-memories.db").is_file() and not (remem_home / "remem.db").exists()
    assert _count(remem_home / "old-memories.db") == len(NOTES)
    got = cli("config", "get", "database.url", "--json")
    assert json.loads(got.stdout)["value"] == "sqlite:///old-memories.db", got.stderr.decode()
    # the next `config set` rewrites the old key as its URL and keeps what it does not know
    assert cli("config", "set", "recall.token_budget", "1500").returncode == 0
    assert "url: sqlite:///old-memories.db" in (remem_home / "config.yaml").read_text()
    assert "legacy_key: kept" in (remem_home / "config.yaml").read_text()
    assert _count(configmod.load(remem_home, env={}).db_path) == len(NOTES)


@pytest.mark.sqlite_only("the SQLite file config.yaml names; on PostgreSQL the suite's REMEM_DATABASE_URL wins")
def test_database_url_and_its_environment_variable(cli, remem_home, tmp_path):
    elsewhere = tmp_path / "team" / "shared.db"
    elsewhere.parent.mkdir()
    r = cli("config", "set", "database.url", f"sqlite:///{elsewhere}")
    assert r.returncode == 0, r.stderr.decode()
    assert cli("add", NOTES[0]).returncode == 0
    assert _count(elsewhere) == 1 and _count(remem_home / "remem.db") == 0   # the home's file: untouched
    r = cli("add", NOTES[1], env={"REMEM_DATABASE_URL": "sqlite:///env.db"})
    assert r.returncode == 0, r.stderr.decode()
    assert _count(remem_home / "env.db") == 1 and _count(elsewhere) == 1


def test_a_postgresql_server_it_cannot_reach_is_one_clear_error_and_the_file_is_kept(cli, remem_home):
    assert cli("init").returncode == 0
    before = (remem_home / "config.yaml").read_text()
    r = cli("add", NOTES[2], env={"REMEM_DATABASE_URL": "postgresql://remem:s3cret@127.0.0.1:9/memories"})
    err = r.stderr.decode()
    assert r.returncode == 1 and "Traceback" not in err, err
    assert "cannot reach the PostgreSQL database postgresql://remem:***@127.0.0.1:9/memories" in err, err
    assert "s3cret" not in err, err
    r = cli("add", NOTES[2], env={"REMEM_DATABASE_URL": "mysql://db/remem"})
    err = r.stderr.decode()
    assert r.returncode == 1 and "environment variable REMEM_DATABASE_URL: database.url must be" in err, err
    assert (remem_home / "config.yaml").read_text() == before


def test_a_bad_value_in_the_file_names_the_file_and_the_key_and_loses_nothing(cli, remem_home):
    assert cli("init").returncode == 0
    text = "owner: alice\n# my settings\nhooks:\n  timeout: forever\nrecall:\n  token_budget: 1800\n"
    (remem_home / "config.yaml").write_text(text, encoding="utf-8")
    r = cli("add", NOTES[0])
    err = r.stderr.decode()
    assert r.returncode == 1 and "Traceback" not in err, err
    assert f"{remem_home / 'config.yaml'}: hooks.timeout must be a number between 0.05 and 45, got 'forever'" \
        in err, err
    r = cli("config", "set", "recall.token_budget", "1900")      # the file would still be bad: refused
    assert r.returncode == 1 and "hooks.timeout must be" in r.stderr.decode(), r.stderr.decode()
    assert (remem_home / "config.yaml").read_text() == text              # never rewritten, comment and all
    r = cli("config", "set", "hooks.timeout", "6")                   # …but `set` can fix the bad value
    assert r.returncode == 0, r.stderr.decode()
    assert cli("add", NOTES[0]).returncode == 0
    assert configmod.load(remem_home, env={}).settings.recall.token_budget == 1800
    r = cli("add", NOTES[1], env={"REMEM_PORT": "port-7077"})
    assert r.returncode == 1
    assert "environment variable REMEM_PORT: server.port must be a whole number between 1 and 65535, got " \
        "'port-7077'" in r.stderr.decode(), r.stderr.decode()


def test_config_list_and_get_show_type_default_source_variable_and_reason(cli, remem_home):
    assert cli("config", "set", "recall.token_budget", "1500").returncode == 0
    rows = json.loads(cli("config", "list", "--json").stdout)
    by = {r["key"]: r for r in rows}
    assert set(by) == {k for k in SPECS if not k.startswith("agents.<id>.")}
    assert by["recall.token_budget"] == {
        "key": "recall.token_budget", "value": 1500, "source": str(remem_home / "config.yaml"), "type": "int",
        "default": 2000, "allowed": "a whole number between 800 and 4000", "env": "REMEM_TOKEN_BUDGET",
        "reason": "enough for 5–8 memories without crowding the agent's context"}
    got = json.loads(cli("config", "get", "hooks.timeout", "--json", env={"REMEM_HOOK_TIMEOUT": "3"}).stdout)
    assert (got["value"], got["source"], got["default"]) == (3.0, "environment variable REMEM_HOOK_TIMEOUT", 8.0)
    human = cli("config", "list", "hooks").stdout.decode()
    assert "hooks.timeout = 8.0   (float, default 8.0; REMEM_HOOK_TIMEOUT; from default)" in human, human
    assert "allowed: a number between 0.05 and 45" in human and "server.port" not in human
    r = cli("config", "get", "recall.top_k")
    assert r.returncode == 1 and "unknown setting: recall.top_k" in r.stderr.decode()
    r = cli("config", "set", "recall.token_budget", "1600", env={"REMEM_TOKEN_BUDGET": "1000"})
    assert r.returncode == 0 and "REMEM_TOKEN_BUDGET is set in this environment and wins" in r.stderr.decode()


def test_the_owners_route_reads_the_typed_agent_settings(cli, remem_home):
    import httpx

    from remem.server.testing import Daemon

    for key, value in [("owner", "alice"), ("agents.reviewer.isolated", "true"), ("agents.codex.owner", "team"),
                       ("agents.gemini.read_owners", "[team]")]:
        assert cli("config", "set", key, value).returncode == 0
    d = Daemon(remem_home).start()
    try:
        r = httpx.get(d.url + "/api/v1/owners", headers={"authorization": f"Bearer {d.token}"}, timeout=10)
        assert r.status_code == 200, r.text
        assert r.json() == {"default": "alice", "owners": ["alice", "team", "agent:reviewer"]}
    finally:
        d.stop()

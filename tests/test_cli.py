"""The real ``remem`` command in subprocesses: contract, help, bad input, concurrency."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from remem.cli import cli as cli_group


def _all_commands(group: click.Group, prefix: str = ""):
    for name, cmd in group.commands.items():
        yield prefix + name, cmd
        if isinstance(cmd, click.Group):
            yield from _all_commands(cmd, prefix + name + " ")


@pytest.mark.parametrize("name,command", list(_all_commands(cli_group)))
def test_commands_have_help(name, command):
    assert command.help, f"{name} is missing its help"


def test_contract_add_search_get(cli):
    r = cli("add", "Redis cache invalidation uses pub/sub", "--owner", "o1", "--agent", "codex",
            "--project", "shop", "--session", "S9", "--json")
    assert r.returncode == 0, r.stderr
    added = json.loads(r.stdout)
    assert added["status"] == "added" and added["id"].startswith("t_")
    r = cli("search", "redis", "--owner", "o1", "-k", "5", "--json")
    res = json.loads(r.stdout)["results"]
    assert res[0]["id"] == added["id"]
    assert set(res[0]) >= {"id", "score", "text", "owner", "agent", "project", "session_id", "created_at"}
    assert (res[0]["owner"], res[0]["agent"], res[0]["project"], res[0]["session_id"]) == ("o1", "codex", "shop", "S9")
    assert json.loads(cli("search", "redis", "--owner", "o2", "--json").stdout)["results"] == []
    full = json.loads(cli("get", added["id"], "--owner", "o1", "--json").stdout)
    assert full["request"] == "Redis cache invalidation uses pub/sub"
    assert cli("get", added["id"], "--owner", "o2").returncode != 0
    dup = json.loads(cli("add", "Redis cache invalidation uses pub/sub", "--owner", "o1", "--agent", "codex",
                         "--project", "shop", "--session", "S9", "--json").stdout)
    assert dup == {"id": added["id"], "status": "duplicate"}


def test_every_command_works_on_empty_home(cli, remem_home):
    assert not remem_home.exists()
    for args in (["stats", "--json"], ["search", "nothing", "--json"], ["doctor", "--no-embedder", "--json"],
                 ["config", "show", "--json"]):
        r = cli(*args)
        assert r.returncode == 0, (args, r.stderr)
    assert (remem_home / "token").exists()


def test_config_cli(cli):
    assert cli("config", "set", "recall.token_budget", "1500").returncode == 0
    assert cli("config", "get", "recall.token_budget").stdout.strip() == b"1500"
    r = cli("config", "set", "recall.token_budget", "lots")
    assert r.returncode == 1 and r.stderr.startswith(b"remem: error:") and b"Traceback" not in r.stderr


def test_an_unknown_embedding_model_is_refused_and_embeddings_off_is_said(cli, remem_home):
    """`config set embedding.model` takes a model remem can load (a typo left recall lexical and only
    `remem doctor` said why); with embeddings off, status and stats say so instead of "waiting for the
    daemon"."""
    r = cli("config", "set", "embedding.model", "e5-smal")
    assert r.returncode == 1 and b"unknown embedding model 'e5-smal'" in r.stderr and b"e5-small" in r.stderr
    conf = remem_home / "config.yaml"
    assert not conf.exists() or b"e5-smal" not in conf.read_bytes()
    assert cli("config", "set", "embedding.model", "hash").returncode == 0
    assert cli("add", "the staging kubeconfig lives in ~/.kube/staging", "--agent", "codex").returncode == 0
    on = cli("status").stdout.decode()
    assert "1 turn waiting" in on and "the daemon embeds them" in on, on
    off_env = {"REMEM_EMBEDDING_ENABLED": "0"}
    off = cli("status", env=off_env).stdout.decode()
    assert "embeddings: off" in off and "1 turn without a vector" in off and "daemon embeds" not in off, off
    assert "(off: embedding.enabled is false" in cli("stats", env=off_env).stdout.decode()


@pytest.mark.parametrize("payload,needle", [
    (b"bad \xff\xfe bytes", b"UTF-8"),
    (b"nul \x00 byte", b"NUL"),
    (b"   \n\t ", b"empty"),
])
def test_bad_stdin_input_one_line_error(cli, payload, needle):
    r = cli("add", "-", "--agent", "codex", input=payload)
    assert r.returncode != 0
    assert needle in r.stderr and b"Traceback" not in r.stderr and len(r.stderr.splitlines()) == 1
    assert json.loads(cli("stats", "--json").stdout)["turns"] == 0


def test_huge_input_skipped_not_truncated(cli):
    r = cli("add", "-", "--agent", "codex", "--json", input=b"y" * (2 * 1024 * 1024 + 10))
    assert r.returncode == 1 and json.loads(r.stdout)["status"] == "skipped_oversize"
    assert json.loads(cli("stats", "--json").stdout)["turns"] == 0


@pytest.mark.sqlite_only("a corrupted SQLite file in the home")
def test_corrupted_database(cli, remem_home):
    assert cli("init").returncode == 0
    db = remem_home / "remem.db"
    for suffix in ("-wal", "-shm"):
        p = remem_home / ("remem.db" + suffix)
        if p.exists():
            p.unlink()
    db.write_bytes(b"this is not a database" * 100)
    r = cli("add", "hello", "--agent", "codex")
    assert r.returncode != 0 and b"corrupted" in r.stderr and b"Traceback" not in r.stderr
    assert len(r.stderr.splitlines()) == 1


@pytest.mark.sqlite_only("SQLite's max_page_count stands in for a full disk")
def test_database_full_leaves_no_partial_rows(mem):
    from remem.model import TurnIn
    from remem.store import StoreError

    mem.add("small", agent="codex")
    pages = mem.store.conn.execute("PRAGMA page_count").fetchone()[0]
    mem.store.conn.execute(f"PRAGMA max_page_count = {pages + 2}")
    big = [TurnIn(request=f"turn {i} " + "word " * 20000, agent="codex") for i in range(5)]
    with pytest.raises(StoreError, match="no space"):
        mem.add_turns(big)
    assert mem.stats()["turns"] == 1


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions")
def test_read_only_home(cli, remem_home):
    assert cli("init").returncode == 0
    os.chmod(remem_home / "remem.db", 0o400)
    os.chmod(remem_home, 0o500)
    try:
        r = cli("add", "hello", "--agent", "codex")
        assert r.returncode != 0 and b"Traceback" not in r.stderr
    finally:
        os.chmod(remem_home, 0o700)


def test_read_only_handle_refuses_writes(mem):
    import remem
    from remem.store import StoreError

    mem.add("exists", agent="codex")
    ro = remem.open(mem.home, readonly=True)
    assert ro.search("exists")
    with pytest.raises(StoreError):
        ro.add("nope", agent="codex")


WRITER = r"""
import sys, remem
from remem.model import TurnIn
mem = remem.open()
w = int(sys.argv[1])
for i in range(200):
    mem.add_turns([TurnIn(request=f"writer {w} turn {i}", reply="ok", agent="codex", session_id=f"w{w}",
                          source_key=f"w{w}:{i}")])
print("done")
"""


def test_eight_concurrent_writers(remem_home):
    import remem

    remem.open().close()
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(w)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) for w in range(8)]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (_out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err.decode()[-500:]
        assert b"locked" not in err
    assert remem.open().stats()["turns"] == 1600


def test_up_lists_the_files_it_could_not_read(cli):
    """A file that failed is reported once per change (sync re-reads only what changed), so
    `remem up` names the reasons itself instead of pointing at a later `remem sync`."""
    from conftest import copy_fixture

    copy_fixture("claude-code/projects", Path(os.environ["HOME"]) / ".claude" / "projects")
    r = cli("up", "--no-daemon")
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode()
    assert "could not be read:" in out
    reasons = [line.strip()[2:] for line in out.splitlines() if line.strip().startswith("! ")]
    assert any("edge_cases.jsonl: not a json object" in x for x in reasons), out
    again = cli("sync", "--json")
    assert json.loads(again.stdout)["total"]["errors"] == []  # unchanged files are not read again


def test_search_shows_when_the_work_happened_not_when_it_was_stored(mem, cli):
    from remem.model import TurnIn

    mem.add_turns([TurnIn(request="rotate the zebrafish keys", reply="done with vault", owner="default",
                          agent="codex", project="ops", session_id="s", started_at=1_700_000_000.0,
                          ended_at=1_700_000_060.0)])
    out = cli("search", "zebrafish").stdout.decode()
    assert "2023-11-14 22:14" in out, out  # ended_at, in UTC
    got = json.loads(cli("search", "zebrafish", "--json").stdout)["results"][0]
    assert (got["started_at"], got["ended_at"]) == (1_700_000_000.0, 1_700_000_060.0)


def test_a_reader_that_goes_away_ends_the_command_quietly(mem):
    """`remem sources | head -1`: the closed pipe ends the command with 141 and no error line."""
    from conftest import copy_fixture

    copy_fixture("claude-code/projects", Path(os.environ["HOME"]) / ".claude" / "projects")
    proc = subprocess.Popen([sys.executable, "-m", "remem", "sources"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()  # gone before the command has printed anything
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 141, err
    assert b"error" not in err.lower()


def _write_claude_session(home: Path, turns: int) -> None:
    """A real-shaped Claude Code transcript: user prompts, assistant replies with a Bash tool call."""
    proj = home / ".claude" / "projects" / "-home-dev-shop"
    proj.mkdir(parents=True, exist_ok=True)
    lines = []
    for i in range(turns):
        ts = f"2026-03-0{i + 1}T10:00:00.000Z"
        lines.append({"type": "user", "sessionId": "s-1", "cwd": "/home/dev/shop", "timestamp": ts,
                      "uuid": f"u{i}", "message": {"role": "user", "content": f"why does the deploy of shop #{i} hang?"}})
        lines.append({"type": "assistant", "sessionId": "s-1", "cwd": "/home/dev/shop", "timestamp": ts,
                      "uuid": f"a{i}", "parentUuid": f"u{i}", "message": {
                          "role": "assistant", "model": "claude-sonnet-4",
                          "content": [{"type": "text", "text": "The readiness probe points at /healthz, which "
                                                               "the new build no longer serves."}]}})
    (proj / "s-1.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_up_says_what_is_true_and_suggests_hooks_only_where_missing(cli):
    """The first `remem up` on an empty machine does not claim history is "up to date", and
    `next: remem hooks install` appears only while a found agent lacks remem's hooks."""
    home = Path(os.environ["HOME"])
    r = cli("up", "--no-daemon")
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode()
    assert "no agent history found on this machine yet" in out and "up to date" not in out, out
    assert "next:" not in out and "hooks install" not in out, out  # no agent to install into

    _write_claude_session(home, 1)
    r = cli("up", "--no-daemon")
    out = r.stdout.decode()
    assert "imported: 1 new memory from 2 messages" in out, out
    assert "next: remem hooks install   (live capture and recall inside claude-code)" in out, out
    assert "up to date" in cli("up", "--no-daemon").stdout.decode()

    assert cli("hooks", "install", "claude-code").returncode == 0
    out = cli("up", "--no-daemon").stdout.decode()
    assert "next:" not in out and "hooks: installed in claude-code" in out, out


def test_counts_are_singular_for_one(cli):
    added = json.loads(cli("add", "We deploy the shop with `kubectl rollout restart deploy/shop` after the "
                           "migration job; rollback is `kubectl rollout undo deploy/shop`", "--json").stdout)
    stats = cli("stats").stdout.decode()
    assert "memories: 1 turn in " in stats and "1 turns" not in stats, stats
    r = cli("forget", added["id"], "--yes")
    assert r.returncode == 0, r.stderr
    assert "forgot 1 memory" in r.stdout.decode() and "1 memories" not in r.stdout.decode()
    _write_claude_session(Path(os.environ["HOME"]), 1)
    out = cli("sync").stdout.decode()
    assert "total: 2 messages scanned" in out and "1 memory added" in out, out
    from remem.cli import count

    assert [count(n, "memory", "memories") for n in (0, 1, 2)] == ["0 memories", "1 memory", "2 memories"]
    assert count(1, "session") == "1 session" and count(3, "session") == "3 sessions"

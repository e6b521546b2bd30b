"""`remem import` goes through the one write pipeline (entities, substrings, audit, redaction,
tombstones) and survives bad lines; a bad time anywhere (sync, API, import, or a row an older
version stored) never switches off search and recall."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path

import pytest

import remem
from remem.model import ToolCall, TurnIn
from remem.store.sqlite import migrations

TRACE = """Traceback (most recent call last):
  File "/home/alice/proj/shop/payments/retry.py", line 88, in charge
    resp = client.post(url, json=payload, timeout=self.timeout)
httpx.ReadTimeout: timed out after 5.0s
"""


def shop_turns(n: int = 12, owner: str = "default") -> list[TurnIn]:
    now = time.time() - 86400 * 30
    topics = [
        ("Why does test_retry_backoff fail with a ReadTimeout?", "Raise the timeout in payments/retry.py to 15 s.",
         [ToolCall("Bash", "pytest tests/test_retry.py -x", TRACE * 4 + "FAILED", is_error=True)]),
        ("How do we deploy the shop service?", "kubectl rollout restart deploy/shop after alembic upgrade head.",
         [ToolCall("Bash", "cat deploy.sh", "#!/bin/sh\nalembic upgrade head\nkubectl rollout restart deploy/shop")]),
        ("把日志级别改成 DEBUG 并重启 worker", "已在 config/logging.yaml 设置 level: DEBUG，并重启 celery worker。",
         [ToolCall("Edit", "config/logging.yaml", "level: DEBUG")]),
    ]
    out = []
    for i in range(n):
        req, rep, acts = topics[i % len(topics)]
        out.append(TurnIn(request=f"{req} (#{i})", reply=rep, actions=acts, owner=owner, agent="claude-code",
                          project="/home/alice/proj/shop", session_id=f"s{i // 4}", started_at=now + i * 600,
                          ended_at=now + i * 600 + 45, source_key=f"claude-code:s{i // 4}:u{i}"))
    return out


def export_lines(tmp_path: Path) -> list[str]:
    src = remem.open(tmp_path / "src")
    src.add_turns(shop_turns())
    src.index_pending(embed=False)
    path = tmp_path / "export.jsonl"
    with path.open("w", encoding="utf-8") as f:
        src.export_jsonl(f)
    src.close()
    return path.read_text(encoding="utf-8").splitlines()


@pytest.mark.sqlite_only("two homes on one database server share that database")
def test_an_export_re_imported_keeps_its_entities_substrings_and_audit(tmp_path, cli, remem_home):
    lines = export_lines(tmp_path)
    src = sqlite3.connect(tmp_path / "src" / "remem.db")
    want = src.execute("SELECT count(*) FROM entity_mentions").fetchone()[0]
    assert want > 12
    r = cli("import", str(tmp_path / "export.jsonl"), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["added"] == 12
    db = sqlite3.connect(remem_home / "remem.db")
    assert db.execute("SELECT count(*) FROM entity_mentions").fetchone()[0] == want
    assert db.execute("SELECT count(*) FROM turns WHERE trgm = 0").fetchone()[0] == 0
    assert db.execute("SELECT count(*) FROM audit WHERE action = 'write'").fetchone()[0] >= 1
    # the substring channel finds an identifier inside a word
    hits = json.loads(cli("search", "retry_back", "--json").stdout)["results"]
    assert hits and "test_retry_backoff" in hits[0]["text"]
    # ids and times survive
    got = {json.loads(x)["id"]: json.loads(x) for x in lines}
    for row in db.execute("SELECT id, started_at, created_at FROM turns"):
        assert row[1] == got[row[0]]["started_at"] and row[2] == got[row[0]]["created_at"]


def _deep(n: int) -> str:
    return "[" * n + "]" * n


def bad_import_file(tmp_path: Path) -> Path:
    lines = export_lines(tmp_path)
    rec = json.loads(lines[0])
    mixed = [
        lines[0],
        "{not json",                                                    # 2: broken JSON
        _deep(200_000),                                                 # 3: nested far too deep
        json.dumps({**rec, "request": {"a": 1}, "source_key": "x:1"}),  # 4: wrong type
        lines[1],
        json.dumps({**rec, "id": "", "source_key": "imp:yesterday", "request": "rotate the staging TLS cert",
                    "started_at": "yesterday", "ended_at": 1e24}),      # 6: imported, its time replaced
        json.dumps([1, 2, 3]),                                          # 7: not a record
        *lines[2:],
    ]
    path = tmp_path / "mixed.jsonl"
    path.write_bytes("\n".join(mixed).encode() + b"\n\xff\xfe not utf-8\n")  # 18: not UTF-8
    return path


@pytest.mark.sqlite_only("two homes on one database server share that database")
def test_bad_lines_are_counted_and_skipped_and_the_rest_imported(tmp_path, cli):
    path = bad_import_file(tmp_path)
    r = cli("import", str(path))
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode()
    assert "added 13" in out and "invalid 5" in out and "times_fixed 1" in out
    assert "skipped 5 invalid lines (not a turn record): 2, 3, 4, 7, 18" in r.stderr.decode()
    data = json.loads(cli("search", "staging TLS cert", "--json").stdout)["results"]
    assert data and data[0]["text"].startswith("rotate the staging TLS cert")
    got = json.loads(cli("get", data[0]["id"], "--json").stdout)
    assert abs(got["started_at"] - time.time()) < 120 and got["ended_at"] == got["started_at"]
    assert cli("recall", "how do we rotate the staging TLS cert").returncode == 0
    # a file with no turn record at all is not an export
    junk = tmp_path / "junk.jsonl"
    junk.write_text("{not json\n" + _deep(200_000) + "\n")
    r = cli("import", str(junk))
    assert r.returncode != 0 and b"not a remem export" in r.stderr and b"line 1" in r.stderr


@pytest.mark.sqlite_only("two homes on one database server share that database")
def test_api_import_counts_bad_lines_and_a_deep_line_is_not_a_500(tmp_path):
    from remem.server.testing import Daemon

    path = bad_import_file(tmp_path)
    home = tmp_path / "remem"
    remem.open(home, env={"REMEM_EMBEDDING_MODEL": "hash"}).close()
    d = Daemon(home, env={"HOME": str(tmp_path), "REMEM_AUTO_SYNC": "0"}).start()
    try:
        with d.client() as c:
            r = c.post("/api/v1/import", content=path.read_bytes())
            assert r.status_code == 200, r.text
            counts = r.json()["counts"]
            assert (counts["added"], counts["invalid"], counts["times_fixed"]) == (13, 5, 1)
            assert counts["invalid_lines"] == [2, 3, 4, 7, 18]
            deep = c.post("/api/v1/import", content=_deep(200_000).encode() + b"\n")
            assert deep.status_code == 400 and "nested too deeply" in deep.json()["detail"]
            found = c.get("/api/v1/memories/search", params={"q": "staging TLS cert"}).json()["results"]
            assert found and found[0]["text"].startswith("rotate the staging TLS cert")
    finally:
        d.stop()


# --- times ---------------------------------------------------------------------------------------


NOW = 1.8e9
MIN_TS = 946_684_800.0  # 2000-01-01, the pipeline's floor


@pytest.mark.parametrize("started,ended,fallback,expected", [
    (1.7e9, 1.7e9 + 5, None, (1.7e9, 1.7e9 + 5, False)),
    (None, None, None, (None, None, False)),                       # no time at all stays unknown
    (1e24, 1.7e9, None, (1.7e9, 1.7e9, True)),                    # the turn's other time
    (1.7e9, float("inf"), None, (1.7e9, 1.7e9, True)),
    (-1e308, None, 1.6e9, (1.6e9, None, True)),                   # the file's / import's time
    ("yesterday", "yesterday", None, (NOW, NOW, True)),  # else now
    (float("nan"), 1.7e9, None, (1.7e9, 1.7e9, True)),
    (True, 1.7e9, None, (1.7e9, 1.7e9, True)),
    (MIN_TS - 1, None, None, (NOW, None, True)),
    (NOW + 86400 * 2, None, None, (NOW, None, True)),                # days in the future
    ("1700000000", None, None, (1.7e9, None, False)),
])
def test_turn_times(started, ended, fallback, expected):
    from remem.ingest.pipeline import turn_times

    assert turn_times(started, ended, NOW, fallback) == expected


def _claude(uid: str, kind: str, text: str, ts: object, parent: str | None = None) -> str:
    msg: dict = {"role": kind, "content": text}
    if kind == "assistant":
        msg = {"id": "m" + uid, "role": "assistant", "model": "claude-x", "content": [{"type": "text", "text": text}]}
    return json.dumps({"type": kind, "uuid": uid, "parentUuid": parent, "sessionId": "s-bad", "cwd": "/w/shop",
                       "timestamp": ts, "userType": "external", "message": msg}) + "\n"


FILE_TIME = 1_760_000_000.0  # 2025-10-09: when the history file was last written


def test_a_claude_line_with_timestamp_1e24_does_not_switch_off_search_and_recall(cli):
    f = Path(os.environ["HOME"]) / ".claude/projects/-w-shop/s-bad.jsonl"
    f.parent.mkdir(parents=True)
    f.write_text(_claude("u1", "user", "Where is the staging kubeconfig kept?", 1e24)
                 + _claude("a1", "assistant", "In ~/.kube/staging.yaml; the password is in 1Password.", 1e24, "u1")
                 + _claude("u2", "user", "And the prod kubeconfig?", "2026-01-01T10:01:00Z", "a1")
                 + _claude("a2", "assistant", "~/.kube/prod.yaml, read-only for you.", "2026-01-01T10:01:05Z", "u2"))
    os.utime(f, (FILE_TIME, FILE_TIME))
    r = cli("sync", "claude-code", "--json")
    assert r.returncode == 0, r.stderr
    total = json.loads(r.stdout)["total"]
    found = cli("search", "staging kubeconfig")  # the human output shows when each turn happened
    assert found.returncode == 0 and b"Where is the staging kubeconfig kept?" in found.stdout, found.stderr
    hits = json.loads(cli("search", "staging kubeconfig", "--json").stdout)["results"]
    shown = cli("get", hits[0]["id"])
    assert shown.returncode == 0 and b"staging.yaml" in shown.stdout, shown.stderr
    rec = cli("recall", "Where is the staging kubeconfig kept?")
    assert rec.returncode == 0 and b"staging.yaml" in rec.stdout, rec.stderr
    assert total["turns_added"] == 2 and total["times_fixed"] == 1
    # a turn with no plausible time of its own takes the history file's time, not the import's
    got = json.loads(cli("get", hits[0]["id"], "--json").stdout)
    assert got["started_at"] == got["ended_at"] == pytest.approx(FILE_TIME, abs=1)


def test_api_turns_with_started_at_minus_1e308_are_stored_with_a_plausible_time(tmp_path):
    from remem.server.testing import Daemon

    home = tmp_path / "remem"
    remem.open(home, env={"REMEM_EMBEDDING_MODEL": "hash"}).close()
    d = Daemon(home, env={"HOME": str(tmp_path), "REMEM_AUTO_SYNC": "0"}).start()
    try:
        with d.client() as c:
            turn = {"request": "why does the shop checkout return HTTP 502 behind nginx?",
                    "reply": "proxy_read_timeout was 5s; the payment call takes 7s. Raised it to 30s.",
                    "agent": "codex", "session_id": "s502", "started_at": -1e308, "ended_at": 1e300,
                    "actions": [{"name": "shell", "input": "tail /var/log/nginx/error.log",
                                 "output": "upstream timed out (110: Connection timed out)\n" * 40}]}
            r = c.post("/api/v1/turns", json={"turns": [turn]})
            assert r.status_code == 200
            [res] = r.json()["results"]
            found = c.get("/api/v1/memories/search", params={"q": "nginx 502 checkout"})
            assert found.status_code == 200, found.text
            assert found.json()["results"][0]["id"] == res["id"]
            pk = c.post("/api/v1/recall/turn-start", json={"prompt": "shop checkout HTTP 502 nginx timeout"})
            assert pk.status_code == 200 and res["id"] in pk.json()["text"]
            got = c.get(f"/api/v1/memories/{res['id']}").json()
            assert abs(got["started_at"] - time.time()) < 120 and got["ended_at"] == got["started_at"]
            assert r.json()["counts"] == {"added": 1, "times_fixed": 1}
    finally:
        d.stop()


BAD_VALUES = [1e24, -1e308, "yesterday", "2026-01-01T10:00:00Z", 1e18]


def _insert_bad_rows(db: sqlite3.Connection) -> None:
    for i, v in enumerate(BAD_VALUES):
        db.execute("INSERT INTO turns (id, source_key, owner, agent, project, session_id, request, reply, "
                   "created_at, updated_at, content_hash, started_at, ended_at, last_access) "
                   "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                   (f"t_bad{i}", f"old:{i}", "default", "codex", "/w/shop", "s-old",
                    f"kubectl rollout restart deploy/shop failed with ImagePullBackOff (#{i})",
                    "The image tag was wrong; fixed the tag in k8s/shop.yaml.", 1.7e9, v, f"h{i}", v, v, v))
        db.execute("INSERT OR IGNORE INTO sessions (id, owner, agent, project, started_at, updated_at, turn_count) "
                   "VALUES ('default/codex/s-old', 'default', 'codex', '/w/shop', ?, ?, 1)", (v, v))
    db.commit()


def _reads_work(mem: remem.Remem) -> None:
    hits = mem.search("kubectl rollout ImagePullBackOff", k=10)
    assert {h["id"] for h in hits} >= {f"t_bad{i}" for i in range(len(BAD_VALUES))}
    pk = mem.turn_start("why does kubectl rollout restart fail with ImagePullBackOff?")
    assert "t_bad" in pk["text"]
    for i in range(len(BAD_VALUES)):
        row = mem.get(f"t_bad{i}")
        assert row is not None
        for key in ("started_at", "ended_at", "created_at", "updated_at"):
            assert isinstance(row[key], float) and MIN_TS <= row[key] <= time.time() + 86400
    assert mem.timeline("s-old") and mem.sessions()


@pytest.mark.sqlite_only("text in a REAL column is SQLite's; PostgreSQL's typed columns refuse it (its trigger repairs numbers, tested in test_postgres.py)")
def test_rows_with_bad_times_written_by_raw_sql_do_not_break_reads(mem):
    mem.add_turns(shop_turns(6))
    _insert_bad_rows(mem.store.conn)
    mem.index_pending(embed=False)
    _reads_work(mem)


@pytest.mark.sqlite_only("SQLite's migrations m001–m006 of an older version")
def test_rows_an_older_version_stored_are_repaired_by_the_migration(remem_home):
    remem_home.mkdir(parents=True)
    db = sqlite3.connect(remem_home / "remem.db")
    db.row_factory = sqlite3.Row
    db.execute("CREATE TABLE schema_migrations (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, "
               "applied_at REAL NOT NULL)")
    old = migrations.MIGRATIONS[:6]  # the schema of the version before these repairs
    for i, fn in enumerate(old, start=1):
        fn(db)
        db.execute("INSERT INTO schema_migrations VALUES (?,?,?)", (i, fn.__name__, time.time()))
    db.commit()
    _insert_bad_rows(db)
    db.close()
    mem = remem.open()
    try:
        mem.index_pending(embed=False)
        _reads_work(mem)
    finally:
        mem.close()

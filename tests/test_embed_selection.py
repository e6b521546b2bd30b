"""What a turn's vectors see (embed/embedtext.py), the newest turns first, and the embedding
backlog with its ETA in `remem status --json` and the daemon's GET /status (issue 15)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from remem.bench.real_turns import real_turns
from remem.core import Remem
from remem.embed import embedtext, worker
from remem.embed.embedders import HashEmbedder
from remem.model import ToolCall, TurnIn
from remem.server.testing import Daemon

PYTEST_LOG = "\n".join(
    ["============================= test session starts ==============================",
     "collected 212 items", ""]
    + [f"tests/test_auth.py::test_case_{i} PASSED [{i:3d}%]" for i in range(200)]
    + ["", "    def test_refresh():", ">       assert token.refresh() == 'ok'",
       "E       KeyError: 'refresh_token'", "", "tests/test_auth.py:88: KeyError",
       "FAILED tests/test_auth.py::test_refresh - KeyError: 'refresh_token'"])
TRACEBACK = ("Traceback (most recent call last):\n  File \"/srv/app/auth.py\", line 12, in refresh\n"
             "    return self._store[key]\n" * 40 + "ValueError: token expired at 12:00")
CODE_REPLY = ("```python\n" + "def refresh(self):\n    return self._store['refresh_token']\n" * 60 + "```\n"
              "I moved the refresh into the retry loop so an expired token is renewed first.")

MOST = embedtext.REQUEST_HEAD + 3 + embedtext.REQUEST_TAIL + 1 + embedtext.GIST_BUDGET
# (case, request, summary, reply, must contain, must not contain, weight at most)
SUMMARY_CASES = [
    ("short chat turn is embedded whole", "When did Caroline go to the support group?", "", "",
     ["When did Caroline go to the support group?"], [], None),
    ("a request of 264 is whole", "word " * 52 + "last", "", "", ["word " * 52 + "last"], [" … "], None),
    ("a pasted request keeps its start and its end", "fix this: " + "log line 42 ok\n" * 400
     + "why does it fail only on CI?", "", "", ["fix this:", " … ", "why does it fail only on CI?"], [],
     MOST),
    ("the reply's opening prose, not its code", "fix the refresh test", "", CODE_REPLY,
     ["fix the refresh test", "I moved the refresh into the retry loop"], ["def refresh"], None),
    ("a summary wins over the reply", "fix it", "Renewed the token before the retry", "long reply " * 300,
     ["Renewed the token"], ["long reply"], None),
    ("Chinese counts three per character", "修复数据库迁移" * 200, "", "好的" * 500, ["修复数据库迁移"], [],
     MOST),
]


@pytest.mark.parametrize("case,request_,summary,reply,want,unwanted,most", SUMMARY_CASES,
                         ids=[c[0] for c in SUMMARY_CASES])
def test_summary_text(case, request_, summary, reply, want, unwanted, most):
    text = embedtext.summary_text(request_, summary, reply)
    for w in want:
        assert w in text, case
    for u in unwanted:
        assert u not in text, case
    if most is not None:
        assert embedtext.weight(text) <= most, case


CALLS = [
    {"name": "Bash", "input": json.dumps({"command": "python -m pytest tests/test_auth.py -x -q"}),
     "output": PYTEST_LOG, "is_error": True},
    {"name": "Read", "input": json.dumps({"file_path": "/home/dev/work/app/src/auth.py"}), "output": "x = 1\n" * 2000},
    {"name": "Grep", "input": json.dumps({"pattern": "refresh_token", "path": "."}), "output": "auth.py:12:..."},
    {"name": "Bash", "input": json.dumps({"command": "python -c 'import app.auth'"}), "output": TRACEBACK,
     "is_error": True},
    {"name": "Edit", "input": json.dumps({"file_path": "/home/dev/work/app/src/auth.py"}),
     "output": "--- a/src/auth.py\n+++ b/src/auth.py\n" + "+    retry()\n" * 500},
]

# (case, calls, must contain, must not contain)
ACTION_CASES = [
    ("no calls", [], [], []),
    ("the command and the most specific error line",
     CALLS[:1], ["Bash: python -m pytest tests/test_auth.py -x -q", "KeyError: 'refresh_token'"], ["PASSED"]),
    ("a file path keeps its tail", CALLS[1:2], ["Read: app/src/auth.py"], ["/home/dev", "x = 1"]),
    ("grep names its pattern", CALLS[2:3], ["Grep: refresh_token"], ["auth.py:12"]),
    ("a traceback gives its exception, not its frames", CALLS[3:4], ["ValueError: token expired"],
     ["File \"/srv", "Traceback"]),
    ("a diff's body stays out", CALLS[4:], ["Edit: app/src/auth.py"], ["retry()"]),
    ("a failed call without an error line is marked", [{"name": "Bash", "input": "make", "output": "",
                                                        "is_error": True}], ["Bash: make [error]"], []),
    ("input that is not JSON: its first line", [{"name": "shell", "input": "ls -la\nrm x", "output": "ok"}],
     ["shell: ls -la"], ["rm x"]),
]


@pytest.mark.parametrize("case,calls,want,unwanted", ACTION_CASES, ids=[c[0] for c in ACTION_CASES])
def test_actions_text(case, calls, want, unwanted):
    text = embedtext.actions_text(calls)
    for w in want:
        assert w in text, (case, text)
    for u in unwanted:
        assert u not in text, (case, text)
    assert embedtext.weight(text) <= embedtext.ACTIONS_BUDGET


def test_all_calls_fit_whole_lines_within_budget():
    text = embedtext.actions_text(CALLS * 4)
    assert embedtext.weight(text) <= embedtext.ACTIONS_BUDGET
    assert text.splitlines()[0].startswith("Bash: python -m pytest") and len(set(text.splitlines())) == len(text.splitlines())
    for line in text.splitlines():  # never a call cut in half
        assert any(line.startswith(c["name"] + ":") for c in CALLS)


def test_rendered_actions_without_json_still_give_a_short_text():
    rendered = "Bash: pytest -x\n→ " + PYTEST_LOG
    text = embedtext.actions_from_row("", rendered)
    assert text.startswith("Bash: pytest -x") and "KeyError: 'refresh_token'" in text
    assert embedtext.weight(text) <= embedtext.ACTIONS_BUDGET + 1


def test_real_shaped_turns_spend_few_tokens(tmp_path):
    """What the worker embeds of a stored real-shaped turn (2-20 KB tool outputs) is short, and
    the actions text names the calls' targets and errors rather than copying the first output."""
    mem = Remem(tmp_path / "h", env={"REMEM_EMBEDDING_ENABLED": "0"})
    turns = real_turns(30, seed=7)
    mem.add_turns(turns, defer_index=True)
    rows = mem.store.conn.execute("SELECT request, reply, summary, actions, actions_json FROM turns").fetchall()
    assert len(rows) == 30
    for r in rows:
        s = embedtext.summary_text(r["request"], r["summary"], r["reply"])
        a = embedtext.actions_from_row(r["actions_json"], r["actions"])
        assert embedtext.weight(s) <= MOST
        assert 0 < embedtext.weight(a) <= embedtext.ACTIONS_BUDGET
        assert r["request"].strip()[:60] in s
        names = {c["name"] for c in json.loads(r["actions_json"])}
        assert {ln.split(":", 1)[0] for ln in a.splitlines()} <= names
    mem.close()


def _turn(i: int, ts: float) -> TurnIn:
    return TurnIn(request=f"turn {i}: fix the retry in worker_{i}.py", reply=f"fixed worker_{i}", owner="o",
                  agent="claude-code", source_key=f"k{i}", started_at=ts, ended_at=ts,
                  actions=[ToolCall("Bash", json.dumps({"command": f"pytest tests/test_w{i}.py"}), "1 passed")])


def test_newest_turns_are_embedded_first(tmp_path):
    mem = Remem(tmp_path / "h", env={"REMEM_EMBEDDING_MODEL": "hash"})
    # written out of time order, as an import of several history files does
    times = {0: 1_700_000_000.0, 1: 1_700_900_000.0, 2: 1_700_100_000.0, 3: 1_700_800_000.0, 4: 1_700_200_000.0}
    res = mem.add_turns([_turn(i, ts) for i, ts in times.items()])
    ids = {r.id: i for r, i in zip(res.results, times, strict=True)}
    assert worker.run_pending(mem.store, HashEmbedder(), batch_size=2, limit=2) == 2
    done = {ids[r[0]] for r in mem.store.conn.execute("SELECT id FROM turns WHERE embed_state = 'done'")}
    assert done == {1, 3}  # the two newest
    fields = {r[0] for r in mem.store.conn.execute("SELECT field FROM embeddings")}
    assert fields == {"summary", "actions"}
    mem.close()


def _cli(home, *args):
    env = {**os.environ, "REMEM_HOME": str(home), "REMEM_AUTO_SYNC": "0", "REMEM_EMBEDDING_MODEL": "hash"}
    done = subprocess.run([sys.executable, "-m", "remem", *args], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def backlog_home(tmp_path):
    """A home with 300 real-shaped turns of which `remem embed --limit 64` embedded 64."""
    home = tmp_path / "remem"
    mem = Remem(home, env={"REMEM_EMBEDDING_MODEL": "hash"})
    mem.add_turns(real_turns(300, seed=5), defer_index=True)
    mem.close()
    assert json.loads(_cli(home, "embed", "--limit", "64", "--json"))["embedded"] == 64
    return home


def test_status_shows_the_backlog_and_its_eta_without_the_daemon(backlog_home):
    st = json.loads(_cli(backlog_home, "status", "--json"))
    assert st["running"] is False
    e = st["embedding"]
    assert e["pending"] == 236 and e["turns_per_s"] > 0
    assert e["eta_seconds"] == round(236 / e["turns_per_s"])
    human = _cli(backlog_home, "status")
    assert "embeddings: 236 turns waiting, about " in human and " turns/s" in human


def test_daemon_status_shows_the_backlog_and_its_eta(backlog_home):
    # nothing embeds meanwhile: no start-up jobs, and the embed job the writes queued is dropped
    mem = Remem(backlog_home, env={"REMEM_EMBEDDING_MODEL": "hash"})
    with mem.store.conn:
        mem.store.conn.execute("DELETE FROM jobs WHERE kind = 'embed'")
    mem.close()
    with Daemon(backlog_home, args=("--no-background",)) as d:
        e = d.get("/api/v1/status").json()["embedder"]
        assert e["pending"] == 236 and e["turns_per_s"] > 0 and e["eta_seconds"] == round(236 / e["turns_per_s"])
        st = json.loads(_cli(backlog_home, "status", "--json"))
        assert st["running"] and st["embedder"]["eta_seconds"] == e["eta_seconds"]
        assert ", 236 turns waiting, about " in _cli(backlog_home, "status")


def test_no_eta_before_a_rate_is_measured(tmp_path):
    home = tmp_path / "remem"
    mem = Remem(home, env={"REMEM_EMBEDDING_MODEL": "hash"})
    mem.add_turns([_turn(i, 1.7e9 + i) for i in range(5)])
    mem.close()
    e = json.loads(_cli(home, "status", "--json"))["embedding"]
    assert e == {"pending": 5, "turns_per_s": None, "eta_seconds": None, "enabled": True}
    assert "ETA unknown" in _cli(home, "status")

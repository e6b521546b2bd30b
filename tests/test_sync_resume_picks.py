"""`remem sync` of real-shaped Claude Code and Codex transcripts: a `/remem-resume` request and the
bare pick that answered it are no memories (the hook already keeps them out; the import must too),
and the human summary shows the quiet counts (ignored, skipped_forgotten, times_fixed)."""

from __future__ import annotations

import json
import os
from pathlib import Path

CWD = "/home/alice/proj/shop"
TRACE = """Traceback (most recent call last):
  File "/home/alice/proj/shop/payments/retry.py", line 88, in charge
    resp = client.post(url, json=payload, timeout=self.timeout)
  File "/home/alice/proj/shop/.venv/lib/python3.12/site-packages/httpx/_client.py", line 1145, in post
    return self.request("POST", url, json=json)
httpx.ReadTimeout: timed out after 5.0s
"""
RESUME_WRAPPER = ("<command-message>remem-resume</command-message>\n<command-name>/remem-resume</command-name>\n"
                  "<command-args>{args}</command-args>")
RESUME_BODY = ("/remem-resume {args}\n\nThe remem hook has answered this command in your context: inside "
               "`<remem_resume>` you find either a numbered list of past episodes or a message.")
LIST_REPLY = ("Here are the past episodes remem found:\n1. claude-code · shop · 17 months ago — Why does "
              "test_retry_backoff fail with a ReadTimeout on CI?\n2. codex · shop · 3 weeks ago — 把部署脚本改成先跑"
              "数据库迁移再重启服务\nWhich number should I resume?")
EPISODE_REPLY = ("That episode ended with the payment client timeout raised to 15 s in payments/retry.py; "
                 "the backoff stayed 0.5, 1, 2 s. Tell me how to continue.")


class Claude:
    """Writes one Claude Code session file (the JSONL shape of tests/fixtures/agents/claude-code)."""

    def __init__(self, sid: str) -> None:
        self.sid, self.n, self.minute, self.parent = sid, 0, 0, None
        self.path = Path(os.environ["HOME"]) / f".claude/projects/-home-alice-proj-shop/{sid}.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def _rec(self, kind: str, message: dict, **extra: object) -> dict:
        self.n += 1
        uid = f"{self.sid}-{kind[0]}{self.n}"
        rec = {"type": kind, "uuid": uid, "parentUuid": self.parent, "sessionId": self.sid, "cwd": CWD,
               "timestamp": f"2025-07-01T10:{self.minute:02d}:{self.n % 60:02d}Z", "userType": "external",
               "isSidechain": False, "version": "2.1.0", "message": message, **extra}
        self.parent = uid
        return rec

    def user(self, text: str, **extra: object) -> dict:
        return self._rec("user", {"role": "user", "content": text}, **extra)

    def say(self, text: str) -> dict:
        return self._rec("assistant", {"id": f"msg_{self.sid}_{self.n}", "type": "message", "role": "assistant",
                                       "model": "claude-sonnet-4-20250514", "stop_reason": "end_turn",
                                       "content": [{"type": "text", "text": text}]})

    def turn(self, prompt: str, reply: str, cmd: str = "", out: str = "") -> list[dict]:
        self.minute += 2
        recs = [self.user(prompt)]
        if cmd:
            call = f"toolu_{self.sid}_{self.n}"
            recs.append(self._rec("assistant", {"id": f"msg_{self.sid}_{self.n}", "role": "assistant",
                                                "model": "claude-sonnet-4-20250514", "content": [
                                                    {"type": "tool_use", "id": call, "name": "Bash",
                                                     "input": {"command": cmd}}]}))
            recs.append(self._rec("user", {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": call, "content": out}]}))
        recs.append(self.say(reply))
        return recs

    def resume(self, args: str) -> list[dict]:
        """`/remem-resume ARGS` as Claude Code records a slash command: the wrapper, the expanded
        command file (meta) and the assistant's answer."""
        self.minute += 2
        return [self.user(RESUME_WRAPPER.format(args=args)),
                self.user(RESUME_BODY.format(args=args), isMeta=True),
                self.say(LIST_REPLY if not args.strip().isdigit() else EPISODE_REPLY)]

    def write(self, *groups: list[dict]) -> None:
        with self.path.open("a", encoding="utf-8") as f:
            for g in groups:
                for r in g:
                    f.write(json.dumps(r, ensure_ascii=False) + "\n")


def jcli(cli, *args: str) -> dict:
    r = cli(*args, "--json")
    assert r.returncode == 0, r.stderr.decode()
    return json.loads(r.stdout)


def requests(cli) -> list[str]:
    r = cli("export")
    assert r.returncode == 0, r.stderr.decode()
    return [json.loads(line)["request"] for line in r.stdout.decode().splitlines()]


def test_a_resume_pick_in_a_claude_transcript_is_not_imported_but_an_ordinary_1_is(cli):
    s = Claude("s-resume")
    s.write(s.turn("Why does test_retry_backoff fail with a ReadTimeout on CI?",
                   "The payment client uses a 5 s timeout while CI answers in ~7 s; raised it to 15 s.",
                   "pytest tests/test_retry.py -x -q", TRACE * 20 + "FAILED tests/test_retry.py::test_retry_backoff"),
            s.resume("retry"),
            s.turn("1", EPISODE_REPLY),
            s.turn("Now add a test for the 15 s timeout", "Added tests/test_retry.py::test_timeout_15s.",
                   "pytest tests/test_retry.py -q", "3 passed in 0.41s"))
    # elsewhere "1" is an answer like any other: the agent asked which option, the user chose
    o = Claude("s-options")
    o.write(o.turn("部署前要先跑数据库迁移吗？给我两个方案", "方案 1：先 `alembic upgrade head` 再重启；方案 2：蓝绿部署。选哪个？"),
            o.turn("1", "好的，按方案 1：deploy.sh 先执行 `alembic upgrade head`，成功后再 `kubectl rollout restart`。",
                   "cat deploy.sh", "#!/bin/sh\nset -e\nalembic upgrade head\nkubectl rollout restart deploy/shop\n"))
    total = jcli(cli, "sync", "claude-code")["total"]
    got = requests(cli)
    assert got.count("1") == 1, got                      # only the options answer, not the resume pick
    assert not any("remem-resume" in r or "remem_resume" in r for r in got), got
    assert total["turns_added"] == 4 and total["ignored"] == 2, total
    # the answer to the resume list did not become the reply of the turn before it
    first = [json.loads(x) for x in cli("export").stdout.decode().splitlines()
             if "ReadTimeout on CI" in json.loads(x)["request"]]
    assert first and "raised it to 15 s" in first[0]["reply"] and "Which number" not in first[0]["reply"]
    ordinary = next(json.loads(x) for x in cli("export").stdout.decode().splitlines() if json.loads(x)["request"] == "1")
    assert ordinary["session_id"] == "s-options" and "alembic" in ordinary["reply"]


def test_a_pick_outside_the_list_or_later_in_the_session_is_an_ordinary_request(cli):
    s = Claude("s-later")
    s.write(s.turn("List the flaky tests in tests/test_retry.py", "test_retry_backoff and test_timeout_15s."),
            s.resume("flaky"),
            s.turn("9", "There is no candidate 9; the list had two."),       # not a pick of a 5-item list
            s.turn("2", "Re-ran test_timeout_15s 50 times: no failure."))   # no longer right after the list
    jcli(cli, "sync", "claude-code")
    got = requests(cli)
    assert "9" in got and "2" in got and not any("remem-resume" in r for r in got), got


def _codex(sid: str, prompts: list[tuple[str, str]]) -> None:
    """A Codex rollout where /remem-resume is typed text (Codex has no command file)."""
    d = Path(os.environ["HOME"]) / ".codex/sessions/2025/07/01"
    d.mkdir(parents=True, exist_ok=True)
    lines = [{"timestamp": "2025-07-01T09:00:00.000Z", "type": "session_meta",
              "payload": {"id": sid, "timestamp": "2025-07-01T09:00:00.000Z", "cwd": CWD, "originator": "codex_cli_rs",
                          "cli_version": "0.46.0", "instructions": None}}]
    for i, (prompt, reply) in enumerate(prompts):
        ts = f"2025-07-01T09:{i + 1:02d}:00.000Z"
        lines += [{"timestamp": ts, "type": "response_item", "payload": {
                       "type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]}},
                  {"timestamp": ts, "type": "event_msg", "payload": {"type": "user_message", "message": prompt}},
                  {"timestamp": ts, "type": "response_item", "payload": {
                      "type": "message", "role": "assistant", "content": [{"type": "output_text", "text": reply}]}},
                  {"timestamp": ts, "type": "event_msg", "payload": {"type": "agent_message", "message": reply}}]
    (d / f"rollout-2025-07-01T09-00-00-{sid}.jsonl").write_text(
        "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")


def test_codex_typed_resume_and_its_pick_are_not_imported(cli):
    sid = "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
    _codex(sid, [("Why is the staging deploy stuck at progressDeadlineSeconds?",
                  "The readiness probe hits /healthz before migrations finish; raised the deadline to 900."),
                 ("/remem-resume staging deploy", LIST_REPLY),
                 ("2", EPISODE_REPLY),
                 ("Add the probe delay to the chart", "Set initialDelaySeconds: 30 in charts/shop/values.yaml.")])
    total = jcli(cli, "sync", "codex")["total"]
    got = requests(cli)
    assert "2" not in got and not any("remem-resume" in r for r in got), got
    assert total["turns_added"] == 2 and total["ignored"] == 2, total


def test_the_human_sync_summary_shows_ignored_forgotten_and_fixed_times(cli):
    s = Claude("s-summary")
    s.write(s.turn("Where is the staging kubeconfig kept?", "In ~/.kube/staging.yaml; the password is in 1Password."),
            s.resume("kubeconfig"), s.turn("1", EPISODE_REPLY),
            s.turn("And the prod kubeconfig?", "~/.kube/prod.yaml, read-only for you."))
    first = cli("sync", "claude-code")
    assert first.returncode == 0, first.stderr
    out = first.stdout.decode()
    assert "  - 2 /remem-resume requests and picks not stored (ignored)" in out, out
    assert "forgot" not in out and "times_fixed" not in out           # zero counts stay quiet
    prod = next(json.loads(x) for x in cli("export").stdout.decode().splitlines()
                if json.loads(x)["request"] == "And the prod kubeconfig?")
    assert cli("forget", prod["id"]).returncode == 0
    # one more turn whose timestamp is absurd (1e24): the pipeline replaces it with the turn's other time
    s.minute += 2
    s.write([s.user("Rotate the staging kubeconfig password", timestamp=1e24),
             s.say("Rotated; the new password is in 1Password 'staging-k8s'.")])
    again = cli("sync", "claude-code", "--full", "--yes")
    assert again.returncode == 0, again.stderr
    out = again.stdout.decode()
    assert "  - 1 turn you forgot kept out (skipped_forgotten)" in out, out
    assert "  - 1 implausible time replaced by the turn's other time (times_fixed)" in out, out
    assert "  - 1 /remem-resume request or pick not stored (ignored)" not in out      # 2: plural
    assert "  - 2 /remem-resume requests and picks not stored (ignored)" in out

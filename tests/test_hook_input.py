"""The hook's input bounds, through the real entry point (``python -m remem.hook``) in a subprocess:
an agent that never closes stdin, one that sends its JSON and leaves stdin open, and a 20 MB paste."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time

import pytest

CWD = "/home/dev/shop"


def start(agent: str, event: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "remem.hook", agent, event], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "REMEM_PORT": "9", **(env or {})})


@pytest.fixture
def seeded(mem):
    for i in range(6):
        mem.add(f"We deploy the shop with `kubectl rollout restart deploy/shop` on staging; rollout {i} timed out "
                "until we raised progressDeadlineSeconds to 900", agent="codex", project=CWD, session=f"s{i}")
    mem.close()


def test_stdin_never_closed_fails_open_within_the_deadline(seeded, remem_home):
    q = start("cursor", "beforeSubmitPrompt", {"REMEM_HOOK_TIMEOUT": "1"})
    t0 = time.monotonic()
    try:
        q.wait(timeout=20)
    finally:
        if q.poll() is None:
            q.kill()
    took = time.monotonic() - t0
    assert q.returncode == 0 and took < 15, took
    assert json.loads(q.stdout.read()) == {"continue": True}     # Cursor's prompt hook must answer
    assert q.stderr.read() == b""
    q.stdin.close()
    assert "no complete input on stdin" in (remem_home / "logs" / "hooks.log").read_text()


def test_json_sent_and_stdin_left_open_is_handled(seeded):
    import remem

    p = start("claude-code", "UserPromptSubmit")
    try:
        p.stdin.write(json.dumps({"session_id": "open1", "cwd": CWD,
                                  "prompt": "how do we restart the shop deploy on staging?"}).encode())
        p.stdin.flush()                                    # and never closed
        p.wait(timeout=20)
        out = json.loads(p.stdout.read())["hookSpecificOutput"]["additionalContext"]
    finally:
        if p.poll() is None:
            p.kill()
        p.stdin.close()
    assert p.returncode == 0 and "kubectl rollout restart" in out
    mem = remem.open()
    try:
        assert [t["request"] for t in mem.list(agent="claude-code")] == ["how do we restart the shop deploy on staging?"]
    finally:
        mem.close()


def test_a_20_mb_paste_stays_inside_the_hook_budget(seeded, remem_home):
    rng = random.Random(3)
    words = "kubectl rollout restart deploy/shop staging timed out progressDeadlineSeconds".split()
    lines, size = ["Why does the shop rollout keep timing out on staging? Full log below."], 0
    while size < 20 * 1024 * 1024:
        ln = "ERROR " + " ".join(rng.choice(words) for _ in range(10))
        lines.append(ln)
        size += len(ln) + 1
    prompt = "\n".join(lines)
    payload = json.dumps({"session_id": "big", "cwd": CWD, "prompt": prompt}).encode()
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "remem.hook", "claude-code", "UserPromptSubmit"], input=payload,
                       capture_output=True, timeout=120, env={**os.environ, "REMEM_PORT": "9"})
    took = time.monotonic() - t0
    assert r.returncode == 0 and r.stderr == b""
    ctx = json.loads(r.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "kubectl rollout restart" in ctx                  # recall still answered
    echoed = ctx.split("<current_user_request>", 1)[1]
    assert len(echoed) < 6_000 and "characters of this request not repeated here" in echoed
    assert echoed.startswith("Why does the shop rollout") and echoed.rstrip().endswith("</current_user_request>")
    assert took < 12, f"{took:.1f}s for a 20 MB prompt (the hook's budget is 26 s; agents allow 60)"
    state = list((remem_home / "hooks" / "state").glob("*.json"))
    assert all(f.stat().st_size < 100_000 for f in state)     # the paste is not carried in hook state
    assert "skipped_oversize" in (remem_home / "logs" / "hooks.log").read_text()

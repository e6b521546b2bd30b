"""``/remem-resume`` across ``claude -p`` runs, through the real hook entry point in a subprocess.

``claude -p '/remem-resume retry'`` ends its session (SessionEnd) right after the list is shown;
``claude -p '1' --continue`` then picks from it — in the same session id or in a new one in the
same project. The list shows when the work happened, not when remem imported it, and neither the
command nor the pick is stored as a turn.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

CWD = "/home/dev/uploader"
MONTH = 30 * 86400


def hook(event: str, payload: dict, agent: str = "claude-code") -> str:
    r = subprocess.run([sys.executable, "-m", "remem.hook", agent, event], input=json.dumps(payload).encode(),
                       capture_output=True, timeout=120, env={**os.environ, "REMEM_PORT": "9"})
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode()
    return json.loads(out)["hookSpecificOutput"]["additionalContext"] if out.strip() else ""


def claude_p(session: str, prompt: str, *, cwd: str = CWD, source: str = "startup") -> str:
    """One `claude -p` run as its hooks see it: SessionStart, the prompt, Stop, SessionEnd."""
    base = {"session_id": session, "cwd": cwd, "transcript_path": ""}
    hook("SessionStart", {**base, "source": source})
    out = hook("UserPromptSubmit", {**base, "prompt": prompt})
    hook("Stop", {**base, "last_assistant_message": "Here are the episodes: 1. …"})
    hook("SessionEnd", {**base, "reason": "other"})
    return out


@pytest.fixture
def imported(mem):
    """Work done 17 months ago, imported five minutes ago (created_at is the import)."""
    now = time.time()
    ids = [mem.add(f"retry the flaky S3 upload with exponential backoff, attempt {i}", agent="codex", project=CWD,
                   session="old-upload", reply=f"added tenacity retry, attempt {i} passes", ts=now - 17 * MONTH + i)
           .id for i in range(3)]
    assert all(mem.get(i)["created_at"] > now - 60 for i in ids)
    mem.close()
    return ids


@pytest.mark.parametrize("second_session", ["same", "new"])
def test_resume_list_survives_session_end_and_shows_when_the_work_happened(imported, second_session):
    import remem

    listed = claude_p("run-1", "/remem-resume retry")
    assert listed.startswith("<remem_resume>") and "flaky S3 upload" in listed
    assert "17 months ago" in listed, listed
    assert "minutes ago" not in listed and "just now" not in listed
    sid = "run-1" if second_session == "same" else "run-2"
    episode = claude_p(sid, "1", source="resume")
    assert episode.startswith("<remem_resume_episode") and "tenacity retry" in episode
    assert 'when="17 months ago"' in episode
    mem = remem.open()
    try:
        assert mem.list(agent="claude-code") == []        # neither the command nor the pick is a turn
    finally:
        mem.close()
    # used once: another bare "1" is an ordinary prompt again
    again = claude_p(sid, "1", source="resume")
    assert "<remem_resume_episode" not in again


def test_an_ended_sessions_list_is_not_picked_from_another_project(imported):
    claude_p("run-a", "/remem-resume retry")
    out = claude_p("run-b", "1", cwd="/home/dev/other")
    assert "<remem_resume_episode" not in out

"""Generate a synthetic Claude Code history (``~/.claude/projects/<slug>/<session>.jsonl``).

Each turn is 4 messages: user prompt, assistant tool_use, user tool_result, assistant reply.
Used by the import benchmark and by the sync tests (kill -9, resume).
"""

from __future__ import annotations

import json
import random
import uuid
from pathlib import Path

WORDS = ("fix bug test deploy database migration login cache redis postgres docker build error refactor "
         "module function class import config yaml json api endpoint request response timeout retry").split()


def write_claude_history(projects: Path, *, sessions: int, turns: int, seed: int = 1,
                         start: float = 1.75e9) -> int:
    """Write ``sessions`` files of ``turns`` turns each; returns the number of messages written."""
    rng = random.Random(seed)
    n = 0
    t = start
    for s in range(sessions):
        proj = f"/home/dev/proj{s % 7}"
        d = projects / proj.replace("/", "-")
        d.mkdir(parents=True, exist_ok=True)
        sid = str(uuid.UUID(int=rng.getrandbits(128)))
        lines = []
        parent = None
        for k in range(turns):
            def rec(kind: str, message: dict, uid: str, sid: str = sid, proj: str = proj) -> dict:
                nonlocal t, parent
                t += 1.5
                r = {"type": kind, "uuid": uid, "parentUuid": parent, "sessionId": sid, "cwd": proj,
                     "userType": "external", "isSidechain": False, "version": "2.1.0",
                     "timestamp": _iso(t), "message": message}
                parent = uid
                return r
            words = " ".join(rng.choices(WORDS, k=12))
            call = f"toolu_{s}_{k}"
            lines.append(rec("user", {"role": "user", "content": f"turn {k}: please {words}"}, f"u{s}-{k}"))
            lines.append(rec("assistant", {"id": f"msg_{s}_{k}a", "role": "assistant", "model": "claude-x",
                                           "content": [{"type": "tool_use", "id": call, "name": "Bash",
                                                        "input": {"command": f"pytest -k {rng.choice(WORDS)}"}}]},
                             f"a{s}-{k}a"))
            lines.append(rec("user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call,
                                                                   "content": "2 passed"}]}, f"r{s}-{k}"))
            lines.append(rec("assistant", {"id": f"msg_{s}_{k}b", "role": "assistant", "model": "claude-x",
                                           "content": [{"type": "text", "text": f"Done: {words}."}]}, f"a{s}-{k}b"))
            n += 4
        (d / f"{sid}.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    return n


def _iso(ts: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"

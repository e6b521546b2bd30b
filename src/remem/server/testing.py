"""Helpers to run a real daemon in tests and benchmarks: a subprocess on a free loopback port.

    with Daemon(home) as d:
        d.get("/api/v1/stats").json()

Also a small generator of realistic turns (several agents, projects, sessions, tool calls,
English and Chinese) for viewer tests, demos and benchmarks.
"""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ..model import ToolCall, TurnIn


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Daemon:
    """``remem serve`` in a subprocess for ``home``; stopped (SIGTERM) on exit."""

    def __init__(self, home: Path, *, port: int | None = None, env: dict[str, str] | None = None,
                 args: tuple[str, ...] = (), wait: float = 30.0) -> None:
        self.home = Path(home)
        self.port = port or free_port()
        self.env = {**os.environ, "REMEM_HOME": str(self.home), "REMEM_EMBEDDING_MODEL": "hash", **(env or {})}
        self.args = args
        self.wait = wait
        self.proc: subprocess.Popen[bytes] | None = None
        self.started = 0.0
        self._out: Any = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def token(self) -> str:
        return (self.home / "token").read_text(encoding="utf-8").strip()

    def start(self, ready: bool = True) -> Daemon:
        self.started = time.monotonic()
        # the daemon's output goes to a file, not a pipe: nobody reads a pipe while it runs, and a
        # full pipe (64 KiB of request log lines) would block every request that logs
        import tempfile

        self._out = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([sys.executable, "-m", "remem", "serve", "--port", str(self.port), *self.args],
                                     env=self.env, stdout=self._out, stderr=subprocess.STDOUT)
        self.wait_health(ready=ready)
        return self

    def wait_health(self, ready: bool = True) -> dict[str, Any]:
        import httpx

        deadline = time.monotonic() + self.wait
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                out = self._read_out()
                raise RuntimeError(f"daemon exited with {self.proc.returncode}: {out[-2000:]}")
            try:
                r = httpx.get(self.url + "/health", timeout=1.0)
                if r.status_code == 200 and (not ready or r.json().get("status") == "ready"):
                    return dict(r.json())
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise TimeoutError(f"daemon on port {self.port} did not become healthy")

    def client(self, **kw: Any) -> Any:
        import httpx

        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {self.token}"}, timeout=30.0, **kw)

    def get(self, path: str, **kw: Any) -> Any:
        with self.client() as c:
            return c.get(path, **kw)

    def post(self, path: str, **kw: Any) -> Any:
        with self.client() as c:
            return c.post(path, **kw)

    def stop(self, timeout: float = 15.0) -> int | None:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(5)

    def output(self) -> str:
        if self.proc is None or self.proc.poll() is None:
            return ""
        return self._read_out()

    def _read_out(self) -> str:
        if self._out is None:
            return ""
        self._out.seek(0)
        return bytes(self._out.read()).decode(errors="replace")

    def __enter__(self) -> Daemon:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


_TOPICS = [
    ("shop", "How do we deploy the shop service to production?",
     "Run `make release`; it builds the image, runs migrations and rolls the pods one by one.",
     [("bash", "make release", "release v1.42.0 pushed; 3/3 pods ready")]),
    ("shop", "The checkout test fails with `KeyError: 'currency'` — fix it",
     "The fixture lacked a currency; I added `currency='EUR'` to the order factory and the test passes.",
     [("bash", "pytest tests/test_checkout.py", "KeyError: 'currency'"), ("edit", "tests/factories.py", "ok"),
      ("bash", "pytest tests/test_checkout.py", "1 passed")]),
    ("api", "Why is the /search endpoint slow under load?",
     "Postgres was doing a sequential scan; adding a GIN index on `documents.tsv` took p95 from 900 ms to 40 ms.",
     [("sql", "EXPLAIN ANALYZE SELECT …", "Seq Scan on documents"), ("sql", "CREATE INDEX … USING gin(tsv)", "CREATE INDEX")]),
    ("api", "Set up Redis caching for user sessions",
     "Sessions now live in Redis with a 24 h TTL; invalidation goes through pub/sub on logout.",
     [("edit", "app/session.py", "ok"), ("bash", "docker compose up -d redis", "started")]),
    ("infra", "用 uv 还是 pip 管理依赖？", "这个仓库统一用 uv：`uv sync` 安装，`uv add` 添加依赖，不要直接用 pip。",
     [("bash", "uv sync", "Resolved 84 packages")]),
    ("infra", "CI 上的 docker 构建为什么这么慢？",
     "缓存没有命中：Dockerfile 先 COPY 了整个目录。改成先复制 pyproject.toml 再安装依赖后，构建从 9 分钟降到 2 分钟。",
     [("read", "Dockerfile", "COPY . /app"), ("edit", "Dockerfile", "ok")]),
    ("web", "Add dark mode to the settings page",
     "Added a `prefers-color-scheme` media query and a toggle stored in localStorage.",
     [("edit", "web/styles.css", "ok"), ("edit", "web/settings.tsx", "ok")]),
    ("web", "The login form double-submits on slow networks",
     "Disabled the button while the request is in flight and made the handler idempotent.",
     [("edit", "web/login.tsx", "ok"), ("bash", "npm test -- login", "12 passed")]),
]
_AGENTS = ["claude-code", "codex", "cursor", "opencode"]


def sample_turns(n: int, *, owner: str = "default", seed: int = 7, now: float | None = None,
                 turns_per_session: int = 4) -> list[TurnIn]:
    """``n`` realistic turns spread over the last weeks (deterministic for a seed)."""
    rng = random.Random(seed)
    now = now or time.time()
    out = []
    for i in range(n):
        project, req, rep, acts = _TOPICS[i % len(_TOPICS)]
        agent = _AGENTS[(i // turns_per_session) % len(_AGENTS)]
        ts = now - (n - i) * 3600 * rng.uniform(0.2, 2.0)
        variant = "" if i < len(_TOPICS) else f" (#{i})"
        out.append(TurnIn(
            request=req + variant, reply=rep, owner=owner, agent=agent, project=project,
            session_id=f"s-{project}-{i // turns_per_session:05d}", started_at=ts, ended_at=ts + 40,
            actions=[ToolCall(name=a, input=inp, output=o, is_error=("Error" in o or "KeyError" in o))
                     for a, inp, o in acts],
            status="succeeded", model="model-x"))
    return out


def write_claude_history(user_home: Path, sessions: int = 50, turns: int = 3, project: str = "/home/dev/demo") -> Path:
    """Claude Code transcripts (``~/.claude/projects/*/*.jsonl``) for sync tests and demos."""
    import json

    root = Path(user_home) / ".claude" / "projects" / project.replace("/", "-")
    root.mkdir(parents=True, exist_ok=True)
    base = 1_750_000_000.0
    for s in range(sessions):
        sid = f"00000000-0000-4000-8000-{s:012d}"
        lines = []
        for t in range(turns):
            ts = base + s * 3600 + t * 60
            topic = _TOPICS[(s + t) % len(_TOPICS)]
            for role, text, dt in (("user", f"{topic[1]} [session {s} turn {t}]", 0), ("assistant", topic[2], 30)):
                uid = f"{sid}-{t}-{role}"
                rec: dict[str, Any] = {
                    "type": role, "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts + dt)),
                    "parentUuid": None, "isSidechain": False, "userType": "external", "cwd": project,
                    "sessionId": sid, "version": "2.1.0", "uuid": uid,
                    "message": {"role": role, "content": [{"type": "text", "text": text}]}}
                if role == "assistant":
                    rec["message"].update({"id": "msg_" + uid, "type": "message", "model": "claude-sonnet-4",
                                           "stop_reason": "end_turn"})
                    rec["requestId"] = "req_" + uid
                lines.append(json.dumps(rec))
        (root / f"{sid}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root

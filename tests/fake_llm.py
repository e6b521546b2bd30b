"""A loopback OpenAI-compatible chat-completions server for the optional-LLM tests (real HTTP, threads).

``FakeLLM()`` binds 127.0.0.1 on a free port and serves ``POST /v1/chat/completions``. Every request
is recorded (path, headers, raw body, the candidates it carried), which is what the tests read: how
many requests arrived, and what reached the server. What it answers is set per test:

- ``decide(candidate) -> dict``: the verdict entry for one candidate (default: keep);
- ``content``: a fixed reply body instead (malformed output, …), or ``reply(candidates) -> str``;
- ``status``: an HTTP status other than 200 (500, 429 … with ``retry_after`` seconds when set);
  ``delay``: seconds to sleep first (timeouts);
- ``usage``: ``total_tokens`` reported per request (None: no usage field, remem estimates).

Standard library only.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeLLM:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.decide: Callable[[dict[str, Any]], dict[str, Any]] = lambda c: {"id": c["id"], "verdict": "keep",
                                                                             "reason": "a standing rule"}
        self.content: str | None = None
        self.reply: Callable[[list[dict[str, Any]]], str] | None = None
        self.retry_after: float | None = None
        self.status = 200
        self.delay = 0.0
        self.usage: int | None = 100
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                cands = fake._record(self.path, dict(self.headers), raw)
                if fake.delay:
                    time.sleep(fake.delay)
                if fake.status != 200:
                    body = json.dumps({"error": {"message": "fake failure"}}).encode()
                    self.send_response(fake.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    if fake.retry_after is not None:
                        self.send_header("Retry-After", str(fake.retry_after))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                body = json.dumps(fake._answer(cands)).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass                                    # the client timed out and left

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def _record(self, path: str, headers: dict[str, str], raw: bytes) -> list[dict[str, Any]]:
        try:
            body = json.loads(raw)
            cands = json.loads(body["messages"][-1]["content"])["candidates"]
        except (ValueError, KeyError, IndexError, TypeError):
            body, cands = None, []
        with self._lock:
            self.requests.append({"path": path, "headers": headers, "raw": raw.decode("utf-8", "replace"),
                                  "body": body, "candidates": cands})
        return cands

    def _answer(self, cands: list[dict[str, Any]]) -> dict[str, Any]:
        content = (self.content if self.content is not None else self.reply(cands) if self.reply
                   else json.dumps({"verdicts": [self.decide(c) for c in cands]}))
        out: dict[str, Any] = {"id": "chatcmpl-fake", "object": "chat.completion",
                               "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                                            "finish_reason": "stop"}]}
        if self.usage is not None:
            out["usage"] = {"prompt_tokens": self.usage - 10, "completion_tokens": 10, "total_tokens": self.usage}
        return out

    def received(self) -> str:
        """Everything the server was sent (bodies, and headers but the Authorization one), as one text."""
        return "\n".join(r["raw"] + json.dumps({k: v for k, v in r["headers"].items()
                                                 if k.lower() != "authorization"}) for r in self.requests)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

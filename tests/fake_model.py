#!/usr/bin/env python3
"""A loopback stand-in for the model APIs the real agent CLIs call (tests/test_agents_e2e.py).

One deterministic model behind four wire protocols:

- Anthropic Messages      ``POST /v1/messages`` (Claude Code), ``/v1/messages/count_tokens``
- OpenAI Chat Completions ``POST /v1/chat/completions`` (OpenCode via ``@ai-sdk/openai-compatible``)
- OpenAI Responses        ``POST /v1/responses`` (Codex)
- Gemini                  ``POST /v1beta/models/M:generateContent | :streamGenerateContent | :countTokens``
                          (Gemini CLI; its JSON-mode side calls get JSON shaped by their schema)

Each accepts ``stream: true`` (server-sent events) or a plain JSON reply. Every request is appended to
``--log`` as one JSON line (method, path, headers with keys masked, body), which is what the tests read:
"did the recalled memory reach the model".

The model: when the newest input is a tool result it answers ``FAKE_DONE: …``; when the newest user text
holds ``CALL_TOOL[cmd]`` and the request offers a shell tool it calls that tool once with ``cmd``;
otherwise it answers ``FAKE_REPLY: …``. Every text answer lists which ``--markers`` occur anywhere in the
request body. Standard library only; binds 127.0.0.1 only.

    python tests/fake_model.py --port 18080 --log requests.jsonl --markers MARKER1,MARKER2
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

# the shell tool each agent offers, by the name it gives it
SHELL_TOOL_NAMES = ("Bash", "bash", "shell", "shell_command", "exec_command", "run_shell_command",
                    "local_shell", "exec", "terminal", "execute_command", "run_command")
TOOL_RESULT_ITEMS = {"function_call_output", "custom_tool_call_output", "local_shell_call_output",
                     "tool_result", "mcp_tool_call_output"}
SECRET_HEADERS = {"authorization", "x-api-key", "x-goog-api-key"}


@dataclass
class Seen:
    """What the model sees of a request: is the newest input a tool result, the newest user text, the tools."""
    tool_result: bool = False
    user_text: str = ""
    tools: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass
class Answer:
    text: str = ""
    tool: str = ""
    args: dict[str, Any] = field(default_factory=dict)


def flatten(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(flatten(c) for c in content)
    if isinstance(content, dict):
        for key in ("text", "input_text", "output_text", "content"):
            if isinstance(content.get(key), str | list):
                return flatten(content[key])
    return ""


# ---------------------------------------------------------------- reading a request, per protocol

def seen_anthropic(body: dict[str, Any]) -> Seen:
    # Claude Code appends role "system" messages after the user turn (hook output lands there)
    msgs = [m for m in body.get("messages") or [] if m.get("role") in ("user", "assistant")]
    last = msgs[-1] if msgs else {}
    content = last.get("content")
    is_result = isinstance(content, list) and any(isinstance(c, dict) and c.get("type") == "tool_result"
                                                  for c in content)
    tools = {t["name"]: t.get("input_schema") or {} for t in body.get("tools") or [] if t.get("name")}
    return Seen(is_result, flatten(content) if last.get("role") == "user" else "", tools)


def seen_chat(body: dict[str, Any]) -> Seen:
    msgs = body.get("messages") or []
    last = msgs[-1] if msgs else {}
    tools = {}
    for t in body.get("tools") or []:
        fn = t.get("function") or t
        if fn.get("name"):
            tools[fn["name"]] = fn.get("parameters") or {}
    return Seen(last.get("role") == "tool", flatten(last.get("content")) if last.get("role") == "user" else "",
                tools)


def seen_responses(body: dict[str, Any]) -> Seen:
    tools: dict[str, dict[str, Any]] = {}
    for t in body.get("tools") or []:
        if t.get("type") == "function" and (t.get("name") or (t.get("function") or {}).get("name")):
            fn = t.get("function") or t
            tools[fn["name"]] = fn.get("parameters") or {}
        elif t.get("type") == "local_shell":
            tools["local_shell"] = {}
    items = body.get("input")
    if isinstance(items, str):
        return Seen(False, items, tools)
    # Codex puts hook context in role "developer" items after the user message
    items = [i for i in items or [] if i.get("role") not in ("developer", "system")]
    last = items[-1] if items else {}
    text = flatten(last.get("content")) if last.get("role") == "user" else ""
    return Seen(last.get("type") in TOOL_RESULT_ITEMS, text, tools)


def seen_gemini(body: dict[str, Any]) -> Seen:
    contents = body.get("contents") or []
    last = contents[-1] if contents else {}
    parts = [p for p in last.get("parts") or [] if isinstance(p, dict)]
    tools = {}
    for t in body.get("tools") or []:
        for fd in t.get("functionDeclarations") or t.get("function_declarations") or []:
            if fd.get("name"):
                tools[fd["name"]] = fd.get("parameters") or fd.get("parametersJsonSchema") or {}
    text = "\n".join(p["text"] for p in parts if "text" in p) if last.get("role", "user") == "user" else ""
    return Seen(any("functionResponse" in p for p in parts), text, tools)


# ---------------------------------------------------------------- the model

class Model:
    def __init__(self, markers: list[str], reply: str, trigger: str, default_command: str) -> None:
        self.markers, self.reply, self.trigger, self.default_command = markers, reply, trigger, default_command

    def answer(self, seen: Seen, raw: str) -> Answer:
        found = [m for m in self.markers if m in raw]
        tag = "markers_seen=" + (",".join(found) or "none")
        if seen.tool_result:
            return Answer(text=f"FAKE_DONE: tool result received. {tag}")
        if self.trigger and self.trigger in seen.user_text:
            m = re.search(re.escape(self.trigger) + r"\[(.*?)\]", seen.user_text)
            command = m.group(1) if m else self.default_command
            for name in SHELL_TOOL_NAMES:
                if name in seen.tools:
                    return Answer(tool=name, args=shell_args(name, seen.tools[name], command))
        return Answer(text=f"FAKE_REPLY: {self.reply} [{tag}]")


def shell_args(name: str, schema: dict[str, Any], command: str) -> dict[str, Any]:
    """Arguments for the agent's shell tool that satisfy its schema."""
    if name == "local_shell":
        return {"command": ["bash", "-lc", command]}
    props = schema.get("properties") or {}
    key = "command" if "command" in props or not props else ("cmd" if "cmd" in props else next(iter(props)))
    args: dict[str, Any] = {key: ["bash", "-lc", command] if (props.get(key) or {}).get("type") == "array"
                            else command}
    for req in schema.get("required") or []:
        kind = (props.get(req) or {}).get("type")
        if req in args:
            continue
        if kind == "string":
            args[req] = "run a command for the remem test" if "desc" in req else "."
        elif kind in ("integer", "number"):
            args[req] = 10_000
        elif kind == "boolean":
            args[req] = False
    if "description" in props:
        args.setdefault("description", "remem test command")
    return args


def schema_value(schema: Any, key: str = "") -> Any:
    """A small value that fits a JSON / OpenAPI schema (Gemini CLI's router and next-speaker checks)."""
    if not isinstance(schema, dict):
        return None
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type") or ("object" if "properties" in schema else "string")
    kind = str(kind[0] if isinstance(kind, list) else kind).lower()
    if kind == "object":
        return {k: schema_value(v, k) for k, v in (schema.get("properties") or {}).items()}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)
    if kind == "boolean":
        return False
    return "user" if key == "next_speaker" else "fake"


def new_id(prefix: str) -> str:
    return prefix + uuid.uuid4().hex[:24]


# ---------------------------------------------------------------- HTTP

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    model: Model
    log_path: str | None = None
    lock = threading.Lock()

    def log_message(self, format: str, *args: Any) -> None:   # quiet; the request log is the record
        pass

    # -- plumbing
    def _body(self) -> bytes:
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        if raw and self.headers.get("Content-Encoding") == "gzip":
            raw = gzip.decompress(raw)
        elif raw and self.headers.get("Content-Encoding") == "zstd":
            try:
                import zstandard
                raw = zstandard.ZstdDecompressor().decompress(raw, max_output_size=64 << 20)
            except Exception:
                pass
        return raw

    def _record(self, method: str, raw: bytes) -> dict[str, Any]:
        body: Any = None
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                body = {"_raw": raw.decode("utf-8", "replace")[:20_000]}
        entry = {"ts": time.time(), "method": method, "path": urlparse(self.path).path,
                 "query": urlparse(self.path).query, "body": body,
                 "headers": {k: "<masked>" if k.lower() in SECRET_HEADERS else v for k, v in self.headers.items()}}
        if self.log_path:
            with self.lock, open(self.log_path, "a", encoding="utf-8") as f:
                f.write(json.dumps(entry) + "\n")
        return body if isinstance(body, dict) else {}

    def _json(self, obj: Any, code: int = 200) -> None:
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", new_id("req_"))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def _event(self, data: Any, event: str | None = None) -> None:
        head = f"event: {event}\n" if event else ""
        payload = data if isinstance(data, str) else json.dumps(data)
        self.wfile.write(f"{head}data: {payload}\n\n".encode())
        self.wfile.flush()

    # -- routes
    def do_HEAD(self) -> None:
        self._record("HEAD", b"")
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        self._record("GET", b"")
        path = urlparse(self.path).path.rstrip("/")
        if path.startswith("/v1beta"):
            self._json({"models": [{"name": "models/gemini-2.5-pro", "supportedGenerationMethods": ["generateContent"]}]})
        elif path.endswith("/models"):
            self._json({"object": "list", "data": [{"id": m, "object": "model", "created": 0, "owned_by": "fake"}
                                                   for m in ("fake-model", "gpt-5.1-codex", "claude-sonnet-4-5")]})
        else:
            self._json({"ok": True})

    def do_POST(self) -> None:
        raw = self._body()
        body = self._record("POST", raw)
        url = urlparse(self.path)
        text = raw.decode("utf-8", "replace")
        try:
            if url.path.endswith("/messages/count_tokens"):
                return self._json({"input_tokens": max(1, len(text) // 4)})
            if url.path.endswith("/messages"):
                return self.anthropic(body, self.model.answer(seen_anthropic(body), text))
            if url.path.endswith("/chat/completions"):
                return self.chat(body, self.model.answer(seen_chat(body), text))
            if url.path.endswith("/responses"):
                return self.openai_responses(body, self.model.answer(seen_responses(body), text))
            m = re.search(r"/models/([^/:]+):(\w+)$", url.path)
            if m:
                return self.gemini(m.group(1), m.group(2), parse_qs(url.query), body, text)
        except (BrokenPipeError, ConnectionResetError):
            return
        self._json({"error": {"type": "not_found", "message": f"fake model: no route {url.path}"}}, 404)

    # -- Anthropic Messages
    def anthropic(self, body: dict[str, Any], a: Answer) -> None:
        if a.tool:
            blocks: list[dict[str, Any]] = [{"type": "text", "text": "Running the tool now."},
                                            {"type": "tool_use", "id": new_id("toolu_"), "name": a.tool,
                                             "input": a.args}]
        else:
            blocks = [{"type": "text", "text": a.text}]
        stop = "tool_use" if a.tool else "end_turn"
        usage = {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0,
                 "cache_read_input_tokens": 0}
        msg = {"id": new_id("msg_"), "type": "message", "role": "assistant", "model": body.get("model", "fake"),
               "stop_sequence": None, "usage": usage}
        if not body.get("stream"):
            return self._json({**msg, "content": blocks, "stop_reason": stop})
        self._stream()
        self._event({"type": "message_start", "message": {**msg, "content": [], "stop_reason": None}}, "message_start")
        for i, b in enumerate(blocks):
            if b["type"] == "text":
                start, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": b["text"]}
            else:
                start = {"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(b["input"])}
            self._event({"type": "content_block_start", "index": i, "content_block": start}, "content_block_start")
            self._event({"type": "content_block_delta", "index": i, "delta": delta}, "content_block_delta")
            self._event({"type": "content_block_stop", "index": i}, "content_block_stop")
        self._event({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                     "usage": {"output_tokens": 5}}, "message_delta")
        self._event({"type": "message_stop"}, "message_stop")

    # -- OpenAI Chat Completions
    def chat(self, body: dict[str, Any], a: Answer) -> None:
        head = {"id": new_id("chatcmpl-"), "created": int(time.time()), "model": body.get("model", "fake-model")}
        call = {"id": new_id("call_"), "type": "function", "function": {"name": a.tool, "arguments": json.dumps(a.args)}}
        finish = "tool_calls" if a.tool else "stop"
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        if not body.get("stream"):
            message = ({"role": "assistant", "content": None, "tool_calls": [call]} if a.tool
                       else {"role": "assistant", "content": a.text})
            return self._json({**head, "object": "chat.completion", "usage": usage,
                               "choices": [{"index": 0, "message": message, "finish_reason": finish}]})
        self._stream()

        def chunk(delta: dict[str, Any], reason: str | None = None) -> None:
            self._event({**head, "object": "chat.completion.chunk",
                         "choices": [{"index": 0, "delta": delta, "finish_reason": reason}]})
        chunk({"role": "assistant", "content": ""})
        if a.tool:
            chunk({"tool_calls": [{"index": 0, "id": call["id"], "type": "function",
                                   "function": {"name": a.tool, "arguments": ""}}]})
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": call["function"]["arguments"]}}]})
        else:
            chunk({"content": a.text})
        chunk({}, finish)
        if (body.get("stream_options") or {}).get("include_usage"):
            self._event({**head, "object": "chat.completion.chunk", "choices": [], "usage": usage})
        self._event("[DONE]")

    # -- OpenAI Responses (not named "responses": BaseHTTPRequestHandler.responses is a table it uses)
    def openai_responses(self, body: dict[str, Any], a: Answer) -> None:
        if a.tool == "local_shell":
            items = [{"type": "local_shell_call", "id": new_id("lsh_"), "call_id": new_id("call_"),
                      "status": "completed", "action": {"type": "exec", "command": a.args["command"], "env": {}}}]
        elif a.tool:
            items = [{"type": "function_call", "id": new_id("fc_"), "call_id": new_id("call_"),
                      "status": "completed", "name": a.tool, "arguments": json.dumps(a.args)}]
        else:
            items = [{"type": "message", "id": new_id("msg_"), "status": "completed", "role": "assistant",
                      "content": [{"type": "output_text", "text": a.text, "annotations": []}]}]
        resp = {"id": new_id("resp_"), "object": "response", "created_at": int(time.time()), "status": "completed",
                "model": body.get("model", "fake-model"), "output": items, "error": None, "incomplete_details": None,
                "usage": {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
                          "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}}
        if not body.get("stream"):
            return self._json(resp)
        self._stream()
        seq = iter(range(1, 1_000_000))

        def ev(kind: str, **kw: Any) -> None:
            self._event({"type": kind, "sequence_number": next(seq), **kw}, kind)
        pending = {**resp, "status": "in_progress", "output": []}
        ev("response.created", response=pending)
        ev("response.in_progress", response=pending)
        for i, it in enumerate(items):
            if it["type"] == "message":
                part = it["content"][0]
                ev("response.output_item.added", output_index=i, item={**it, "status": "in_progress", "content": []})
                ev("response.content_part.added", output_index=i, item_id=it["id"], content_index=0,
                   part={**part, "text": ""})
                ev("response.output_text.delta", output_index=i, item_id=it["id"], content_index=0, delta=part["text"])
                ev("response.output_text.done", output_index=i, item_id=it["id"], content_index=0, text=part["text"])
                ev("response.content_part.done", output_index=i, item_id=it["id"], content_index=0, part=part)
            else:
                ev("response.output_item.added", output_index=i, item={**it, "status": "in_progress"})
                if it["type"] == "function_call":
                    ev("response.function_call_arguments.delta", output_index=i, item_id=it["id"],
                       delta=it["arguments"])
                    ev("response.function_call_arguments.done", output_index=i, item_id=it["id"],
                       arguments=it["arguments"])
            ev("response.output_item.done", output_index=i, item=it)
        ev("response.completed", response=resp)    # Codex waits for this one

    # -- Gemini
    def gemini(self, model: str, method: str, query: dict[str, list[str]], body: dict[str, Any], text: str) -> None:
        if method == "countTokens":
            return self._json({"totalTokens": max(1, len(text) // 4)})
        if method == "embedContent":
            return self._json({"embedding": {"values": [0.0] * 8}})
        if method == "batchEmbedContents":
            return self._json({"embeddings": [{"values": [0.0] * 8} for _ in body.get("requests") or []]})
        if method not in ("generateContent", "streamGenerateContent"):
            return self._json({"error": {"code": 404, "message": f"fake model: no method {method}"}}, 404)
        a = self.model.answer(seen_gemini(body), text)
        config = body.get("generationConfig") or {}
        schema = config.get("responseJsonSchema") or config.get("responseSchema")
        if a.tool:
            parts: list[dict[str, Any]] = [{"functionCall": {"name": a.tool, "args": a.args}}]
        elif schema or config.get("responseMimeType") == "application/json":
            # side calls (model router, next speaker): plain text makes the CLI retry for a minute
            parts = [{"text": json.dumps(schema_value(schema or {"type": "object"}))}]
        else:
            parts = [{"text": a.text}]
        resp = {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
                "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
                "modelVersion": model, "responseId": new_id("gr_")}
        if method == "generateContent":
            return self._json(resp)
        if (query.get("alt") or [""])[0] == "sse":
            self._stream()
            return self._event(resp)
        return self._json([resp])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="loopback fake model server for the agent end-to-end tests")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--log", default=None, help="append every request here, one JSON line each")
    ap.add_argument("--markers", default="", help="comma-separated strings to report when a request holds them")
    ap.add_argument("--reply", default="hello from the fake model")
    ap.add_argument("--trigger", default="CALL_TOOL")
    ap.add_argument("--tool-command", default="echo remem-tool-ok")
    a = ap.parse_args(argv)
    Handler.model = Model([m for m in a.markers.split(",") if m], a.reply, a.trigger, a.tool_command)
    Handler.log_path = a.log
    server = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    server.daemon_threads = True
    print(f"fake model on http://127.0.0.1:{a.port}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Codex CLI: ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`` (FORMATS.md §2).

One unit per rollout file (``sessions/`` and ``archived_sessions/``). Records are
``{timestamp, type, payload}``; the session id comes from ``session_meta`` (else from the
uuid at the end of the filename, else the file stem), the model and cwd from the latest
``turn_context``.

Codex writes most texts twice: ``response_item`` messages and ``event_msg`` echoes. Text
and tools come from ``response_item``; ``event_msg/user_message`` is the real-prompt signal:
injected context (developer/system roles, ``<environment_context>``, AGENTS.md, permission
instructions) only ever appears as a ``response_item`` and is skipped, and once a file has
shown an ``event_msg/user_message`` every ``response_item`` user message is treated as its
echo. Echoes are matched by text in both directions, so files that lack either family
still import. ``function_call``/``custom_tool_call`` pair with their outputs by
``call_id``; ``turn_aborted`` marks the turn cancelled and ``event_msg/error`` failed.
``compacted``, reasoning, token counts and other bookkeeping (``world_state``,
``token_usage_record``…) are ignored; a record type remem does not know is counted as
skipped, never as a failure;
``thread_rolled_back`` is not honoured (rolled-back turns stay imported). Only a file's
first ``session_meta`` names it: later ones are copies carried in by a fork.

Sub-agents (``spawn_agent``) write rollouts of their own whose ``session_meta.source`` is
``{"subagent": {"thread_spawn": {"parent_thread_id": …}}}``. When the parent's rollout is
present, the sub-agent's file (and its own sub-agents', at any depth) is a part of the
parent's unit: its messages are merged into the parent's stream by time, carry the parent's
session id (their own in ``extra["subsession_id"]``) and are ``sidechain``, so turn assembly
folds them into the parent turn that spawned them. A forked sub-agent starts with a copy of
the parent's history; copied tool calls and outputs (a ``call_id`` the parent already has)
are dropped, the copied prompts and replies are sidechain and never become turns. A
sub-agent whose parent rollout is gone is read on its own, as its own session, with the
parent recorded in ``extra["parent_session_id"]``. Other sub-agent kinds (review, compact)
name no parent and stay sessions of their own.
"""

from __future__ import annotations

import heapq
import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from remem.model import Message, ToolCall

from .base import (
    ParseStats,
    Unit,
    as_dict,
    as_text,
    content_text,
    env_path,
    existing_dirs,
    file_unit,
    home_dir,
    iter_jsonl,
    parse_ts,
    walk_files,
)

AGENT = "codex"
_UUID_TAIL = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$", re.I)
_EXIT_RE = re.compile(r"^(?:Exit code|Process exited with code):?\s*(-?\d+)", re.M)
_INJECTED_PREFIXES = (
    "<environment_context>", "# AGENTS.md instructions", "<user_instructions>",
    "<permissions instructions>", "<INSTRUCTIONS>", "<user_shell_command>", "<turn_aborted>",
    "<subagent_notification>", "<developer_instructions>",
)
_TOOL_CALLS = frozenset({"function_call", "custom_tool_call", "local_shell_call", "web_search_call"})
_TOOL_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})
_RESPONSE_TYPES = frozenset({"message", "reasoning", *_TOOL_CALLS, *_TOOL_OUTPUTS})
#: record types that carry no conversation: skipped silently (a fork's pointer to its parent rollout,
#: and Codex 0.171's state, token, tool-list, id and risk bookkeeping)
_IGNORED_TYPES = frozenset({"fork_reference", "world_state", "token_usage_record", "dynamic_tools_updated",
                            "id_allocation", "security_risk_score", "inter_agent_communication_metadata"})
_HEAD_PEEK = 4096                                # session_meta.source comes before the long fields
_HEAD_LIMIT = 1 << 20                            # bytes of the first line read to find the parent
_PLAIN_SOURCE = re.compile(rb'"source"\s*:\s*"')


def session_id_from_name(path: Path) -> str:
    """The uuid at the end of a rollout filename, else the file stem."""
    m = _UUID_TAIL.search(path.stem)
    return m.group(1) if m else path.stem


class CodexSource:
    agent = AGENT
    format = "codex-rollout"

    def discover(self, env: Mapping[str, str]) -> list[Path]:
        return existing_dirs([env_path(env, "CODEX_HOME") or home_dir(env) / ".codex"])

    def list_units(self, root: Path, stats: ParseStats | None = None) -> list[Unit]:
        files: list[Path] = []
        for sub in ("sessions", "archived_sessions"):
            files.extend(walk_files(root / sub, ".jsonl", stats))
        heads = {p: rollout_head(p) for p in files}
        units: list[Unit] = []
        for top, members in fold_groups({str(p): h for p, h in heads.items()}).items():
            path = Path(top)
            parts = [Path(m) for m in members]
            children = {m: heads[Path(m)][0] for m in members}
            meta: dict[str, Any] = {}
            if parts:
                meta["children"] = children
                # the files' own units from before they were folded in (see sync: their turns go)
                meta["absorbs"] = tuple((f"{AGENT}:{m}", sid) for m, sid in children.items())
            if heads[path][1]:
                meta["orphan"] = True     # a sub-agent whose parent rollout is gone
            u = file_unit(AGENT, path, session_id=heads[path][0], parts=parts, meta=meta)
            if u is not None:
                units.append(u)
        return sorted(units, key=lambda u: u.key)

    def read(self, unit: Unit, stats: ParseStats | None = None) -> Iterator[Message]:
        stats = stats if stats is not None else ParseStats()
        top = _Reader(unit.session_id or session_id_from_name(unit.path))
        if not unit.parts:
            for m in top.run(unit.path, stats):
                stats.messages += 1
                yield m
            return
        children: Mapping[str, str] = unit.meta.get("children") or {}
        streams = [top.run(unit.path, stats)]
        streams += [_sidechain(top, _Reader(children.get(str(p)) or session_id_from_name(p)).run(p, stats))
                    for p in unit.parts]
        owner: dict[str, str] = {}     # call id → the (sub-)session it belongs to
        for m in heapq.merge(*streams, key=lambda m: m.ts or 0.0):
            if m.sidechain and not _drop_copies(m, owner):
                stats.ignore("forked copy")
                continue
            mine = m.extra.get("subsession_id", "")
            for call in m.tool_calls:
                owner.setdefault(call.call_id, mine)
            for call_id in m.tool_results:
                owner.setdefault(call_id, mine)
            stats.messages += 1
            yield m


def rollout_head(path: Path) -> tuple[str, str]:
    """``(session id, parent session id)`` of a rollout from its first line ("" when not a sub-agent).

    Listing reads this for every rollout, so it stays cheap: when the filename carries the
    session id, a first line whose ``source`` is a plain string (``"cli"``, ``"vscode"``…) is
    settled from its first 4 KiB; only a line that may name a parent is read whole and parsed.
    """
    sid = session_id_from_name(path)
    named = bool(_UUID_TAIL.search(path.stem))
    try:
        with open(path, "rb") as f:
            line = f.read(_HEAD_PEEK)
            if named and b'"subagent"' not in line and (b"\n" in line or _PLAIN_SOURCE.search(line)):
                return sid, ""
            f.seek(0)
            line = f.readline(_HEAD_LIMIT)
    except OSError:
        return sid, ""
    if named and b'"subagent"' not in line:
        return sid, ""
    try:
        rec = json.loads(line)
    except (ValueError, RecursionError):
        return sid, ""
    if not isinstance(rec, dict):
        return sid, ""
    if rec.get("type") == "session_meta":
        meta = as_dict(rec.get("payload"))
    elif "type" not in rec and rec.get("id") and "timestamp" in rec:
        meta = rec                     # old rollouts: a bare first line
    else:
        return sid, ""
    return str(meta.get("id") or sid), spawn_parent(meta.get("source"))


def spawn_parent(source: Any) -> str:
    """The parent thread id of a ``session_meta.source`` that is a spawned sub-agent, else ""."""
    spawn = as_dict(as_dict(source).get("subagent"))
    spawn = as_dict(spawn.get("thread_spawn")) or spawn
    return str(spawn.get("parent_thread_id") or "")


def fold_groups(heads: Mapping[str, tuple[str, str]]) -> dict[str, list[str]]:
    """Rollout files grouped under the file each folds into (pure; table-tested).

    ``heads`` maps a file to its ``(session id, parent session id)``. A sub-agent file joins
    its parent's group, a sub-agent's sub-agent the group of the topmost ancestor present; a
    file whose parent is absent heads a group of its own, and so does a file whose ancestry
    loops (never real, but then no file is read twice). Returns top file → its sub-agent files.
    """
    by_sid: dict[str, str] = {}
    for f, (sid, _parent) in sorted(heads.items()):
        by_sid.setdefault(sid, f)
    groups: dict[str, list[str]] = {}
    for f in sorted(heads):
        cur, seen = f, {f}
        while (parent := by_sid.get(heads[cur][1]) if heads[cur][1] else None) is not None:
            if parent in seen:
                cur = f
                break
            cur = parent
            seen.add(cur)
        groups.setdefault(cur, [])
        if cur != f:
            groups[cur].append(f)
    return groups


def _sidechain(top: _Reader, messages: Iterator[Message]) -> Iterator[Message]:
    """A sub-agent's messages as sidechain messages of the parent session read by ``top``."""
    for m in messages:
        m.extra["subsession_id"] = m.session_id
        m.session_id = top.session_id
        m.sidechain = True
        yield m


def _drop_copies(m: Message, owner: Mapping[str, str]) -> bool:
    """Drop tool calls and outputs a forked sub-agent copied from another session; False when
    nothing of a tool message is left."""
    mine = m.extra.get("subsession_id", "")
    if not m.tool_calls and not m.tool_results:
        return True
    m.tool_calls = [c for c in m.tool_calls if owner.get(c.call_id, mine) == mine or not c.call_id]
    m.tool_results = {k: v for k, v in m.tool_results.items() if owner.get(k, mine) == mine or not k}
    return bool(m.tool_calls or m.tool_results or m.text)


class _Reader:
    """The per-file state of a rollout replay (session id, cwd, model, echo matching)."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.cwd = ""
        self.model = ""
        self.parent = ""
        self.named = False             # the file's own session_meta has been read
        self.last_ts: float | None = None
        self.event_prompts = False     # an event_msg/user_message has been seen
        # texts emitted since the last prompt, by family, to drop the other family's echo
        self.echo: dict[str, dict[str, list[str]]] = {
            "user": {"response": [], "event": []}, "assistant": {"response": [], "event": []}}

    def run(self, path: Path, stats: ParseStats) -> Iterator[Message]:
        for offset, rec in iter_jsonl(path, stats):
            where = f"{path}@{offset}"
            rtype = rec.get("type")
            payload = rec.get("payload")
            if rtype in _RESPONSE_TYPES and payload is None:   # old rollouts: bare response items
                rtype, payload = "response_item", rec
            if not isinstance(payload, dict):
                if rtype is None and rec.get("id") and "timestamp" in rec:    # old first line
                    rtype, payload = "session_meta", rec
                elif rec.get("record_type"):
                    stats.ignore("state record")
                    continue
                elif rtype in _IGNORED_TYPES:
                    stats.ignore(str(rtype))
                    continue
                else:
                    stats.unknown_type(rtype)
                    continue
            ts = parse_ts(rec.get("timestamp"))
            if rtype == "session_meta":
                self._meta(payload)
                self.last_ts = ts or parse_ts(payload.get("timestamp")) or self.last_ts
                continue
            if rtype == "turn_context":
                self.cwd = str(payload.get("cwd") or self.cwd)
                self.model = str(payload.get("model") or self.model)
                continue
            if rtype == "compacted":
                stats.ignore("compacted")
                continue
            if rtype in _IGNORED_TYPES:
                stats.ignore(str(rtype))
                continue
            if rtype not in ("response_item", "event_msg"):
                stats.unknown_type(rtype)
                continue
            if ts is None:
                if rec is payload and self.last_ts is not None:
                    ts = self.last_ts          # old bare items carry no timestamp of their own
                else:
                    stats.error("missing timestamp", where)
                    continue
            self.last_ts = ts
            m = self._response(payload, stats) if rtype == "response_item" else self._event(payload, stats)
            if m is not None:
                m.source_id = f"{self.session_id}@{offset}"
                m.session_id = self.session_id
                m.ts = ts
                m.cwd = self.cwd
                if m.role != "user":
                    m.model = self.model
                if self.parent:
                    m.extra["parent_session_id"] = self.parent
                yield m

    def _meta(self, p: dict[str, Any]) -> None:
        if self.named:          # a fork copies the source's session_meta along with its history
            return
        self.named = True
        self.session_id = str(p.get("id") or self.session_id)
        self.cwd = str(p.get("cwd") or self.cwd)
        self.parent = spawn_parent(p.get("source"))

    # -- echo matching

    def _is_echo(self, role: str, family: str, text: str) -> bool:
        other = self.echo[role]["event" if family == "response" else "response"]
        if text in other:
            other.remove(text)
            return True
        self.echo[role][family].append(text)
        return False

    def _prompt(self, family: str, text: str) -> bool:
        """Record a real prompt; False when it is the other family's echo of the last one."""
        if self._is_echo("user", family, text):
            return False
        mine = self.echo["user"][family]
        self.echo = {"user": {"response": [], "event": []}, "assistant": {"response": [], "event": []}}
        self.echo["user"][family] = mine[-1:]
        return True

    # -- records

    def _response(self, p: dict[str, Any], stats: ParseStats) -> Message | None:
        ptype = p.get("type")
        if ptype == "message":
            role = p.get("role")
            images: list[str] = []
            text = content_text(p.get("content"), images=images).strip()
            if role == "user":
                if not text and not images:
                    stats.ignore("empty user item")
                    return None
                if text.startswith(_INJECTED_PREFIXES):
                    stats.ignore("injected context")
                    return None
                if self.event_prompts:
                    stats.ignore("prompt echo")
                    return None
                if not self._prompt("response", text):
                    stats.ignore("prompt echo")
                    return None
                full = "\n".join([text, *images]) if images else text
                return Message("", "", "user", text=full, real_user=bool(text))
            if role == "assistant":
                if not text or self._is_echo("assistant", "response", text):
                    stats.ignore("assistant echo" if text else "empty assistant item")
                    return None
                return Message("", "", "assistant", text=text)
            stats.ignore(f"{role} message")
            return None
        if ptype in _TOOL_CALLS:
            return _tool_call(p)
        if ptype in _TOOL_OUTPUTS:
            out, err = _tool_output(p.get("output"))
            return Message("", "", "tool", tool_results={str(p.get("call_id") or ""): (out, err)})
        stats.ignore(f"response_item {str(ptype)[:40]}")
        return None

    def _event(self, p: dict[str, Any], stats: ParseStats) -> Message | None:
        etype = p.get("type")
        if etype == "user_message":
            self.event_prompts = True
            text = str(p.get("message") or "").strip()
            if not text or text.startswith(_INJECTED_PREFIXES):
                stats.ignore("injected context" if text else "empty prompt")
                return None
            if not self._prompt("event", text):
                stats.ignore("prompt echo")
                return None
            images = p.get("images") if isinstance(p.get("images"), list) else []
            extra = "\n".join(f"[image: {_media(str(u))}]" for u in images) if images else ""
            return Message("", "", "user", text=f"{text}\n{extra}" if extra else text, real_user=True)
        if etype == "agent_message":
            text = str(p.get("message") or "").strip()
            if not text or self._is_echo("assistant", "event", text):
                stats.ignore("assistant echo" if text else "empty assistant event")
                return None
            return Message("", "", "assistant", text=text)
        if etype == "turn_aborted":
            return Message("", "", "system", status="cancelled", extra={"kind": "turn_aborted",
                                                                       "reason": str(p.get("reason") or "")})
        if etype == "error":
            return Message("", "", "system", status="failed", text=str(p.get("message") or ""),
                           extra={"kind": "error"})
        stats.ignore(f"event {str(etype)[:40]}")
        return None


def _media(url: str) -> str:
    return url[5:].split(";", 1)[0] if url.startswith("data:") else "url"


def _tool_call(p: dict[str, Any]) -> Message:
    ptype = p.get("type")
    call_id = str(p.get("call_id") or p.get("id") or "")
    if ptype == "function_call":
        call = ToolCall(name=str(p.get("name") or ""), input=as_text(p.get("arguments")), call_id=call_id)
    elif ptype == "custom_tool_call":
        call = ToolCall(name=str(p.get("name") or ""), input=as_text(p.get("input")), call_id=call_id)
    elif ptype == "local_shell_call":
        call = ToolCall(name="local_shell", input=as_text(p.get("action")), call_id=call_id)
    else:
        call = ToolCall(name="web_search", input=as_text(p.get("action")), call_id=call_id)
    status = str(p.get("status") or "")
    if status in ("failed", "incomplete"):
        call.is_error = True
    return Message("", "", "tool", tool_calls=[call])


def _tool_output(raw: Any) -> tuple[str, bool]:
    """Output text and error flag of a function/custom tool output (string, JSON or parts)."""
    if isinstance(raw, list):
        return content_text(raw), False
    if isinstance(raw, dict):
        return _tool_output(json.dumps(raw))
    text = str(raw or "")
    if text.startswith("{"):
        try:
            obj = json.loads(text)
        except (ValueError, RecursionError):
            obj = None
        if isinstance(obj, dict) and "output" in obj:
            meta = as_dict(obj.get("metadata"))
            code = meta.get("exit_code")
            out = as_text(obj.get("output"))
            return out, (isinstance(code, int) and code != 0) or bool(obj.get("success") is False)
    m = _EXIT_RE.search(text[:200])
    return text, bool(m and int(m.group(1)) != 0)


SOURCE = CodexSource()
